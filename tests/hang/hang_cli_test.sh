#!/usr/bin/env bash
# nccl-pilot hang on state files written here: a job whose rank 3 never launched AllReduce #40
# (exit 1, rank 3 the only suspect, in text and JSON), the same job healthy (exit 0), notes on
# stderr for a bad file, files judged long after they were written, and bad input (exit 2).
# Usage: hang_cli_test.sh NCCL_PILOT
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 NCCL_PILOT" >&2; exit 2; }
pilot=$1
work=$(mktemp -d /tmp/pilot-hang-XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
expect() { # TEXT FILE
  grep -qF -- "$1" "$2" || fail "'$1' not in $(basename "$2"):"$'\n'"$(cat "$2")"
}
now=1764770000000

# state DIR RANK LAUNCHED [WRITTEN_MS]: rank RANK of the 4-rank comm "dp", AllReduce #0..#39
# done, LAUNCHED launched (41: #40 in flight for 6 s).
state() {
  local dir=$1 rank=$2 launched=$3 written=${4:-$((now - 300))} oldest=null in_flight=0 wait=0
  local stalled=false
  if [[ $launched -eq 41 ]]; then
    oldest='{"op":"AllReduce","seq":40,"bytes":4194304,"peer":-1,"age_s":6.0,"channels":2,"started":[0,1],"stopped":[]}'
    in_flight=1 wait=6.0 stalled=true
  fi
  mkdir -p "$dir"
  printf '{"format":"nccl-pilot-state","version":1,"node":"n0","pid":%d,"job":"4711","library":"t","written_ms":%d,"next_due_ms":%d,"stall_s":2,"final":false,"comms":[{"comm":"0xd9","comm_name":"dp","rank":%d,"nranks":4,"n_nodes":1,"ops":{"AllReduce":[%d,40]},"sends":{},"recvs":{},"in_flight":%d,"last":{"op":"AllReduce","seq":%d,"bytes":4194304,"peer":-1,"age_s":6.0},"last_done_age_s":6.0,"oldest":%s,"waiting_s":%s,"stalled":%s,"window":{"s":30,"keys":[]}}]}\n' \
    $((100 + rank)) "$written" $((written + 1000)) "$rank" "$launched" "$in_flight" \
    $((launched - 1)) "$oldest" "$wait" "$stalled" >"$dir/nccl_pilot_n0_$((100 + rank)).state.json"
}

for rank in 0 1 2; do state "$work/hung" $rank 41; done
state "$work/hung" 3 40
rc=0
"$pilot" hang "$work/hung" --now $now >"$work/hung.txt" 2>"$work/hung.err" || rc=$?
[[ $rc -eq 1 ]] || fail "a stalled job exits 1, not $rc: $(cat "$work/hung.err")"
expect 'STALLED comm 0xd9 "dp" (4 ranks, job 4711): AllReduce #40, 4M bytes, stalled 6.3 s' "$work/hung.txt"
expect "  not launched  3" "$work/hung.txt"
expect "  stuck         0-2" "$work/hung.txt"
expect "  suspects      3" "$work/hung.txt"
expect "why (not_launched): rank 3 never launched AllReduce #40 on comm dp: its last operation there was AllReduce #39, 6.3 s ago" "$work/hung.txt"
grep -qE '^ +3  not_launched +n0 +103 +AllReduce #39 +6\.3 +- +0\.3 *$' "$work/hung.txt" ||
  fail "no row for rank 3: $(cat "$work/hung.txt")"

rc=0
"$pilot" hang "$work/hung" --now $now --json >"$work/hung.json" || rc=$?
[[ $rc -eq 1 ]] || fail "--json: a stalled job exits 1, not $rc"
for field in '"comm":"0xd9"' '"comm_name":"dp"' '"op":"AllReduce"' '"seq":40' '"bytes":4194304' \
  '"not_launched":[3]' '"frozen":[]' '"stuck":[0,1,2]' '"missing":[]' '"suspects":[3]' \
  '"stalled_s":6.3' '"files":4' '"stragglers":[]' '"state":"not_launched"'; do
  expect "$field" "$work/hung.json"
done
[[ $(wc -l <"$work/hung.json") -eq 1 ]] || fail "--json is one line"

# --stall-s above the wait: nothing is stalled.
rc=0
"$pilot" hang "$work/hung" --now $now --stall-s 60 >"$work/loose.txt" || rc=$?
[[ $rc -eq 0 ]] || fail "--stall-s 60: exit $rc"
expect "nothing stalled" "$work/loose.txt"

# Healthy: every rank launched and completed #39, nothing in flight.
for rank in 0 1 2 3; do state "$work/healthy" $rank 40; done
rc=0
"$pilot" hang "$work/healthy" --now $now >"$work/healthy.txt" || rc=$?
[[ $rc -eq 0 ]] || fail "a healthy job exits 0, not $rc"
expect "4 state file(s), 0 summary file(s), 1 communicator(s) as of 2025-12-03 13:53:20 UTC: nothing stalled" "$work/healthy.txt"

# A truncated file is a note on stderr; the rest is judged.
head -c 100 "$work/hung/nccl_pilot_n0_100.state.json" >"$work/hung/cut.state.json"
rc=0
"$pilot" hang "$work/hung" --now $now >/dev/null 2>"$work/cut.err" || rc=$?
[[ $rc -eq 1 ]] || fail "one bad file among good ones: exit $rc"
expect "note: $work/hung/cut.state.json: cut short at byte 100 (truncated or half-written)" "$work/cut.err"

# Without --now, files two hours old are judged as of the newest: the same verdict.
for rank in 0 1 2; do state "$work/old" $rank 41 $(($(date +%s) * 1000 - 7200000)); done
state "$work/old" 3 40 $(($(date +%s) * 1000 - 7200000))
rc=0
"$pilot" hang "$work/old" --json >"$work/old.json" 2>"$work/old.err" || rc=$?
[[ $rc -eq 1 ]] || fail "gathered files: exit $rc"
expect '"suspects":[3]' "$work/old.json"
expect '"frozen":[]' "$work/old.json"
expect "judged as of the newest" "$work/old.err"

# Bad input: exit 2 with one error line.
mkdir "$work/empty"
bad() { # WHAT EXPECTED ARGS...
  local what=$1 expected=$2
  shift 2
  rc=0
  "$pilot" hang "$@" >"$work/bad.txt" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || fail "$what: exit $rc, not 2"
  expect "$expected" "$work/bad.txt"
}
bad "an empty directory" "nccl-pilot: error: no nccl-pilot state file (*.state.json) under the inputs" "$work/empty"
bad "a missing path" "nccl-pilot: error: no readable input" "$work/absent"
echo '{"format":"other"}' >"$work/empty/x.state.json"
bad "only a foreign file" "none of the 1 state file(s) could be used" "$work/empty"
bad "a negative --stall-s" "stall-s" "$work/hung" --stall-s -1
bad "no input" "inputs" --json
bad "files and --prometheus both" "one of them" "$work/hung" --prometheus http://127.0.0.1:1
bad "a Prometheus that does not answer" "cannot connect to 127.0.0.1:1" --prometheus http://127.0.0.1:1
bad "a URL that is not http" "only http://" --prometheus https://prometheus:9090
[[ $status -eq 0 ]] && echo "hang: verdicts, JSON, exit statuses and bad input as expected"
exit "$status"
