#!/bin/sh
# The /init of contrib/tests/kernels.sh's initramfs: busybox sh, PID 1 of a
# throwaway VM whose / is the initramfs. Mounts what bbrkit reads, runs one
# scenario against the VM's own kernel and prints one machine-readable line
# per step on the serial console:
#
#   STEP <name> ok|refused|fail <detail>
#
# `refused` is a one-line `bbrkit: ...` refusal with exit 2 (the host side
# decides whether a refusal is expected on this kernel). Then `SCENARIO <s>`
# and `END`, and the VM powers off. Every command's own output goes to the
# console too, indented, for the log.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf
mount -t tmpfs tmp /tmp
ip link set lo up
hostname bbrkit-vm
t0=$(cut -d. -f1 /proc/uptime)
echo "KERNEL $(uname -r)"
echo "BOOT $(cut -d' ' -f1 /proc/uptime)"
if grep -q bbrkit.probe /proc/cmdline; then
	echo PROBE ok
	poweroff -f
fi

out=/tmp/out
err=/tmp/err
# run CMD...: runs it, output in $out/$err (and on the console), rc in $rc.
run() {
	"$@" >$out 2>$err
	rc=$?
	echo "  \$ $* -> exit $rc"
	sed 's/^/  | /' $out $err
}
step() { echo "STEP $1 $2 $(echo "$3" | tr '\n' ' ')"; }
# refusal NAME: the last command was a one-line `bbrkit: ` refusal, exit 2,
# with nothing on stdout.
refusal() {
	[ "$rc" = 2 ] && [ "$(wc -l <$err)" = 1 ] && grep -q '^bbrkit: ' $err && [ ! -s $out ]
}
cc_now() { cat /proc/sys/net/ipv4/tcp_congestion_control; }
first_cc=$(cc_now)
# The VM stands for a systemd-booted server (bbrkit keeps bbr3 across
# reboots with a systemd unit and refuses a host without systemd): the unit
# files are written as on such a server; nothing reboots here.
mkdir -p /run/systemd/system /etc/systemd/system

# check: runs, and sees the VM's own (initial) network namespace.
run bbrkit check --json
if [ "$rc" != 0 ]; then
	step check fail "exit $rc: $(head -1 $err)"
elif grep -q '"initial_netns": true' $out; then
	step check ok "initial_netns true"
else
	step check fail "$(grep -o '"netns_evidence": "[^"]*"' $out)"
fi

# doctor: runs (exit 0 or 1: findings are advice) and finds no container.
run bbrkit doctor
if [ "$rc" -gt 1 ]; then
	step doctor fail "exit $rc: $(head -1 $err)"
elif grep -q container_netns $out; then
	step doctor fail "$(grep container_netns $out | head -1)"
else
	step doctor ok "exit $rc, no container finding"
fi

# A loopback connection held open on PORT with algorithm (server side)
# printed by `bbrkit conns --json`: conn_open PORT; conn_cc PORT; conn_close.
conn_open() {
	sleep 30 | nc -l -p "$1" >/dev/null &
	srv=$!
	sleep 1
	sleep 30 | nc 127.0.0.1 "$1" &
	cli=$!
	sleep 1
}
conn_cc() {
	bbrkit conns --port "$1" --json >$out 2>$err
	awk -v p=":$1\"" '/"cc":/ {cc=$2} /"local":/ && index($0, p) {gsub(/[",]/, "", cc); print cc; exit}' $out
}
# conn_model PORT: the `bpf_model.version` conns showed (conn_cc's output)
# for the established socket on local PORT, or "none".
conn_model() {
	awk -v p=":$1\"" '/"state":/ {est = index($0, "ESTABLISHED") > 0; mine = 0; m = 0}
		est && /"local":/ && index($0, p) {mine = 1}
		mine && /"bpf_model": null/ {print "none"; exit}
		mine && /"bpf_model": \{/ {m = 1}
		mine && m && /"version":/ {gsub(/,/, "", $2); print $2; exit}' $out
}
conn_close() {
	kill $cli $srv 2>/dev/null
	killall sleep 2>/dev/null
	wait 2>/dev/null
}

# cc_scenario NAME ARGS...: enable, verify, a new connection uses NAME,
# rollback restores the first algorithm and leaves no bbrkit file or pin.
cc_scenario() {
	name=$1
	shift
	run bbrkit enable "$@"
	if refusal; then
		step "$name" refused "$(cat $err)"
		return
	elif [ "$rc" != 0 ]; then
		step "$name" fail "enable: exit $rc: $(head -1 $err)"
		return
	fi
	run bbrkit verify
	[ "$rc" = 0 ] || { step "$name" fail "verify: exit $rc"; bbrkit rollback >/dev/null 2>&1; return; }
	[ "$(cc_now)" = "$name" ] || { step "$name" fail "tcp_congestion_control is $(cc_now)"; bbrkit rollback >/dev/null 2>&1; return; }
	conn_open 5201
	got=$(conn_cc 5201)
	model=$(conn_model 5201)
	conn_close
	[ "$got" = "$name" ] || { step "$name" fail "a new connection uses '$got'"; bbrkit rollback >/dev/null 2>&1; return; }
	case $name in
	bbr3 | bbr2)
		[ "$model" = "${name#bbr}" ] || { step "$name" fail "conns shows bpf_model version '$model'"; bbrkit rollback >/dev/null 2>&1; return; }
		got="$got, conns model v$model"
		;;
	esac
	run bbrkit rollback
	[ "$rc" = 0 ] || { step "$name" fail "rollback: exit $rc"; return; }
	[ "$(cc_now)" = "$first_cc" ] || { step "$name" fail "after rollback: $(cc_now)"; return; }
	left=$(ls -d /etc/sysctl.d/*bbrkit* /etc/systemd/system/*bbrkit* /etc/systemd/system/*/*bbrkit* /sys/fs/bpf/bbrkit/* 2>/dev/null)
	[ -z "$left" ] || { step "$name" fail "after rollback: $left"; return; }
	case $name in
	bbr3 | bbr2)
		! grep -qw "$name" /proc/sys/net/ipv4/tcp_available_congestion_control ||
			{ step "$name" fail "after rollback: $name is still registered"; return; }
		;;
	esac
	step "$name" ok "enable/verify/connection ($got)/rollback"
}
cc_scenario bbr
cc_scenario bbr3 --cc bbr3
cc_scenario bbr2 --cc bbr2

# policy: local_port 8443 -> reno (not the default): the accepted
# connection gets reno, verify passes, rollback leaves no pin. A second rule
# names bbr: where tcp_bbr is a module (Debian's kernels) enable lists it in
# /etc/modules-load.d/bbrkit.conf (kept at boot), and rollback removes it.
cat >/tmp/policy.toml <<'TOML'
[[rule]]
name = "web"
local_port = [8443]
cc = "reno"

[[rule]]
name = "api"
local_port = [8444]
cc = "bbr"
TOML
mods=/etc/modules-load.d/bbrkit.conf
run bbrkit enable --policy /tmp/policy.toml
if [ "$rc" != 0 ]; then
	step policy fail "enable --policy: exit $rc: $(head -1 $err)"
else
	listed=no
	grep -qx tcp_bbr $mods 2>/dev/null && listed=yes
	module=no
	[ -e /sys/module/tcp_bbr/initstate ] && module=yes
	conn_open 8443
	got=$(conn_cc 8443)
	run bbrkit verify
	vrc=$rc
	conn_close
	run bbrkit rollback
	left=$(ls /sys/fs/bpf/bbrkit/policy/* $mods 2>/dev/null)
	if [ "$listed" != "$module" ]; then
		step policy fail "tcp_bbr a module: $module, listed in $mods: $listed"
	elif [ "$got" != reno ]; then
		step policy fail "the connection on 8443 uses '$got'"
	elif [ "$vrc" != 0 ]; then
		step policy fail "verify: exit $vrc"
	elif [ "$rc" != 0 ] || [ -n "$left" ]; then
		step policy fail "rollback: exit $rc $left"
	else
		step policy ok "port 8443 -> reno, verify, rollback; tcp_bbr module listed in $mods: $listed, gone after rollback"
	fi
fi

# lab: a short run completes (the emulator is the auto choice). The lab
# takes only algorithms the kernel already offers: tcp_bbr is loaded by the
# bbr step's enable, else here (said in the detail).
loaded=""
grep -qw bbr /proc/sys/net/ipv4/tcp_available_congestion_control ||
	{ modprobe tcp_bbr && loaded="(tcp_bbr was not loaded: modprobe'd first) "; }
lab() {
	run bbrkit lab --cc "$2" --runs 1 --duration 3s
	if [ "$rc" = 0 ]; then
		step "$1" ok "$loaded$(grep -hio '[a-z]* emulator' $out $err | head -1)"
	elif refusal; then
		step "$1" refused "$(cat $err)"
	else
		step "$1" fail "exit $rc: $(tail -1 $err)"
	fi
}
lab lab cubic,bbr
lab lab-bbr3 cubic,bbr,bbr3

# trial: a live trial cubic vs bbr on a throwaway cgroup, over the lab's
# request workload served from that cgroup (`lab --cc host`: the lab sets no
# algorithm, the trial's program draws each connection's arm); asserts
# that it ends and has records from both arms (docs/trial.md, "A trial over
# the lab").
cg=/sys/fs/cgroup/kernels-trial
mkdir -p $cg
bbrkit trial --json --arms cubic,bbr --cgroup $cg --duration 40s --interval 10s >/tmp/trial.json 2>/tmp/trial.err &
tp=$!
i=0
while ! grep -q 'attached to' /tmp/trial.err && [ $i -lt 60 ] && kill -0 $tp 2>/dev/null; do
	sleep 1
	i=$((i + 1))
done
run bbrkit lab --cc host --cgroup $cg --workload 1mb --clients 4 --duration 10s --runs 1
lrc=$rc
wait $tp
trc=$?
echo "  \$ bbrkit trial --json --arms cubic,bbr --cgroup $cg --duration 40s --interval 10s -> exit $trc"
sed 's/^/  | /' /tmp/trial.err
conns=$(awk '/"arms": \[/ {on = 1} on && /"connections":/ {gsub(/,/, "", $2); printf "%s ", $2; n++; if (n == 2) exit}' /tmp/trial.json)
set -- $conns
if [ "$trc" != 0 ]; then
	step trial fail "trial: exit $trc: $(tail -1 /tmp/trial.err)"
elif [ "$lrc" != 0 ]; then
	step trial fail "lab --cc host: exit $lrc"
elif [ "${1:-0}" -gt 0 ] && [ "${2:-0}" -gt 0 ]; then
	step trial ok "records: cubic $1, bbr $2 connections; $(grep -o '"verdict": "[a-z_]*"' /tmp/trial.json | head -1)"
else
	step trial fail "connections per arm: '${1:-}' '${2:-}'"
fi
rmdir $cg 2>/dev/null

echo "SCENARIO $(($(cut -d. -f1 /proc/uptime) - t0))"
echo END
poweroff -f
