#!/usr/bin/env bash
# End-to-end test of the bbrkit Debian package as an operator meets it:
# lintian, `dpkg -i` on this machine, self-contained (neither Depends nor
# ldd names libelf or zlib), `man bbrkit-enable` (one page per
# command), bash/zsh/fish completions loaded by the shells themselves, the
# systemd units accepted by systemd-analyze, no sysctl changed by the
# install, and `dpkg --purge` leaving no file behind (file list of the whole
# system before and after). The package is purged on exit, also on failure.
#
#   contrib/tests/deb.sh target/debian/bbrkit_0.1.0-1_amd64.deb
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
deb=$(realpath "${1:?usage: deb.sh PACKAGE.deb}")
fail() { echo "FAIL deb: $*" >&2; exit 1; }
ok() { echo "ok   deb: $*"; }

# lintian: errors and warnings fail; the justified ones are overridden in
# contrib/deb/lintian-overrides (shipped in the package, see docs/fleet.md).
lintian --fail-on error,warning --display-info "$deb" >"${TMPDIR:-/tmp}/bbrkit-lintian.$$" 2>&1 ||
	{ cat "${TMPDIR:-/tmp}/bbrkit-lintian.$$" >&2; rm -f "${TMPDIR:-/tmp}/bbrkit-lintian.$$"; fail "lintian"; }
ok "lintian: no error or warning; info: $(sed -n 's/^I: bbrkit: //p' "${TMPDIR:-/tmp}/bbrkit-lintian.$$" | tr '\n' ';')"
rm -f "${TMPDIR:-/tmp}/bbrkit-lintian.$$"

# Every path on this system outside the trees that change on their own
# (kernel filesystems, temp dirs, the work trees, caches of other builds).
files() {
	find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp -o -path /var/tmp \
		-o -path /work -o -path /root -o -path /home -o -path /var/cache -o -path /var/log \) -prune -o -print | sort
}
sysctls() { cat /proc/sys/net/ipv4/tcp_congestion_control /proc/sys/net/core/default_qdisc 2>/dev/null; ls /etc/sysctl.d; }

purge_bbrkit_on_exit
files_before=$(files)
sysctl_before=$(sysctls)
dpkg -i "$deb" >/dev/null
ok "installed with dpkg -i: $(bbrkit --version)"
# Self-contained: libelf and zlib are in the binary (static), so neither the
# package nor the binary needs them.
depends=$(dpkg-deb -f "$deb" Depends)
! grep -qE 'libelf|zlib' <<<"$depends" || fail "the package depends on libelf or zlib: $depends"
libs=$(ldd /usr/bin/bbrkit | awk '{print $1}' | tr '\n' ' ')
! grep -qE 'libelf|libz\.' <<<"$libs" || fail "/usr/bin/bbrkit links libelf or libz: $libs"
ok "self-contained: Depends: $depends; ldd: $libs"
[ "$(sysctls)" = "$sysctl_before" ] || fail "installing changed a sysctl or /etc/sysctl.d"
ok "installing changed no sysctl and no sysctl.d file"

# One man page per visible command, found by man-db.
for c in "" $(bbrkit --help | sed -n '/^Commands:/,/^$/p' | awk 'NR>1 && $1 != "help" {print $1}'); do
	page=bbrkit${c:+-$c}
	man -w "$page" >/dev/null || fail "no man page $page"
done
MANWIDTH=100 man -P cat bbrkit-enable 2>/dev/null | grep -q -- '--dry-run' || fail "man bbrkit-enable does not document --dry-run"
ok "man bbrkit-enable works; one page per command ($(dpkg -L bbrkit | grep -c '/man1/'))"

# bash: the shipped script registers the completion and completes commands.
out=$(bash -c 'source /usr/share/bash-completion/completions/bbrkit && complete -p bbrkit &&
	COMP_WORDS=(bbrkit en) COMP_CWORD=1 COMP_LINE="bbrkit en" COMP_POINT=9 && _bbrkit bbrkit en bbrkit && echo "${COMPREPLY[*]}"')
grep -q '^complete .* bbrkit$' <<<"$out" || fail "bash: complete -p bbrkit: $out"
grep -qw enable <<<"$(tail -n1 <<<"$out")" || fail "bash: 'bbrkit en<TAB>' does not offer enable: $out"
ok "bash completion: $(head -n1 <<<"$out"); 'bbrkit en' -> $(tail -n1 <<<"$out")"
# zsh: compinit finds _bbrkit on the vendor path and binds it.
out=$(zsh -fc 'autoload -Uz compinit && compinit -u -D && print -r -- ${_comps[bbrkit]}')
[ "$out" = _bbrkit ] || fail "zsh: compinit did not bind _bbrkit: '$out'"
ok "zsh completion: compinit binds bbrkit to $out"
# fish: the vendor directory is loaded on demand.
out=$(HOME=$(mktemp -d) fish -c 'complete -C "bbrkit en"')
grep -q '^enable' <<<"$out" || fail "fish: 'bbrkit en' does not offer enable: $out"
ok "fish completion: 'bbrkit en' -> $(tr '\t\n' ' ;' <<<"$out")"

# The units as installed (no systemd runs here to start them).
# Only the metrics units and the trial template are packaged:
# bbrkit-{bbr2,bbr3,policy}.service are written by the `enable` that needs
# them (through the before-image, with ExecStart naming the running binary),
# so no packaged file can conflict.
units=$(dpkg -L bbrkit | grep -E '/systemd/system/[^/]+\.(service|timer)$')
[ -n "$units" ] || fail "no systemd units in the package"
shipped=$(xargs -n1 basename <<<"$units" | sort | tr '\n' ' ')
[ "$shipped" = "bbrkit-metrics.service bbrkit-metrics.timer bbrkit-trial@.service " ] ||
	fail "the package ships other units than bbrkit-metrics.{service,timer} and bbrkit-trial@.service: $shipped"
ok "packaged units: $shipped(bbrkit-bbr2/bbr3/policy.service are written by enable)"
trial_unit=$(grep 'bbrkit-trial@.service$' <<<"$units")
# The template is never enabled or started by the package (no instance, no
# wants link), and its instance runs the definition of its name.
! find /etc/systemd/system -name 'bbrkit-trial@*' 2>/dev/null | grep -q . ||
	fail "the package enabled a bbrkit-trial@ instance"
grep -qx 'ExecStart=/usr/bin/bbrkit trial --definition /etc/bbrkit/trials/%i.toml --name %i --textfile /var/lib/prometheus/node-exporter/bbrkit-trial-%i.prom' "$trial_unit" ||
	fail "bbrkit-trial@.service does not run bbrkit trial --definition /etc/bbrkit/trials/%i.toml"
grep -qx 'SuccessExitStatus=143' "$trial_unit" || fail "bbrkit-trial@.service: a stop (SIGTERM, exit 143) would be a failure"
ok "bbrkit-trial@.service: runs /etc/bbrkit/trials/NAME.toml, stop = SIGTERM is success, not enabled"
if command -v systemd-analyze >/dev/null; then
	# A template is verified through an instance of it (a copy named so).
	inst=$(mktemp -d)
	cp "$trial_unit" "$inst/bbrkit-trial@edge-bbr.service"
	# shellcheck disable=SC2086
	systemd-analyze verify $(grep -v '@\.service$' <<<"$units") "$inst/bbrkit-trial@edge-bbr.service" ||
		{ rm -rf "$inst"; fail "systemd-analyze verify $units"; }
	rm -rf "$inst"
	ok "systemd-analyze verify: $(echo $units | tr '\n' ' ')(the template as bbrkit-trial@edge-bbr.service)"
fi
grep -q '^ExecStart=/usr/bin/bbrkit metrics --textfile /var/lib/prometheus/node-exporter/bbrkit.prom$' \
	"$(grep 'bbrkit-metrics.service$' <<<"$units")" || fail "bbrkit-metrics.service does not run bbrkit metrics --textfile"

dpkg --purge bbrkit >/dev/null
files_after=$(files)
if [ "$files_before" != "$files_after" ]; then
	diff <(echo "$files_before") <(echo "$files_after") >&2 || true
	fail "dpkg --purge left the system different from before the install"
fi
[ "$(sysctls)" = "$sysctl_before" ] || fail "removal changed a sysctl"
ok "dpkg --purge left no file behind ($(wc -l <<<"$files_before") paths compared)"
elapsed deb
