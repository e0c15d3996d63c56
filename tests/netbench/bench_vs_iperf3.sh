#!/usr/bin/env bash
# Benchmark, not a test (no ctest entry): our TCP transport driven by `nccl-pilot netbench`
# (one NCCL connection with N data streams) against iperf3 with N parallel streams, both over
# loopback in the same run; prints both throughputs and their ratio. Installs nothing
# (iperf3 comes from tools/install-deps.sh).
#
# Usage: tests/netbench/bench_vs_iperf3.sh [BUILD_DIR] [STREAMS] [SECONDS]
#   BUILD_DIR  the build tree holding bin/nccl-pilot and lib/libnccl-net-pilot.so (build)
#   STREAMS    iperf3 -P and NCCL_PILOT_SOCKET_NSTREAMS (4)
#   SECONDS    iperf3 -t; netbench moves about as long at iperf3's rate (5)
# Environment: SIZE (4M), PROTO (simple), PORT (a free one is picked otherwise).
set -euo pipefail

build=${1:-build}
streams=${2:-4}
seconds=${3:-5}
size=${SIZE:-4M}
proto=${PROTO:-simple}
cli=$build/bin/nccl-pilot
plugin=$build/lib/libnccl-net-pilot.so

die() {
  echo "bench_vs_iperf3: $*" >&2
  exit 1
}
command -v iperf3 >/dev/null || die "iperf3 is not installed (run tools/install-deps.sh)"
[[ -x $cli ]] || die "$cli not found (build the nccl-pilot target)"
[[ -f $plugin ]] || die "$plugin not found (build the nccl_net_pilot target)"
[[ $streams =~ ^[0-9]+$ && $streams -ge 1 ]] || die "STREAMS must be a positive number"
[[ $seconds =~ ^[0-9]+$ && $seconds -ge 1 ]] || die "SECONDS must be a positive number"

# The number after "key": in pretty-printed JSON (first match after an optional anchor key).
json_number() { # KEY [ANCHOR] < json
  awk -v key="\"$1\"" -v anchor="${2:+\"$2\"}" '
    anchor != "" && index($0, anchor) { armed = 1 }
    (anchor == "" || armed) && index($0, key) {
      sub(/.*:[ \t]*/, ""); sub(/,.*/, ""); print; exit
    }'
}

port=${PORT:-$((20000 + RANDOM % 20000))}
iperf3 -s -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
sleep 0.5

iperf_json=""
for _ in 1 2 3; do
  if iperf_json=$(iperf3 -c 127.0.0.1 -p "$port" -P "$streams" -t "$seconds" -J 2>/dev/null); then
    break
  fi
  sleep 0.5
done
iperf_bps=$(json_number bits_per_second sum_received <<<"$iperf_json")
[[ -n $iperf_bps ]] || die "iperf3 gave no result on 127.0.0.1:$port"
iperf_gbps=$(awk -v b="$iperf_bps" 'BEGIN { printf "%.3f", b / 8e9 }')

# About as many bytes as iperf3 moved in its run, so both run for similar times.
min_bytes=$(awk -v b="$iperf_bps" -v t="$seconds" 'BEGIN { printf "%.0f", b / 8 * t }')
netbench_json=$(NCCL_PILOT_TRANSPORT=socket NCCL_PILOT_SOCKET_NSTREAMS=$streams \
  NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} \
  "$cli" netbench --plugin "$plugin" --channels 1 --proto "$proto" --sizes "$size" \
  --min-bytes "$min_bytes" --json)
netbench_gbps=$(json_number bw_gbps <<<"$netbench_json")
[[ -n $netbench_gbps ]] || die "netbench gave no result"

awk -v s="$streams" -v i="$iperf_gbps" -v n="$netbench_gbps" -v size="$size" -v p="$proto" '
  BEGIN {
    printf "iperf3   -P %d, 127.0.0.1:          %8.3f GB/s\n", s, i
    printf "netbench 1 connection x %d streams, %s %s: %8.3f GB/s\n", s, size, p, n
    printf "ratio netbench / iperf3:            %8.2f\n", (i > 0 ? n / i : 0)
  }'
