#!/usr/bin/env bash
# The kernel matrix (issue 31): boots Debian's own cloud kernels in qemu and
# runs one scenario of the release binary on each (contrib/tests/
# kernels-guest.sh: check, doctor, enable/verify/rollback of bbr, bbr3 and
# bbr2, a policy with a port rule and a real connection, a short lab, a
# short live trial over lab traffic).
#
#   contrib/tests/kernels.sh [VERSION...]      VERSION: 5.10 6.1 6.12 (default all)
#
# Kernels: linux-image-*-cloud-amd64 of bullseye (5.10), bookworm (6.1) and
# trixie (6.12), fetched with `apt-get download` through a private apt
# configuration (its own sources list, lists and cache; the host's apt state
# is not touched) from the Debian archive named in this host's own apt
# sources, signatures checked by apt against
# /usr/share/keyrings/debian-archive-keyring.gpg. The kernel and its modules
# are cached in $BBRKIT_CI_CACHE/kernels/VERSION (default
# ~/.cache/bbrkit-ci): a second run downloads nothing (delete the directory
# to take a newer package). The binary is this tree's target/release/bbrkit,
# built first (`cargo build --release --locked -p bbrkit`).
#
# Each VM: qemu TCG (KVM only with BBRKIT_KVM=1 and only if a probe boot
# answers in time), 2 GB, BBRKIT_VM_SMP (default 1) CPUs, serial console to a
# log, -no-reboot, a timeout of BBRKIT_VM_TIMEOUT seconds (default 600); a
# VM that does not finish fails its kernel. Prints a table kernel x step
# (ok / refused (expected) / FAIL / missing) and writes it as markdown to
# $BBRKIT_KERNELS_TABLE (default target/kernels/table.md), with the logs
# beside it; with BBRKIT_KERNELS_DOCS=1 the table also replaces the one
# between `<!-- kernels-table -->` markers in README.md, docs/bpf.md and
# docs/kernels.md. Exit 1 on any FAIL, missing step or unexpected outcome; 2 on
# bad usage. Root is not needed (qemu runs unprivileged). Needs
# qemu-system-x86, busybox-static, kmod, cpio (contrib/deps.sh test).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
die() {
	echo "bbrkit: $*" >&2
	exit 2
}
cache=${BBRKIT_CI_CACHE:-$HOME/.cache/bbrkit-ci}/kernels
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
outdir=$repo/target/kernels
table_md=${BBRKIT_KERNELS_TABLE:-$outdir/table.md}
vm_timeout=${BBRKIT_VM_TIMEOUT:-600}
vm_smp=${BBRKIT_VM_SMP:-1}

# The steps the guest prints, in order, and where a one-line refusal is the
# expected outcome (5.10 cannot write sk_pacing_rate from a BPF CA at all;
# 6.1 runs bbr3 and bbr2 from the 2-argument object, registered by map
# update: no struct_ops links before 6.4).
steps=(check doctor bbr bbr3 bbr2 policy lab lab-bbr3 trial)
expect_refused() { # VERSION STEP
	case "$1:$2" in
	5.10:bbr3 | 5.10:bbr2 | 5.10:lab-bbr3) return 0 ;;
	*) return 1 ;;
	esac
}
distribution() {
	case $1 in
	5.10) echo "Debian 11 (bullseye)" ;;
	6.1) echo "Debian 12 (bookworm)" ;;
	6.12) echo "Debian 13 (trixie)" ;;
	esac
}
suite_of() {
	case $1 in
	5.10) echo bullseye ;;
	6.1) echo bookworm ;;
	6.12) echo trixie ;;
	*) die "kernels.sh: unknown version '$1' (expected 5.10, 6.1 or 6.12)" ;;
	esac
}

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(5.10 6.1 6.12)
for v in "${versions[@]}"; do suite_of "$v" >/dev/null; done
for t in qemu-system-x86_64 busybox depmod cpio apt-get dpkg-deb xz objcopy; do
	command -v "$t" >/dev/null || die "kernels.sh: needs $t (contrib/deps.sh test)"
done
busybox_bin=$(command -v busybox)
# static: ldd refuses it ("not a dynamic executable"); the initramfs has no libc for busybox
! ldd "$busybox_bin" >/dev/null 2>&1 ||
	die "kernels.sh: needs a static busybox (busybox-static)"

# The host's Debian archive: the URI of the first apt source (deb822 or
# one-line) whose suites include a plain release name (not -security or
# -updates). Only the suite is substituted.
archive_uri() {
	local u
	u=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk 'BEGIN {RS = ""} /(^|\n)Types:[^\n]*deb/ {
		uri = ""; plain = 0; n = split($0, l, "\n")
		for (i = 1; i <= n; i++) {
			if (l[i] ~ /^URIs:/) { split(l[i], w, /[ \t]+/); uri = w[2] }
			if (l[i] ~ /^Suites:/) { m = split(l[i], w, /[ \t]+/); for (j = 2; j <= m; j++) if (w[j] !~ /-/) plain = 1 }
		}
		if (uri != "" && plain) { print uri; exit }
	}')
	[ -n "$u" ] || u=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -n 's/^deb[ \t]\+\(\[[^]]*\][ \t]\+\)\?\([^ \t]\+\)[ \t]\+\([^ \t-]\+\)[ \t].*/\2/p' | head -1)
	[ -n "$u" ] || die "kernels.sh: no Debian archive in this host's apt sources"
	echo "$u"
}

# fetch_kernel VERSION: $cache/VERSION/{vmlinuz,config,package,kver} and
# lib/modules/KVER with a modules.dep, downloaded once.
fetch_kernel() {
	local v=$1 suite dir a uri pkg deb kver
	suite=$(suite_of "$v")
	dir=$cache/$v
	[ -s "$dir/vmlinuz" ] && [ -s "$dir/kver" ] && return 0
	uri=$(archive_uri)
	a=$cache/apt/$suite
	rm -rf "$a"
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/sources.list.d" "$a/debs"
	echo "deb [signed-by=$keyring] $uri $suite main" >"$a/sources.list"
	: >"$a/status"
	local opts=(-o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts="$a/sources.list.d"
		-o Dir::State="$a" -o Dir::State::Lists="$a/lists" -o Dir::State::status="$a/status"
		-o Dir::Cache="$a/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)"
		-o APT::Architecture=amd64 -o APT::Architectures::=amd64)
	apt-get "${opts[@]}" -qq update >&2 || die "kernels.sh: apt-get update of $suite ($uri) failed"
	pkg=$(apt-cache "${opts[@]}" depends linux-image-cloud-amd64 |
		sed -n 's/^ *|\?Depends: \(linux-image-[0-9][^ ]*-cloud-amd64\)$/\1/p' | head -1)
	[ -n "$pkg" ] || die "kernels.sh: no linux-image-*-cloud-amd64 in $suite"
	(cd "$a/debs" && apt-get "${opts[@]}" -qq download "$pkg") >&2 || die "kernels.sh: apt-get download $pkg failed"
	deb=$(ls "$a/debs/"*.deb)
	rm -rf "$dir.new"
	mkdir -p "$dir.new/x"
	dpkg-deb -x "$deb" "$dir.new/x"
	# lib/modules (bullseye, bookworm) or usr/lib/modules (trixie, merged /usr)
	local mods=$dir.new/x/lib/modules
	[ -d "$mods" ] || mods=$dir.new/x/usr/lib/modules
	kver=$(ls "$mods")
	cp "$dir.new/x/boot/vmlinuz-$kver" "$dir.new/vmlinuz"
	cp "$dir.new/x/boot/config-$kver" "$dir.new/config"
	mkdir -p "$dir.new/lib/modules"
	mv "$mods/$kver" "$dir.new/lib/modules/"
	depmod -b "$dir.new" "$kver"
	basename "$deb" >"$dir.new/package"
	echo "$kver" >"$dir.new/kver"
	rm -rf "$dir.new/x" "$a"
	rm -rf "$dir"
	mv "$dir.new" "$dir"
}

# make_initramfs VERSION OUT: busybox, bbrkit with its shared libraries, the
# guest script as /init, and the modules the scenario may load (everything
# under net/, veth, ifb and dummy, with their dependencies) decompressed,
# with a modules.dep from depmod.
make_initramfs() {
	local v=$1 out=$2 kver root lib m src dst
	kver=$(cat "$cache/$v/kver")
	src=$cache/$v/lib/modules/$kver
	root=$work/root-$v
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,root} "$root/lib/modules/$kver"
	cp "$busybox_bin" "$root/bin/busybox"
	cp "$here/kernels-guest.sh" "$root/init"
	ln -s busybox "$root/bin/sh"
	# the debug info (release profile) is most of its size: not needed here
	objcopy --strip-debug "$bin" "$root/usr/sbin/bbrkit"
	for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	# libbpf reads the kernel's config for the BPF objects' __kconfig
	# externs (the cloud kernels have no /proc/config.gz), as on the server
	mkdir -p "$root/boot"
	cp "$cache/$v/config" "$root/boot/config-$kver"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
	echo 'root:x:0:' >"$root/etc/group"
	awk -F': *' '$1 ~ /^kernel\/net\// || $1 ~ /\/drivers\/net\/(veth|ifb|dummy)\.ko/ {
		print $1; n = split($2, d, " "); for (i = 1; i <= n; i++) print d[i] }' "$src/modules.dep" |
		sort -u | while read -r m; do
		dst=$root/lib/modules/$kver/${m%.*z*}
		case $m in *.ko) dst=$root/lib/modules/$kver/$m ;; esac
		mkdir -p "$(dirname "$dst")"
		case $m in
		*.xz) xz -dc "$src/$m" >"$dst" ;;
		*.zst) zstd -qdc "$src/$m" >"$dst" ;;
		*) cp "$src/$m" "$dst" ;;
		esac
	done
	cp "$src"/modules.builtin* "$src/modules.order" "$root/lib/modules/$kver/"
	depmod -b "$root" "$kver"
	(cd "$root" && find . | cpio -o -H newc --quiet) >"$out"
	rm -rf "$root"
}

# boot VERSION INITRD LOG ACCEL [EXTRA-CMDLINE]: one VM, killed at the
# timeout; returns qemu's (or timeout's 124) status.
boot() {
	local v=$1 initrd=$2 log=$3 accel=$4 extra=${5:-} limit=$vm_timeout
	[ -z "$extra" ] || limit=60
	timeout --kill-after=5 "$limit" qemu-system-x86_64 -accel "$accel" -m 2048 -smp "$vm_smp" \
		-kernel "$cache/$v/vmlinuz" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 quiet $extra" \
		-display none -monitor none -serial "file:$log" -no-reboot -nodefaults \
		</dev/null >"$log.qemu" 2>&1 &
	qemu_pid=$!
	local rc=0
	wait "$qemu_pid" || rc=$?
	qemu_pid=
	return "$rc"
}

work=$(mktemp -d "${TMPDIR:-/tmp}/bbrkit-kernels.XXXXXX")
qemu_pid=
cleanup() {
	[ -z "$qemu_pid" ] || kill -- "$qemu_pid" 2>/dev/null || true
	[ -z "$qemu_pid" ] || wait "$qemu_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$outdir"

t=$SECONDS
(cd "$repo" && cargo build --release --locked -p bbrkit) >&2
bin=$repo/target/release/bbrkit
echo "kernels.sh: release build $((SECONDS - t)) s" >&2

for v in "${versions[@]}"; do
	t=$SECONDS
	fetch_kernel "$v"
	echo "kernels.sh: $v: $(cat "$cache/$v/package") ($((SECONDS - t)) s)" >&2
done

# TCG unless BBRKIT_KVM=1 and a probe boot under KVM answers: -enable-kvm
# can hang (nested virtualisation), so KVM is never assumed.
accel=tcg
if [ "${BBRKIT_KVM:-0}" = 1 ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
	make_initramfs "${versions[0]}" "$work/probe.cpio"
	if boot "${versions[0]}" "$work/probe.cpio" "$work/probe.log" kvm bbrkit.probe=1 &&
		grep -q '^PROBE ok' "$work/probe.log"; then
		accel=kvm
	else
		echo "kernels.sh: KVM did not answer a probe boot: using TCG" >&2
	fi
fi
echo "kernels.sh: accelerator $accel, $vm_smp CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

declare -A result detail
failed=0
times=()
for v in "${versions[@]}"; do
	log=$outdir/$v.log
	t=$SECONDS
	make_initramfs "$v" "$work/$v.cpio"
	echo "kernels.sh: $v: initramfs $(($(stat -c %s "$work/$v.cpio") / 1048576)) MB ($((SECONDS - t)) s); booting" >&2
	t=$SECONDS
	# A VM that stops before its scenario's END (a TCG fault such as the
	# int3 oops seen once with 2 vCPUs, or the timeout) is the emulator's
	# failure, not a step's: it is booted once more, and the table says so.
	# A step that ran and failed is never retried.
	for attempt in 1 2; do
		rc=0
		boot "$v" "$work/$v.cpio" "$log" "$accel" || rc=$?
		wall=$((SECONDS - t))
		tr -d '\r' <"$log" >"$log.tmp" && mv "$log.tmp" "$log"
		grep -q '^END' "$log" && break
		echo "kernels.sh: $v: the VM did not finish (attempt $attempt, qemu exit $rc after $wall s; log $log)" >&2
		[ "$attempt" = 2 ] || cp "$log" "$log.attempt1"
	done
	[ "$attempt" = 1 ] || times+=("$v: booted twice, the first VM did not finish (log $log.attempt1)")
	boot_s=$(sed -n 's/^BOOT //p' "$log" | head -1)
	scen_s=$(sed -n 's/^SCENARIO //p' "$log" | head -1)
	times+=("$v: VM ${wall} s (kernel to /init ${boot_s:-?} s, scenario ${scen_s:-?} s)")
	for s in "${steps[@]}"; do
		line=$(grep "^STEP $s " "$log" | head -1 || true)
		out=$(cut -d' ' -f3 <<<"$line")
		detail[$v:$s]=$(cut -d' ' -f4- <<<"$line")
		if [ -z "$line" ]; then
			result[$v:$s]=missing
		elif expect_refused "$v" "$s"; then
			case $out in
			refused) result[$v:$s]="refused (expected)" ;;
			ok) result[$v:$s]="ok (refusal expected)" ;;
			*) result[$v:$s]=FAIL ;;
			esac
		else
			case $out in
			ok) result[$v:$s]=ok ;;
			*) result[$v:$s]=FAIL ;;
			esac
		fi
		case ${result[$v:$s]} in ok | "refused (expected)") ;; *) failed=1 ;; esac
	done
done

# The table: stdout (text) and $table_md (markdown, for the docs).
{
	printf '| kernel | distribution |'
	printf ' %s |' "${steps[@]}"
	printf '\n|---|---|'
	printf -- '---|%.0s' "${steps[@]}"
	printf '\n'
	for v in "${versions[@]}"; do
		printf '| %s (`%s`) | %s |' "$v" "$(cat "$cache/$v/kver")" "$(distribution "$v")"
		for s in "${steps[@]}"; do printf ' %s |' "${result[$v:$s]}"; done
		printf '\n'
	done
} >"$table_md"
cat "$table_md"
for v in "${versions[@]}"; do
	for s in "${steps[@]}"; do
		case ${result[$v:$s]} in
		ok) ;;
		*) echo "$v $s: ${result[$v:$s]}: ${detail[$v:$s]}" ;;
		esac
	done
done
printf 'time %s\n' "${times[@]}"
# --docs (BBRKIT_KERNELS_DOCS=1): the table replaces the one between the
# markers in the README, docs/bpf.md and docs/kernels.md.
if [ "${BBRKIT_KERNELS_DOCS:-0}" = 1 ]; then
	for f in README.md docs/bpf.md docs/kernels.md; do
		grep -q '^<!-- kernels-table -->$' "$repo/$f" || continue
		awk -v t="$table_md" '/^<!-- \/kernels-table -->$/ {skip = 0}
			!skip {print}
			/^<!-- kernels-table -->$/ {while ((getline l < t) > 0) print l; skip = 1}' \
			"$repo/$f" >"$work/doc" && cat "$work/doc" >"$repo/$f"
	done
fi
echo "kernels.sh: load $(cut -d' ' -f1-3 /proc/loadavg); table in $table_md, logs in $outdir"
exit "$failed"
