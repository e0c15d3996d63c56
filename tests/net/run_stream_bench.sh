#!/bin/sh
# Loopback throughput of the socket transport against iperf3 with the same number of streams,
# in one run (interleaved, so both see the same machine load). Not a test: the figures go to
# docs/performance.md ("TCP transport").
#
# Usage: [PILOT_BENCH_RT=1] run_stream_bench.sh BUILD_DIR [STREAMS] [SIZES] [ROUNDS]
#   STREAMS  comma list (default 1,2,4,8)    SIZES  comma list (default 1M,4M)
#   ROUNDS   repetitions of each pair (default 3; the best of each is printed)
#   PILOT_BENCH_RT=1 runs both sides of both tools at real-time priority (chrt -f 10, root):
#   on a shared machine this measures the transports instead of the scheduler (a polling
#   transport that yields loses every time slice to busy neighbours; a blocking iperf3 does not).
set -eu
build=$1
streams=${2:-1,2,4,8}
sizes=${3:-1M,4M}
rounds=${4:-3}
bench="$build/bin/pilot_net_stream_bench"
command -v iperf3 >/dev/null || { echo "iperf3 not found (apt-get install iperf3)" >&2; exit 1; }
[ -x "$bench" ] || { echo "$bench not built" >&2; exit 1; }
port=52011
rt=""
[ "${PILOT_BENCH_RT:-0}" = 1 ] && rt="chrt -f 10"

iperf_gbs() {  # $1 = parallel streams; prints GB/s (10^9 bytes per second), receiver side
  $rt iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
  server=$!
  sleep 0.3
  $rt iperf3 -c 127.0.0.1 -p "$port" -t 4 -P "$1" -J 2>/dev/null |
    sed -n 's/.*"bits_per_second":[[:space:]]*\([0-9.e+]*\).*/\1/p' | tail -1 |
    awk '{ printf "%.2f", $1 / 8 / 1e9 }'
  wait "$server" 2>/dev/null || true
}

best() { tr ' ' '\n' | sort -g | tail -1; }

printf '%8s %6s %12s %12s %7s\n' streams size "pilot GB/s" "iperf3 GB/s" ratio
for n in $(echo "$streams" | tr ',' ' '); do
  for size in $(echo "$sizes" | tr ',' ' '); do
    ours=""
    theirs=""
    i=0
    while [ "$i" -lt "$rounds" ]; do
      ours="$ours $($rt "$bench" --streams "$n" --sizes "$size" --bytes 4G | awk 'NR == 2 { print $3 }')"
      theirs="$theirs $(iperf_gbs "$n")"
      i=$((i + 1))
    done
    o=$(echo "$ours" | best)
    t=$(echo "$theirs" | best)
    printf '%8s %6s %12s %12s %7s\n' "$n" "$size" "$o" "$t" \
      "$(awk -v o="$o" -v t="$t" 'BEGIN { if (t > 0) printf "%.2f", o / t; else print "-" }')"
  done
done
