#!/bin/sh
# Runs pilot_tuner_bench once per table size (the plugin reads its table once per process) and
# prints ns per getCollInfo call, the ratio to the empty call (no table) and the speedup over a
# first-match linear scan of the same rules.
# Usage: run_tuner_bench.sh BENCH_BINARY [RULE_COUNTS...]     (default counts: 0 10 100 1000)
# PILOT_BENCH_ARGS adds Google Benchmark flags (default: 5 repetitions, medians reported).
set -eu

if [ "$#" -lt 1 ]; then
  echo "usage: $0 BENCH_BINARY [RULE_COUNTS...]" >&2
  exit 2
fi
bench=$1
shift
[ "$#" -gt 0 ] || set -- 0 10 100 1000
args=${PILOT_BENCH_ARGS:---benchmark_repetitions=5 --benchmark_min_time=0.5}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Median cpu_time (ns) of benchmark $2 in CSV file $1.
median() {
  awk -F, -v name="\"$2_median\"" '$1 == name { print $4 }' "$1"
}

for n in "$@"; do
  echo "running: $bench --rules=$n $args" >&2
  # shellcheck disable=SC2086  # args is a list of flags
  "$bench" --rules="$n" $args --benchmark_report_aggregates_only=true \
    --benchmark_format=csv >"$out/$n.csv" 2>"$out/$n.log" || {
    cat "$out/$n.log" >&2
    echo "FAILED: $bench --rules=$n" >&2
    exit 1
  }
  grep -E '^(verified|table)' "$out/$n.log" >&2 || true
done

first=$1
empty=$(median "$out/$first.csv" BM_PilotGetCollInfo)
printf '\n%-8s %16s %14s %18s %10s\n' rules "pilot ns/call" "x empty call" "linear ns/call" speedup
for n in "$@"; do
  pilot=$(median "$out/$n.csv" BM_PilotGetCollInfo)
  linear=$(median "$out/$n.csv" BM_LinearScan)
  awk -v n="$n" -v p="$pilot" -v e="$empty" -v l="$linear" 'BEGIN {
    printf "%-8s %16.2f %14.2f %18.2f %10.2f\n", n, p, p / e, l, l / p }'
done
echo "(median CPU time of the repetitions; 'x empty call' is relative to --rules=$first)"
