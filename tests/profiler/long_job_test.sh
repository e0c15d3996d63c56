#!/usr/bin/env bash
# The long-job test (long_job.cc): one process through thousands of communicators, its block
# times, memory and file sizes checked by the program itself; then what it left behind read
# back: `nccl-pilot monitor` must report the weight-sync group's calls and bus bandwidth as the
# GPU times imply them, and the summary must count every aborted Broadcast and every all-to-all.
# Usage: long_job_test.sh LONG_JOB MODULE NCCL_PILOT|- [long_job options...]
# (- : no tool in this build, as under TSan; the monitor check is then left out.)
set -euo pipefail
job=$1 module=$2 tool=$3
shift 3
dir=$(mktemp -d /tmp/pilot-long-job-XXXXXX)
trap 'rm -rf "$dir"' EXIT

out=$("$job" --module "$module" --dir "$dir" "$@")
echo "$out"
expected=$(grep '^expected weight_sync:' <<<"$out")
calls=$(sed -E 's/.*calls ([0-9]+),.*/\1/' <<<"$expected")
busbw=$(sed -E 's/.*bus bandwidth ([0-9.]+) GB\/s.*/\1/' <<<"$expected")
aborted=$(sed -E 's/.*aborted ([0-9]+).*/\1/' <<<"$expected")
alltoalls=$(grep '^expected ep_alltoall:' <<<"$out" | sed -E 's/.*alltoalls ([0-9]+).*/\1/')

summary=$(ls "$dir"/*.jsonl)
fail=0
check() {  # what, got, want
  if [[ "$2" == "$3" ]]; then echo "PASS: $1: $2"; else echo "FAIL: $1: $2, want $3"; fail=1; fi
}
sync_line=$(jq -c 'select(.kind == "communicator" and .comm_name == "weight_sync")' "$summary")
check "weight_sync records in the summary" "$(grep -c . <<<"$sync_line")" 1
check "aborted Broadcasts counted" "$(jq '.skipped.finalized_in_flight' <<<"$sync_line")" "$aborted"
check "weight_sync Broadcasts measured" "$(jq '.measured' <<<"$sync_line")" "$calls"
if [[ "$alltoalls" != 0 ]]; then
  check "all-to-alls over two plans" \
    "$(jq -s 'map(select(.kind == "communicator" and .comm_name == "ep_alltoall"))
              | map(.p2p.groups.alltoall) | add' "$summary")" "$alltoalls"
fi
check "slots in use after the last finalize" \
  "$(jq -s 'map(select(.kind == "process"))[0].groups_in_use' "$summary")" 0

if [[ "$tool" != - ]]; then
  report=$("$tool" monitor "$dir")
  echo "$report"
  row=$(grep -A3 '"weight_sync"' <<<"$report" | grep -E '^  Broadcast ')
  check "monitor's weight_sync calls" "$(awk '{print $6}' <<<"$row")" "$calls"
  check "monitor's weight_sync bus bandwidth" "$(awk '{print $9}' <<<"$row")" \
    "$(printf '%.2f' "$busbw")"
fi
exit $fail
