#!/usr/bin/env bash
# Speed comparison of bbrkit sim with ns-3 3.37 (Debian libns3-dev) on the
# same scenario: one BBR flow, 100 Mbit/s, 10 ms RTT, 1 BDP buffer, 10 s
# simulated. Builds bottleneck.cc (our scenario code) and bbrkit, runs them
# back to back, prints wall and CPU seconds and the ratio. Not run by CI.
#   usage: run.sh [REPEATS_FOR_BBRKIT]   (needs g++ and libns3-dev)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
reps=${1:-20}
out=${TMPDIR:-/tmp}/bbrkit-ns3-bench
mkdir -p "$out"

libs="-lns3-core -lns3-network -lns3-internet -lns3-point-to-point -lns3-applications -lns3-traffic-control"
g++ -O2 -std=c++17 -o "$out/bottleneck" "$here/bottleneck.cc" \
  $(pkg-config --cflags ns3-core 2>/dev/null) $libs
(cd "$root" && cargo build --quiet --release -p bbrkit-sim --example timing)
timing=${CARGO_TARGET_DIR:-$root/target}/release/examples/timing

echo "ns-3 $(pkg-config --modversion ns3-core 2>/dev/null || echo '?'), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
TIMEFORMAT='%R %U %S'
# ns-3: wall and CPU of the whole process (its own line reports Run() alone).
{ time "$out/bottleneck" --tcp=ns3::TcpBbr --rate=100Mbps --rttMs=10 --buffer=84 --seconds=10 \
    > "$out/ns3.txt"; } 2> "$out/ns3.time"
# bbrkit: the same scenario in-process, mean of REPEATS runs.
"$timing" 1 100000000 10 10 "$reps" bbr1 > "$out/bbrkit.txt"
cat "$out/ns3.txt" "$out/bbrkit.txt"
read -r _ nu ns < "$out/ns3.time"
nrun=$(grep -o 'wall_s=[0-9.]*' "$out/ns3.txt" | cut -d= -f2)
bw=$(grep -o 'wall_s=[0-9.]*' "$out/bbrkit.txt" | cut -d= -f2)
bc=$(grep -o 'cpu_s=[0-9.]*' "$out/bbrkit.txt" | cut -d= -f2)
awk -v nrun="$nrun" -v nc="$(echo "$nu + $ns" | bc -l 2>/dev/null || awk -v a="$nu" -v b="$ns" 'BEGIN{print a+b}')" \
    -v bw="$bw" -v bc="$bc" 'BEGIN {
  printf "speed-up: %.0fx wall (ns-3 Run() %.3f s / bbrkit %.4f s), %.0fx CPU (ns-3 process %.3f s / bbrkit %.4f s)\n",
         nrun / bw, nrun, bw, nc / bc, nc, bc;
}'
