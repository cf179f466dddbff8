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
# namespace's sysctls; a failing `bbrkit verify` fails the host.
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
	unshare --net "$0" --in-netns "$deb" "$venv"
	exit
fi

deb=$1
venv=$2
work=$(mktemp -d /tmp/bbrkit-ansible.XXXXXX)
trap 'rm -rf "$work"' EXIT

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
play() {
	local rc=0
	"$venv/bin/ansible-playbook" -i "$work/inventory" "$work/site.yml" "$@" >"$work/play.out" 2>&1 || rc=$?
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
elapsed ansible
