#!/usr/bin/env bash
# Live test of bbrkit's Prometheus rules and Grafana dashboard with the real
# tools: promtool check/test rules; then, inside a throwaway network
# namespace (loopback only, ports 19090/19100 there), bbrkit-metrics.service's
# command refreshes a textfile, Debian's prometheus-node-exporter reads it and
# Debian's prometheus scrapes it and evaluates the rules, while loopback
# connections live through a switch from reno to bbr:
#
#   pre    namespace default reno, sandbox boot files set reno: the
#          "not intended" and "not persisted" alerts' expressions return data
#   post   `bbrkit enable` (bbr), 10% loss on the sink port (nft), new bbr
#          connections next to the old reno ones: the recording rules, the
#          old-sockets and retransmit alerts and every dashboard expression
#          return data
#   stale  refresh stopped, textfile 10 minutes old: the staleness alert
#
#   contrib/tests/prometheus.sh [BBRKIT_BINARY]   (default target/release/bbrkit)
# Root only; run it under `flock /tmp/bbrkit-root.lock` (.ci/run does).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
rules=$repo/contrib/prometheus/bbrkit.rules.yml
dashboard=$repo/contrib/grafana/bbrkit.json

if [ "${1:-}" != --in-netns ]; then
	bin=$(realpath "${1:-$repo/target/release/bbrkit}")
	promtool check rules "$rules"
	promtool test rules "$repo/contrib/prometheus/tests.yml"
	venv=$(ansible_venv) # its python has PyYAML for promcheck.py
	unshare --net "$0" --in-netns "$bin" "$venv"
	exit
fi
bin=$2
venv=$3
work=$(mktemp -d /tmp/bbrkit-prom.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

ip link set lo up
echo reno >/proc/sys/net/ipv4/tcp_congestion_control
root=$work/root
mkdir -p "$root/etc/sysctl.d" "$work/textfile" "$work/prom"
printf 'net.ipv4.tcp_congestion_control = reno\n' >"$root/etc/sysctl.d/10-reno.conf"

# The command of the shipped unit, with this test's binary, textfile and root.
exec_start=$(sed -n 's/^ExecStart=//p' "$repo/contrib/systemd/bbrkit-metrics.service")
read -r -a cmd <<<"${exec_start//\/usr\/bin\/bbrkit/$bin}"
cmd=("${cmd[@]//\/var\/lib\/prometheus\/node-exporter/$work/textfile}" --root "$root")
refresh() { while [ ! -e "$work/stop-refresh" ]; do "${cmd[@]}"; sleep 2; done; }
refresh &
pids+=($!)

prometheus-node-exporter --web.listen-address=127.0.0.1:19100 --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$work/textfile" >"$work/node-exporter.log" 2>&1 &
pids+=($!)
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files:
  - $rules
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ["127.0.0.1:19100"]
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
	--web.listen-address=127.0.0.1:19090 >"$work/prometheus.log" 2>&1 &
pids+=($!)
url=http://127.0.0.1:19090

port=17000
python3 "$here/traffic.py" sink $port &
pids+=($!)
sleep 0.5
python3 "$here/traffic.py" send $port 3 2000000 300 &
pids+=($!)

check() {
	local t=$SECONDS
	if ! "$venv/bin/python" "$here/promcheck.py" "$url" "$1" "$2" "$rules" "$dashboard"; then
		tail -n 20 "$work/prometheus.log" "$work/node-exporter.log" >&2
		grep -E '^bbrkit_(info|tcp_retrans|tcp_original|sockets)' "$work/textfile/bbrkit.prom" >&2 || true
		nft list ruleset >&2 || true
		exit 1
	fi
	echo "time prometheus $1: $((SECONDS - t))s"
}
check pre 60

"$bin" enable --root "$root" >/dev/null
nft -f - <<EOF
table inet bbrkit_test {
	chain in {
		type filter hook input priority 0;
		tcp dport $port numgen random mod 100 < 10 drop
	}
}
EOF
python3 "$here/traffic.py" send $port 3 2000000 300 &
pids+=($!)
check post 180

touch "$work/stop-refresh"
wait "${pids[0]}" # no write can come after the touch below
touch -d '10 minutes ago' "$work/textfile/bbrkit.prom"
check stale 30
elapsed prometheus
