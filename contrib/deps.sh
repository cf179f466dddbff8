#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages bbrkit needs, the one list of them:
#
#   contrib/deps.sh build    what `cargo build` needs besides the Rust toolchain
#   contrib/deps.sh test     build + what the tests and CI's checks need (.ci/run)
#   contrib/deps.sh --list build|test    print the list, install nothing
#
# Installs only what is missing (dpkg), with apt-get: as root directly, else
# through sudo. Same package names on Debian 12/13 and Ubuntu 22.04/24.04
# (Ubuntu 22.04 has no clang-19, which only the test set needs). Without
# apt-get, or neither root nor sudo, it names what is missing in one line and
# exits 2. Changes nothing but the installed packages.
set -euo pipefail

# The build (root Cargo.toml; docs/build.md):
#   gcc libc6-dev       - the linker rustc calls; the C compiler of libbpf-sys,
#                         which builds libbpf, libelf and zlib from its sources
#                         and links them statically (no -dev package needed)
#   make pkg-config     - libbpf-sys checks for both and builds with make
#   autoconf automake autopoint flex bison gawk - elfutils' build (libelf)
#   ca-certificates     - cargo fetches crates over HTTPS
BUILD="gcc libc6-dev make pkg-config autoconf automake autopoint flex bison gawk ca-certificates"

# The tests (cargo test --workspace -- --include-ignored, as root):
#   prometheus  - `promtool check metrics` validates `bbrkit metrics` output
#   iproute2    - only for tests that cross-check bbrkit against `ip`/`tc`/`ss`
#   nftables    - the lab tests check that no nft table is left behind
#   systemd     - systemd-analyze verifies the bbr3 boot unit; systemd-sysctl
#                 applies the sysctl file in the simulated-reboot test
#   procps      - `sysctl -p` in the same test
#   clang-19 llvm-19 libbpf-dev - rebuild bbr3.bpf.o to check the committed one
TEST="prometheus iproute2 nftables systemd procps clang-19 llvm-19 libbpf-dev"
# The fleet tests (contrib/tests/fleet.sh, docs/fleet.md):
#   prometheus-node-exporter  - reads bbrkit's textfile in the live test
#   lintian man-db zsh fish   - package checks: lintian, man, completions
#   python3-apt python3-venv  - Ansible's apt module on the managed host; the
#                               pinned ansible-core's virtualenv
TEST="$TEST prometheus-node-exporter lintian man-db zsh fish python3-apt python3-venv"
# The kernel matrix (contrib/tests/kernels.sh, docs/kernels.md):
#   qemu-system-x86  - boots each Debian kernel (qemu-system-x86_64, TCG)
#   busybox-static   - the initramfs's shell and tools (/init is a sh script)
#   kmod             - depmod: modules.dep for the kernel package's tree and
#                      for the modules the initramfs carries
#   cpio             - packs the initramfs (newc)
#   xz-utils zstd    - decompress the kernel's .ko.xz (.ko.zst) modules
#                      (busybox's modprobe loads plain .ko)
TEST="$TEST qemu-system-x86 busybox-static kmod cpio xz-utils zstd"
# `lab --server-cmd/--client-cmd` against a real third-party server
# (crates/bbrkit/tests/lab_commands.rs, docs/lab.md):
#   nginx-light  - serves a 4 MB file (config in a temp dir, no daemon)
#   curl         - fetches it; its -w timings are the completion time
#   wrk          - a load generator whose summary the lab reads
TEST="$TEST nginx-light curl wrk"

die() {
	echo "bbrkit: $*" >&2
	exit 2
}

list=false
if [ "${1:-}" = --list ]; then
	list=true
	shift
fi
case "${1:-}" in
build) wanted=$BUILD ;;
test) wanted="$BUILD $TEST" ;;
*) die "usage: contrib/deps.sh [--list] build|test" ;;
esac
if $list; then
	echo "$wanted"
	exit 0
fi

command -v dpkg-query >/dev/null && command -v apt-get >/dev/null ||
	die "no apt-get here: install the equivalents of these Debian packages: $wanted"
missing=""
for p in $wanted; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
[ -n "$missing" ] || exit 0

if [ "$(id -u)" = 0 ]; then
	sudo=()
elif command -v sudo >/dev/null; then
	sudo=(sudo)
else
	die "missing packages:$missing (install them as root: apt-get install$missing)"
fi
echo "contrib/deps.sh: installing$missing" >&2
"${sudo[@]}" apt-get update -qq
# shellcheck disable=SC2086
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
