#!/usr/bin/env bash
# How `nccl-pilot hang`, `monitor` and `doctor --job` scale with the ranks of a job: the recorded
# stuck job cloned to N ranks (tests/bench/hang_job_clone.py: 8 per node, rank 3 never launched;
# a state file, a summary and a provenance record per rank), each command run RUNS times on it
# (median). Prints per command and N the seconds, the microseconds per rank and the peak memory,
# and checks that each verdict still names rank 3 (a benchmark, not a timed test: no bound here;
# docs/monitoring.md has the figures).
# Usage: run_hang_scale.sh NCCL_PILOT [RANKS...]     (default: 1024 16384 65536; RUNS=3)
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 NCCL_PILOT [RANKS...]" >&2; exit 2; }
tool=$1
shift
[[ $# -gt 0 ]] || set -- 1024 16384 65536
runs=${RUNS:-3}
here=$(cd "$(dirname "$0")" && pwd)
examples=$here/../../examples/monitoring
work=$(mktemp -d /tmp/pilot-hang-scale-XXXXXX)
trap 'rm -rf "$work"' EXIT

# run_once OUT CMD...: wall seconds and peak kB of one run, "S KB" on stdout; the output in OUT.
run_once() {
  local out=$1
  shift
  local rc=0
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >"$out" 2>"$work/err" || rc=$?
  if [[ $rc -gt 1 ]]; then
    echo "FAIL: $* exited $rc" >&2
    cat "$work/err" >&2
    exit 1
  fi
  tail -n 1 "$work/time"
}

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

printf '%-8s %-12s %9s %12s %10s\n' ranks command seconds 'us/rank' 'peak MiB'
for n in "$@"; do
  dir=$work/job-$n
  python3 "$here/hang_job_clone.py" --ranks "$n" --stuck "$examples/stuck-job" \
    --provenance "$examples/odd-rank-job" --out "$dir"
  for command in hang monitor doctor; do
    case $command in
      hang) args=(hang "$dir" --json) ;;
      monitor) args=(monitor "$dir") ;;
      doctor) args=(doctor --job "$dir") ;;
    esac
    : >"$work/samples"
    for _ in $(seq "$runs"); do run_once "$work/out" "$tool" "${args[@]}" >>"$work/samples"; done
    seconds=$(cut -d' ' -f1 "$work/samples" | median)
    kb=$(cut -d' ' -f2 "$work/samples" | median)
    case $command in
      hang) python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["stalls"]; sys.exit(0 if s and s[0]["suspects"]==[3] else 1)' "$work/out" ||
        { echo "FAIL: hang at $n ranks does not name rank 3 alone" >&2; exit 1; } ;;
      monitor) grep -q "rank 3" "$work/out" || { echo "FAIL: monitor at $n ranks names no rank 3" >&2; exit 1; } ;;
    esac
    awk -v n="$n" -v c="$command" -v s="$seconds" -v kb="$kb" \
      'BEGIN {printf "%-8d %-12s %9.2f %12.1f %10.0f\n", n, c, s, s * 1e6 / n, kb / 1024}'
  done
  rm -rf "$dir"
done
