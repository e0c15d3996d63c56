#!/bin/sh
# Runs pilot_tuner_bench once per case (the plugin reads its table once per process) and prints
# ns per getCollInfo call, the ratio to an empty function called the same way in the same run,
# and the speedup over a first-match linear scan of the same rules.
# Usage: run_tuner_bench.sh BENCH_BINARY [RULE_COUNTS...]     (default counts: 0 10 100 1000)
# The counts are spread tables (every collective x node count); PILOT_BENCH_DENSE lists the dense
# ones (all AllReduce on one shape, random sizes over the whole range; default "10 100 1000",
# "" for none); PILOT_BENCH_EXPLORE lists the dense counts run again with NCCL_PILOT_TUNER_EXPLORE
# = PILOT_BENCH_EXPLORE_FRACTION (default "1000" at 0.05, "" for none), once with the random
# sizes (every exploration a size's first) and, as "job" and "job-explore", with requests that
# repeat 64 sizes, as a training job's do. PILOT_BENCH_ARGS adds Google Benchmark flags
# (default: 5 repetitions, medians);
# PILOT_BENCH_MODULE measures another build of the plugin (--module=PATH) for A/B runs.
set -eu

if [ "$#" -lt 1 ]; then
  echo "usage: $0 BENCH_BINARY [RULE_COUNTS...]" >&2
  exit 2
fi
bench=$1
shift
[ "$#" -gt 0 ] || set -- 0 10 100 1000
dense=${PILOT_BENCH_DENSE-10 100 1000}
explore=${PILOT_BENCH_EXPLORE-1000}
fraction=${PILOT_BENCH_EXPLORE_FRACTION:-0.05}
args=${PILOT_BENCH_ARGS:---benchmark_repetitions=5 --benchmark_min_time=0.5}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Median cpu_time (ns) of benchmark $2 in CSV file $1.
median() {
  awk -F, -v name="\"$2_median\"" '$1 == name { print $4 }' "$1"
}

# run CASE RULES [FLAGS...]: one process, its CSV in $out/CASE-RULES.csv.
run() {
  name=$1-$2
  flags=
  [ "$1" = dense ] && flags=--dense
  [ "$1" = explore ] && flags="--dense --explore=$fraction"
  [ "$1" = job ] && flags="--dense --distinct=64"
  [ "$1" = job-explore ] && flags="--dense --distinct=64 --explore=$fraction"
  [ -n "${PILOT_BENCH_MODULE:-}" ] && flags="$flags --module=$PILOT_BENCH_MODULE"
  echo "running: $bench --rules=$2 $flags $args" >&2
  # shellcheck disable=SC2086  # flags and args are lists of flags
  "$bench" --rules="$2" $flags $args --benchmark_report_aggregates_only=true \
    --benchmark_format=csv >"$out/$name.csv" 2>"$out/$name.log" || {
    cat "$out/$name.log" >&2
    echo "FAILED: $bench --rules=$2 $flags" >&2
    exit 1
  }
  grep -E '^(verified|table)' "$out/$name.log" >&2 || true
  echo "$1 $2" >>"$out/cases"
}

for n in "$@"; do run spread "$n"; done
for n in $dense; do run dense "$n"; done
for n in $explore; do run explore "$n"; run job "$n"; run job-explore "$n"; done

printf '\n%-11s %6s %14s %12s %15s %10s\n' table rules "pilot ns/call" "x empty fn" "linear ns/call" speedup
while read -r kind n; do
  csv=$out/$kind-$n.csv
  pilot=$(median "$csv" BM_PilotGetCollInfo)
  empty=$(median "$csv" BM_EmptyFunction)
  linear=$(median "$csv" BM_LinearScan)
  awk -v k="$kind" -v n="$n" -v p="$pilot" -v e="$empty" -v l="$linear" 'BEGIN {
    printf "%-11s %6s %14.2f %12.2f %15.2f %10.2f\n", k, n, p, p / e, l, l / p }'
done <"$out/cases"
echo "(median CPU time of the repetitions; 'x empty fn' divides by an empty function of the same"
echo " signature called through a pointer over the same requests, in the same process;"
echo " 'explore' is the dense table with NCCL_PILOT_TUNER_EXPLORE=$fraction; 'job' the dense table"
echo " with requests repeating 64 sizes, 'job-explore' the same exploring)"
