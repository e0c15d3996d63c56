#!/usr/bin/env bash
# nccl-pilot monitor on files the library itself wrote: four ranks of the bundled demo job
# (examples/monitoring) replayed through the built profiler by the fake NCCL, then read back.
# The demo's rank 2 arrives late and its 16 MiB all-reduces run 30% below calibration: the
# text must name both, for the data-parallel collectives and for the expert-parallel all-to-all
# (a group of Send/Recv with every peer) and pipeline Send/Recv too; the page must stand alone,
# and bad input must be reported.
# Usage: monitor_cli_test.sh NCCL_PILOT REPLAY PROFILER_MODULE SOURCE_DIR
set -euo pipefail
[[ $# -eq 4 ]] || { echo "usage: $0 NCCL_PILOT REPLAY PROFILER_MODULE SOURCE_DIR" >&2; exit 2; }
pilot=$1 replay=$2 module=$3 src=$4
work=$(mktemp -d /tmp/pilot-monitor-XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
expect() { # TEXT FILE
  grep -qF -- "$1" "$2" || fail "'$1' not in $(basename "$2"):"$'\n'"$(cat "$2")"
}

for rank in 0 1 2 3; do
  NCCL_PILOT_METRICS_DIR="$work/job" NCCL_PILOT_TUNER_TABLE="$src/examples/monitoring/demo.table" \
    "$replay" --module "$module" --scenario "$src/examples/monitoring/demo.scenario" --rank "$rank"
done
"$pilot" monitor "$work/job" --html "$work/job.html" >"$work/out.txt" 2>"$work/err.txt" ||
  fail "monitor exited $?: $(cat "$work/err.txt")"
expect 'comm 0xda7a "dp": 4 ranks on 2 nodes (4 in the files)' "$work/out.txt"
expect "late arriver: rank 2 (its kernels were the shortest in 4 of 4 groups" "$work/out.txt"
grep -E '^  AllReduce +16-32MB +RING/SIMPLE +8  rule 2 \(line 6\) +400 .* 700\.0 +0\.7[0-9]  DRIFT$' \
  "$work/out.txt" >/dev/null || fail "the drifting 16 MiB band is not flagged: $(cat "$work/out.txt")"
[[ $(grep -c DRIFT "$work/out.txt") -eq 1 ]] || fail "only the 16 MiB band drifts"
expect "drift: 1 tuned group(s) below 80% of their calibrated bus bandwidth" "$work/out.txt"
expect "AllGather     256-512KB  RING/SIMPLE        4  rule 3 (line 7)        400" "$work/out.txt"
# Point-to-point: the all-to-all as one operation beside its Sends and Recvs, the pipeline's
# Sends and Recvs, and the late rank in both.
expect 'comm 0xe9 "ep": 4 ranks on 2 nodes (4 in the files)' "$work/out.txt"
expect "AlltoAll      1-2MB      P2P (grouped)      2  NCCL                   400" "$work/out.txt"
expect "Send          1-2MB      -                  2  NCCL                  1200" "$work/out.txt"
expect 'comm 0x99 "pp": 4 ranks on 2 nodes (4 in the files)' "$work/out.txt"
expect "Recv          4-8MB      -                  4  NCCL                   400" "$work/out.txt"
[[ $(grep -c "late arriver: rank 2 (its kernels were the shortest in" "$work/out.txt") -eq 3 ]] ||
  fail "rank 2 is the late arriver of all three communicators: $(cat "$work/out.txt")"

html=$work/job.html
[[ $(head -c 15 "$html") == "<!DOCTYPE html>" ]] || fail "not an HTML page"
# One chart per operation of each communicator: AllReduce, AllGather; AlltoAll, Send, Recv;
# Send, Recv.
[[ $(grep -o '<svg' "$html" | wc -l) -eq 7 ]] || fail "one chart per operation and communicator"
[[ $(grep -c '<script\|<link\|src=' "$html") -eq 0 ]] || fail "the page fetches or runs something"
[[ $(grep -o 'https\{0,1\}://[^" ]*' "$html" | grep -vc '^http://www.w3.org/2000/svg$' || true) -eq 0 ]] ||
  fail "a URL other than the SVG namespace"
expect "late arriver: rank 2" "$html"
expect '<tr class="warn"><td>AllReduce</td><td>16-32MB</td>' "$html"

# --drift 0.3: 0.73 is above 0.70, nothing drifts.
"$pilot" monitor "$work/job" --drift 0.3 >"$work/loose.txt"
[[ $(grep -c DRIFT "$work/loose.txt") -eq 0 ]] || fail "--drift 0.3 still flags a band"

# A summary line that is not JSON is a note naming file and line; the rest is still read.
cp "$(find "$work/job" -name '*.jsonl' | sort | head -n 1)" "$work/one.jsonl"
echo '{"kind":"collective", broken' >>"$work/one.jsonl"
"$pilot" monitor "$work/one.jsonl" >"$work/one.txt" 2>"$work/one.err" || fail "one file: exit $?"
expect "one.jsonl:" "$work/one.err"
expect "not a summary line" "$work/one.err"
expect "late arriver: one rank's file only, nothing to compare" "$work/one.txt"

# Nothing to read is an error.
mkdir "$work/empty"
if "$pilot" monitor "$work/empty" >"$work/none.txt" 2>&1; then fail "an empty directory succeeded"; fi
expect "nccl-pilot: error: no readable summary among the inputs" "$work/none.txt"
[[ $status -eq 0 ]] && echo "monitor: late arriver, drift, page and bad input as expected"
exit "$status"
