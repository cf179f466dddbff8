#!/usr/bin/env bash
# End-to-end test of contrib/ansible/roles/bbrkit with a real ansible-playbook
# (ansible-core from PyPI) against localhost, inside a throwaway network
# namespace and with --root sandboxes, so the host's sysctls and files are
# never touched. The role installs the .deb given as $1 with apt (purged at
# the end, also on failure, unless it was installed before).
#
#   contrib/tests/ansible.sh target/debian/bbrkit_0.1.0-1_amd64.deb
#
# Checks: check mode changes nothing; the first run reports changed, the
# second nothing; `state: absent` restores the sandbox byte for byte and the
# namespace's sysctls; a failing `bbrkit verify` fails the host. The
# per-connection policy (bbrkit_policy: check mode with its diff, changed
# only when the policy changed) and a trial's definition (bbrkit_trial) on a throwaway child cgroup with a private
# bpffs (this script's own mount namespace), and promote.yml fed a fixture
# fleet report (contrib/tests/fixtures/fleet-report.json: one trusted
# `better` group, one inconclusive, one untrusted), asserting the policy it
# writes and applies.
# Root only; run it under `flock /tmp/bbrkit-root.lock` (.ci/run does).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/lib.sh"

if [ "${1:-}" = --in-netns ]; then
	shift
else
	deb=$(realpath "${1:?usage: ansible.sh PACKAGE.deb}")
	venv=$(ansible_venv)
	purge_bbrkit_on_exit
	unshare --net --mount "$0" --in-netns "$deb" "$venv"
	exit
fi

deb=$1
venv=$2
work=$(mktemp -d /tmp/bbrkit-ansible.XXXXXX)
# A private bpffs for the policy's pins (this mount namespace only) and a
# throwaway child cgroup for the policy to govern.
mount --make-rprivate /
mount -t bpf bpf /sys/fs/bpf
cg=$(findmnt -n -t cgroup2 -o TARGET | head -n1)/bbrkit-ansible.$$
mkdir "$cg"
trap 'rm -rf "$work"; rmdir "$cg" 2>/dev/null || true' EXIT

# Ansible writes its own state under ANSIBLE_HOME and the temp dirs: all in
# $work, so nothing is left in ~/.ansible.
export ANSIBLE_HOME=$work/ansible-home ANSIBLE_LOCAL_TEMP=$work/tmp ANSIBLE_REMOTE_TEMP=$work/tmp
export ANSIBLE_ROLES_PATH=$repo/contrib/ansible/roles ANSIBLE_STDOUT_CALLBACK=default
export ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_GATHERING=explicit
export ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3
cat >"$work/inventory" <<'EOF'
localhost ansible_connection=local
EOF
cat >"$work/site.yml" <<'EOF'
- hosts: all
  roles:
    - bbrkit
EOF

# A Debian-like sandbox: sysctl.conf, the 99-sysctl.conf symlink and
# systemd's 50-default.conf.
make_sandbox() {
	local r=$1
	mkdir -p "$r/etc/sysctl.d" "$r/usr/lib/sysctl.d"
	printf '# /etc/sysctl.conf - Configuration file for setting system variables\n#net.ipv4.ip_forward=1\n' >"$r/etc/sysctl.conf"
	ln -s ../sysctl.conf "$r/etc/sysctl.d/99-sysctl.conf"
	printf 'net.core.default_qdisc = fq_codel\nnet.ipv4.conf.all.rp_filter = 2\n' >"$r/usr/lib/sysctl.d/50-default.conf"
}

# Every file, directory and symlink under the sandbox (type, mode, target,
# content hash) and every readable net.ipv4/net.core sysctl of this namespace.
# The two lists of registered algorithms are the kernel's, not the
# namespace's: a bbrkit elsewhere on the host (a lab with bbr3 beside this
# test) registers bbr3 or bbr2 in them, so those two words are left out; the
# role under test enables bbr and never registers them.
snapshot() {
	(cd "$1" && find . -printf '%y %m %p -> %l\n' | sort &&
		find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
	for f in /proc/sys/net/ipv4/tcp_* /proc/sys/net/core/*; do
		[ -r "$f" ] && [ -f "$f" ] && printf '%s=%s\n' "${f#/proc/sys/}" "$(tr '\t' ' ' <"$f" 2>/dev/null || true)"
	done | sed -E '/^net\/ipv4\/tcp_(available|allowed)_congestion_control=/{s/ bbr[23]\b//g}'
}

# Runs the playbook; prints "changed failed rc" of localhost from its PLAY
# RECAP line, as an operator reads it. Extra arguments go to ansible-playbook.
# The playbook is $playbook (default the role's site.yml).
play() {
	local rc=0
	"$venv/bin/ansible-playbook" -i "$work/inventory" "${playbook:-$work/site.yml}" "$@" >"$work/play.out" 2>&1 || rc=$?
	sed -n 's/^localhost *: .*changed=\([0-9]*\).*failed=\([0-9]*\).*/\1 \2/p' "$work/play.out" | tr '\n' ' '
	echo "$rc"
}

# check WHAT CHANGED FAILED RC RESULT: the RECAP of RESULT must say exactly
# changed=CHANGED failed=FAILED, and ansible-playbook must have exited RC.
check() {
	local what=$1 changed failures rc
	read -r changed failures rc <<<"$5"
	if [ "$changed" != "$2" ] || [ "$failures" != "$3" ] || [ "$rc" != "$4" ]; then
		echo "FAIL ansible: $what: expected changed=$2 failures=$3 rc=$4, got changed=$changed failures=$failures rc=$rc" >&2
		cat "$work/play.out" >&2
		exit 1
	fi
	echo "ok   ansible: $what (changed=$changed failures=$failures)"
}
same() { # same WHAT BEFORE
	if [ "$(snapshot "$root")" != "$2" ]; then
		echo "FAIL ansible: $1:" >&2
		diff <(echo "$2") <(snapshot "$root") >&2 || true
		exit 1
	fi
	echo "ok   ansible: $1"
}

ip link set lo up
echo reno >/proc/sys/net/ipv4/tcp_congestion_control
root=$work/root
make_sandbox "$root"
vars=(-e bbrkit_root="$root" -e bbrkit_deb="$deb" -e bbrkit_tune=true)
before=$(snapshot "$root")

check "check mode on a fresh host reports the install and the enable" 2 0 0 "$(play --check "${vars[@]}")"
same "check mode changed no file and no sysctl" "$before"
if dpkg-query -W -f='${Status}' bbrkit 2>/dev/null | grep -q 'ok installed'; then
	echo "FAIL ansible: check mode installed the package" >&2
	exit 1
fi
check "first run reports changed: the install and the enable" 2 0 0 "$(play "${vars[@]}")"
[ "$(cat /proc/sys/net/ipv4/tcp_congestion_control)" = bbr ] || { echo "FAIL ansible: cc is not bbr" >&2; exit 1; }
[ -f "$root/etc/sysctl.d/99-zz-bbrkit.conf" ] || { echo "FAIL ansible: no 99-zz-bbrkit.conf" >&2; exit 1; }
enabled=$(snapshot "$root")
check "second run changes nothing" 0 0 0 "$(play "${vars[@]}")"
check "check mode on an enabled host changes nothing" 0 0 0 "$(play --check "${vars[@]}")"
check "check mode with state absent reports the rollback" 1 0 0 "$(play --check -e bbrkit_state=absent "${vars[@]}")"
same "check mode with state absent changed nothing" "$enabled"
check "state absent reports changed: the rollback" 1 0 0 "$(play -e bbrkit_state=absent "${vars[@]}")"
same "state absent restored every file and sysctl byte for byte" "$before"
check "state absent again changes nothing" 0 0 0 "$(play -e bbrkit_state=absent "${vars[@]}")"

# A host where verify fails: /etc/sysctl.conf sets cubic, so with --force the
# runtime is bbr but procps would apply cubic at boot.
bad=$work/bad
make_sandbox "$bad"
printf 'net.ipv4.tcp_congestion_control = cubic\n' >>"$bad/etc/sysctl.conf"
root=$bad
bad_before=$(snapshot "$bad")
check "a failing bbrkit verify fails the host (after the enable)" 1 1 2 "$(play -e bbrkit_root="$bad" -e bbrkit_deb="$deb" -e bbrkit_force=true)"
grep -q 'bbrkit verify failed: boot.procps' "$work/play.out" ||
	{ echo "FAIL ansible: the failure does not name the failing check" >&2; exit 1; }
check "the failed host rolls back" 1 0 0 "$(play -e bbrkit_root="$bad" -e bbrkit_state=absent)"
same "the failed host is restored byte for byte" "$bad_before"

# bbrkit_policy on a sandbox of its own; the package is installed already.
fail() { echo "FAIL ansible: $*" >&2; cat "$work/play.out" >&2; exit 1; }
root=$work/policy-root
make_sandbox "$root"
printf '[[rule]]\nname = "web"\nlocal_port = [8443]\ncc = "cubic"\n' >"$work/policy.toml"
pvars=(-e bbrkit_root="$root" -e bbrkit_install=false -e bbrkit_policy="$work/policy.toml" -e bbrkit_policy_cgroup="$cg")
policy_before=$(snapshot "$root")
check "policy: check mode reports the enable, /etc/bbrkit, the policy file and its attachment" 4 0 0 "$(play --check --diff "${pvars[@]}")"
grep -q '^+cc = "cubic"' "$work/play.out" || fail "check mode showed no diff of the policy"
same "policy: check mode changed no file and no sysctl" "$policy_before"
[ ! -e /sys/fs/bpf/bbrkit ] || fail "check mode pinned a policy"
check "policy: the first run enables, deploys and attaches it" 4 0 0 "$(play "${pvars[@]}")"
cmp -s "$work/policy.toml" "$root/etc/bbrkit/policy.toml" || fail "policy: /etc/bbrkit/policy.toml is not the policy"
copy=$root/var/lib/bbrkit/policy/${cg##*/}.toml
cmp -s "$work/policy.toml" "$copy" || fail "policy: bbrkit's copy $copy is not the policy"
ls /sys/fs/bpf/bbrkit/policy/*/link >/dev/null || fail "policy: no link pinned"
check "policy: the second run changes nothing" 0 0 0 "$(play "${pvars[@]}")"
# bbrkit_trial: the definition deployed (the unit needs systemd: skipped in a sandbox).
printf 'arms = ["cubic", "bbr"]\nport = [443]\nuntil_confident = true\n' >"$work/edge-bbr.toml"
check "trial: the definition deployed with /etc/bbrkit/trials" 2 0 0 \
	"$(play -e bbrkit_root="$root" -e '{"bbrkit_install": false}' -e "{\"bbrkit_trial\": {\"name\": \"edge-bbr\", \"definition\": \"$work/edge-bbr.toml\"}}")"
cmp -s "$work/edge-bbr.toml" "$root/etc/bbrkit/trials/edge-bbr.toml" || fail "trial: /etc/bbrkit/trials/edge-bbr.toml is not the definition"

# promote.yml on the fixture report: 198.51.100.0/24 (trusted better) gets
# bbr, 203.0.113.0/24 (insufficient data) and 192.0.2.0/24 (untrusted) stay.
# The winner comes from the report's arms ({"A": "cubic", "B": "bbr"});
# bbrkit_promote_arms given in the wrong order fails before any change.
cp "$work/policy.toml" "$work/fleet-policy.toml"
promote=(-e bbrkit_root="$root" -e bbrkit_policy_cgroup="$cg" -e bbrkit_promote_trial=edge-vs-dc
	-e bbrkit_promote_policy="$work/fleet-policy.toml"
	-e bbrkit_promote_report="$repo/contrib/tests/fixtures/fleet-report.json")
playbook=$repo/contrib/ansible/promote.yml
check "promote.yml: bbrkit_promote_arms swapped against the report's arms fails, changing nothing" 0 1 2 \
	"$(play "${promote[@]}" -e '{"bbrkit_promote_arms": ["bbr", "cubic"]}')"
grep -qF 'disagrees with the report' "$work/play.out" || fail "promote.yml: the swapped arms' failure does not say why"
cmp -s "$work/policy.toml" "$work/fleet-policy.toml" || fail "promote.yml: the failed cross-check changed the fleet policy"
check "promote.yml: the place for promoted rules, the winner's rule, the policy file, its attachment" 4 0 0 "$(play "${promote[@]}")"
expected='# bbrkit promote.yml: rules promoted from fleet trials, first in match order
# BEGIN bbrkit promote.yml: 198.51.100.0/24
# trial edge-vs-dc: bbr better than cubic
[[rule]]
name = "promoted 198.51.100.0/24"
remote = ["198.51.100.0/24"]
cc = "bbr"
# END bbrkit promote.yml: 198.51.100.0/24
[[rule]]
name = "web"
local_port = [8443]
cc = "cubic"'
[ "$(cat "$work/fleet-policy.toml")" = "$expected" ] ||
	{ diff <(echo "$expected") "$work/fleet-policy.toml" >&2; fail "promote.yml: the fleet policy is not as expected"; }
cmp -s "$work/fleet-policy.toml" "$copy" || fail "promote.yml: the attached policy is not the fleet policy"
for why in '198.51.100.0/24: promoted to bbr (bbr better than cubic, B/A 3.84x over 4 hosts)' \
	'203.0.113.0/24: left as it is: verdict insufficient_data (B/A 0.957x' \
	"192.0.2.0/24: left as it is: verdict better not trusted (B/A 1.412x" \
	'overall: left as it is: verdict better over the whole fleet'; do
	grep -qF "$why" "$work/play.out" || fail "promote.yml does not say: $why"
done
echo "ok   ansible: promote.yml wrote the rule for the trusted group and said why each other group stays"
check "promote.yml again changes nothing (bbrkit_promote_arms agreeing)" 0 0 0 \
	"$(play "${promote[@]}" -e '{"bbrkit_promote_arms": ["cubic", "bbr"]}')"
playbook=
check "policy: state absent rolls back the enable and the policy" 1 0 0 "$(play -e bbrkit_root="$root" -e bbrkit_state=absent)"
[ ! -e /sys/fs/bpf/bbrkit/policy ] || fail "policy: rollback left pins"
elapsed ansible
