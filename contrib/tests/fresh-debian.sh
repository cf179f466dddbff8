#!/usr/bin/env bash
# The README's two commands on a fresh Debian: debootstraps a minimal root
# filesystem (--variant=minbase: no compiler, no libelf1), adds only this
# machine's Rust toolchain (its rustup, settings and the active toolchain,
# bind-mounted read-only), clones the committed HEAD of this checkout into
# it and, chrooted there as root, runs the first ```sh block under
# "## Quick start" (build + `bbrkit lab`) and the next ```sh block (the
# tests). Between the two it shows that the release binary is
# self-contained: `ldd` names no libelf or libz and, with no libelf1
# installed, `bbrkit check` runs.
#
#   contrib/tests/fresh-debian.sh [SUITE] [-- LAB ARGUMENTS]   (SUITE: bookworm)
#
# Root only; needs debootstrap and git. Everything happens under a fresh
# directory in $TMPDIR (removed at the end unless BBRKIT_KEEP=1) and in a
# private mount namespace, so no mount outlives the script. The host's proxy
# and CA settings (SSL_CERT_FILE, PIP_CERT, *_proxy, the certificates in
# /usr/local/share/ca-certificates) are passed in: they describe the
# network, not the machine. Lab traffic runs under $BBRKIT_LOCK (default
# /tmp/bbrkit-root.lock), bind-mounted into the root. Not part of .ci/run
# (it rebuilds everything from nothing: about an hour on 2 busy cores).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
suite=${1:-bookworm}
[ "${1:-}" = -- ] && suite=bookworm
lab_args=()
while [ $# -gt 0 ]; do
	if [ "$1" = -- ]; then
		shift
		lab_args=("$@")
		break
	fi
	shift
done
fail() {
	echo "FAIL fresh-debian: $*" >&2
	exit 1
}
ok() { echo "ok   fresh-debian: $*"; }
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || fail "needs debootstrap (apt-get install debootstrap)"
lock=${BBRKIT_LOCK:-/tmp/bbrkit-root.lock}
touch "$lock"

work=$(mktemp -d "${TMPDIR:-/tmp}/bbrkit-fresh.XXXXXX")
[ "${BBRKIT_KEEP:-0}" = 1 ] || trap 'rm -rf --one-file-system "$work"' EXIT
root=$work/root
t=$SECONDS
debootstrap --variant=minbase "$suite" "$root" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
	{ tail -5 "$work/debootstrap.log" >&2; fail "debootstrap $suite"; }
ok "debootstrap --variant=minbase $suite: $((SECONDS - t)) s"

# Only the Rust toolchain: rustup's proxies and settings, and the active
# toolchain (bind-mounted read-only by in_root: 1.4 GB not copied), as if
# rustup had installed it.
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
toolchain=$(rustup show active-toolchain | cut -d' ' -f1)
toolchain_dir=$(realpath "$rustup_home/toolchains/$toolchain")
mkdir -p "$root/root/.rustup/toolchains/$toolchain" "$root/root/.cargo"
cp -a "$rustup_home/settings.toml" "$root/root/.rustup/"
cp -a "$cargo_home/bin" "$root/root/.cargo/"
cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
git clone -q "$repo" "$root/root/bbrkit"
ok "toolchain $toolchain added, $(git -C "$repo" rev-parse --short HEAD) cloned"

# The README's two commands: the first ```sh block after "## Quick start"
# and the next one.
blocks=$(awk '/^## Quick start/ {on=1} on && /^```sh$/ {n++; inb=1; next} inb && /^```$/ {inb=0; if (n==2) exit; next} inb {print n": "$0}' "$repo/README.md")
build_cmd=$(sed -n 's/^1: //p' <<<"$blocks")
test_cmd=$(sed -n 's/^2: //p' <<<"$blocks")
[ -n "$build_cmd" ] && [ -n "$test_cmd" ] || fail "README: no two sh blocks under Quick start"

# in_root COMMAND: runs COMMAND with bash in $root, in /root/bbrkit (when
# there).
in_root() {
	local env=(HOME=/root TERM=dumb PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		BBRKIT_LOCK="$lock")
	local v
	for v in SSL_CERT_FILE PIP_CERT REQUESTS_CA_BUNDLE CURL_CA_BUNDLE http_proxy https_proxy no_proxy \
		HTTP_PROXY HTTPS_PROXY NO_PROXY; do
		[ -z "${!v:-}" ] || env+=("$v=${!v}")
	done
	unshare --mount --propagation private bash -c '
		root=$1 lock=$2 toolchain=$3 toolchain_dir=$4; shift 4
		# The root a mount point of its own, as on a machine or in a
		# container (the tests make "/" private, which needs a mount).
		mount --bind "$root" "$root" &&
			mount -t proc proc "$root/proc" && mount --rbind /sys "$root/sys" &&
			mount --rbind /dev "$root/dev" && mount -t tmpfs tmpfs "$root/run" || exit 1
		tc=$root/root/.rustup/toolchains/$toolchain
		if [ -d "$tc" ]; then
			mount --bind "$toolchain_dir" "$tc" && mount -o remount,bind,ro "$tc" || exit 1
		fi
		mkdir -p "$root$(dirname "$lock")" && touch "$root$lock" && mount --bind "$lock" "$root$lock" || exit 1
		cp /etc/resolv.conf "$root/etc/resolv.conf"
		# pivot_root, not only chroot: a process that joins a mount namespace
		# (setns, as the bbr3 tests do) lands at the root of that namespace, which
		# must be this root, as in a container.
		cd "$root" && mkdir -p .oldroot && pivot_root . .oldroot && umount -l /.oldroot && rmdir /.oldroot || exit 1
		exec chroot / /usr/bin/env -i "$@"
	' - "$root" "$lock" "$toolchain" "$toolchain_dir" "${env[@]}" bash -c "cd /root/bbrkit 2>/dev/null || cd /; update-ca-certificates >/dev/null 2>&1; $1"
}

# A pristine copy, to run the binary on a machine that only has what
# minbase has.
dpkg --root="$root" -s libelf1 >/dev/null 2>&1 && fail "the fresh root has libelf1"
cp -a "$root" "$work/bare"
t=$SECONDS
in_root "$build_cmd ${lab_args[*]}" 2>&1 | tee "$work/build.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail "README's first command: $build_cmd"
grep -q '^condition ' "$work/build.log" || fail "README's first command printed no lab table"
ok "README's first command ($build_cmd ${lab_args[*]}): built and ran the lab in $((SECONDS - t)) s"

libs=$(in_root 'ldd target/release/bbrkit')
echo "$libs"
grep -qE 'libelf|libz\.' <<<"$libs" && fail "the release binary links libelf or libz"
# The binary copied to the pristine root (no compiler, no libelf1, no zlib
# headers): `bbrkit check` runs there.
cp "$root/root/bbrkit/target/release/bbrkit" "$work/bare/usr/local/bin/bbrkit"
root=$work/bare in_root 'bbrkit --version && bbrkit check >/dev/null' ||
	fail "bbrkit check in a root without libelf1"
ok "ldd: no libelf, no libz; copied to a root without libelf1, bbrkit check runs"

t=$SECONDS
in_root "$test_cmd" 2>&1 | tee "$work/test.log"
[ "${PIPESTATUS[0]}" = 0 ] || fail "README's test command: $test_cmd"
ok "README's test command ($test_cmd) passed in $((SECONDS - t)) s"
