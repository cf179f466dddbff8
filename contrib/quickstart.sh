#!/usr/bin/env bash
# The README's quick start: installs what the build needs
# (contrib/deps.sh build), builds the release binary and runs `bbrkit lab`
# (as root: through sudo unless already root). Arguments go to `bbrkit lab`:
#
#   contrib/quickstart.sh                      # the seed experiment
#   contrib/quickstart.sh --runs 1 --duration 2s --loss 2%
#
# Each step is printed before it runs. With BBRKIT_LOCK set, the lab runs
# under `flock $BBRKIT_LOCK` (machines where other lab runs must not overlap).
set -euo pipefail
cd "$(dirname "$0")/.."

step() {
	echo "+ $*" >&2
	"$@"
}

command -v cargo >/dev/null || {
	echo "bbrkit: no cargo here: install the Rust toolchain (https://rustup.rs), then run this again" >&2
	exit 2
}
step contrib/deps.sh build
step cargo build --release --locked -p bbrkit
lab=(target/release/bbrkit lab "$@")
[ "$(id -u)" = 0 ] || lab=(sudo "${lab[@]}")
[ -z "${BBRKIT_LOCK:-}" ] || lab=(flock "$BBRKIT_LOCK" "${lab[@]}")
echo "+ ${lab[*]}" >&2
exec "${lab[@]}"
