#!/usr/bin/env bash
# The fleet checks of .ci/run (docs/fleet.md): builds the Debian package and
# runs the three end-to-end tests, timing each part. Root only. The tests
# that create network namespaces or run enable/rollback take the global lock
# ($BBRKIT_LOCK, default /tmp/bbrkit-root.lock).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=contrib/tests
CARGO_DEB_VERSION=3.8.0
log=target/fleet.log
times=()
mkdir -p target && : >"$log"
step() { # step NAME COMMAND...: runs it (output also to $log), records its duration
	local name=$1 t=$SECONDS
	shift
	"$@" 2>&1 | tee -a "$log"
	times+=("$name $((SECONDS - t))s")
}

lock=${BBRKIT_LOCK:-/tmp/bbrkit-root.lock}
# cargo-deb, built once into the CI cache (a stable path a CI system can keep
# between runs) and reused.
cargo_deb=${BBRKIT_CI_CACHE:-$HOME/.cache/bbrkit-ci}/cargo-deb-$CARGO_DEB_VERSION
export PATH=$cargo_deb/bin:$PATH
install_cargo_deb() {
	if [ "$(cargo deb --version 2>/dev/null)" != "cargo-deb $CARGO_DEB_VERSION" ]; then
		cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION" --root "$cargo_deb"
	fi
}
step cargo-deb install_cargo_deb
t=$SECONDS
deb=$(bash contrib/deb/build.sh)
times+=("package $((SECONDS - t))s")
step deb bash "$here/deb.sh" "$deb"
step ansible flock "$lock" bash "$here/ansible.sh" "$deb"
step prometheus flock "$lock" bash "$here/prometheus.sh" target/release/bbrkit
echo "fleet times: ${times[*]}"
echo "fleet: $(grep -c '^ok ' "$log") passed, 0 failed"
