#!/usr/bin/env bash
# nccl-pilot monitor on files the library itself wrote: four ranks of the bundled demo job
# (examples/monitoring) replayed through the built profiler by the fake NCCL, then read back.
# The demo's rank 2 arrives late and its 16 MiB all-reduces run 30% below calibration: the
# text must name both, for the data-parallel collectives and for the expert-parallel all-to-all
# (a group of Send/Recv with every peer) and pipeline Send/Recv too; the page must stand alone,
# and bad input must be reported. The job's own state files (final and empty once it ended) add
# nothing; live state files written here (rank 2 the straggler of "dp" in the last export
# window, "ep" stalled on rank 3) add the live section to the text and the page.
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

# The job ended: its state files are each process's final, empty one. No live section.
[[ -n $(find "$work/job" -name '*.state.json') ]] || fail "the library wrote no state file"
if grep -q '^live' "$work/out.txt" || grep -q '<h2>live</h2>' "$work/job.html"; then
  fail "a live section from the final state files of a job that ended"
fi
[[ ! -s $work/err.txt ]] || fail "notes on a clean job: $(cat "$work/err.txt")"

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

# Live state files beside the summaries, as a job writes them while it runs (written two hours
# ago: judged as of the newest, as gathered files are). Rank r is node n(r/2), pid 200+r, job
# 4711. On "dp" every AllReduce and AllGather completed, and in the last export window rank 2's
# kernels were the shortest: 700 us against 1000 (16M), 70 against 100 (256K), 100 calls each,
# so the others lost (300 + 30) / 2 = 165 us per operation. On "ep" ranks 0-2 wait 6 s in
# AlltoAll #40, which rank 3 never launched; their windows are even (no straggler).
live_state() { # DIR RANK
  local dir=$1 rank=$2 written=$(($(date +%s) * 1000 - 7200000)) ar=1000 ag=100 ep
  [[ $rank -eq 2 ]] && ar=700 ag=70
  local window='"window":{"s":30,"keys":[{"op":"AlltoAll","bytes":1048576,"calls":10,"mean_us":500}]}'
  if [[ $rank -eq 3 ]]; then
    ep='"ops":{"AlltoAll":[40,40]},"sends":{},"recvs":{},"in_flight":0,"last":{"op":"AlltoAll","seq":39,"bytes":1048576,"peer":-1,"age_s":6.0},"last_done_age_s":6.0,"oldest":null,"waiting_s":0,"stalled":false'
  else
    ep='"ops":{"AlltoAll":[41,40]},"sends":{},"recvs":{},"in_flight":1,"last":{"op":"AlltoAll","seq":40,"bytes":1048576,"peer":-1,"age_s":6.0},"last_done_age_s":6.0,"oldest":{"op":"AlltoAll","seq":40,"bytes":1048576,"peer":-1,"age_s":6.0,"channels":2,"started":[0,1],"stopped":[]},"waiting_s":6.0,"stalled":true'
  fi
  mkdir -p "$dir"
  printf '{"format":"nccl-pilot-state","version":1,"node":"n%d","pid":%d,"job":"4711","library":"t","written_ms":%d,"next_due_ms":%d,"stall_s":2,"final":false,"comms":[%s,%s]}\n' \
    $((rank / 2)) $((200 + rank)) "$written" $((written + 1000)) \
    "$(printf '{"comm":"0xda7a","comm_name":"dp","rank":%d,"nranks":4,"n_nodes":2,"ops":{"AllReduce":[400,400],"AllGather":[400,400]},"sends":{},"recvs":{},"in_flight":0,"last":{"op":"AllGather","seq":399,"bytes":262144,"peer":-1,"age_s":6.5},"last_done_age_s":6.5,"oldest":null,"waiting_s":0,"stalled":false,"window":{"s":30,"keys":[{"op":"AllReduce","bytes":16777216,"calls":100,"mean_us":%d},{"op":"AllGather","bytes":262144,"calls":100,"mean_us":%d}]}}' "$rank" "$ar" "$ag")" \
    "$(printf '{"comm":"0xe9","comm_name":"ep","rank":%d,"nranks":4,"n_nodes":2,%s,%s}' "$rank" "$ep" "$window")" \
    >"$dir/nccl_pilot_n$((rank / 2))_$((200 + rank)).state.json"
}
mkdir "$work/live"
cp "$work"/job/*.jsonl "$work/live/"
for rank in 0 1 2 3; do live_state "$work/live" $rank; done
"$pilot" monitor "$work/live" --html "$work/live.html" >"$work/live.txt" 2>"$work/live.err" ||
  fail "monitor with live state exited $?: $(cat "$work/live.err")"
expect "judged as of the newest" "$work/live.err"
expect "live: 4 state file(s), 2 communicator(s) as of " "$work/live.txt"
expect ": 1 stalled" "$work/live.txt"
stall_line='  STALLED comm 0xe9 "ep" (4 ranks, job 4711): AlltoAll #40, 1M bytes, stalled 6.0 s; suspects 3; why: rank 3 never launched AlltoAll #40 on comm ep: its last operation there was AlltoAll #39, 6.0 s ago'
expect "$stall_line" "$work/live.txt"
expect "py-spy dump --pid 203 on n1); every rank: nccl-pilot hang $work/live" "$work/live.txt"
[[ $(grep -c STALLED "$work/live.txt") -eq 1 ]] || fail "one stalled communicator, one line"
expect '  straggler (last export window): comm 0xda7a "dp" (job 4711): rank 2 (the shortest in 2 of 2 groups): the others lost 0.165 ms per operation waiting for it' "$work/live.txt"
expect "  stragglers: none in the other 1 communicator(s)" "$work/live.txt"
# The live section comes first; the summaries' tables and conclusions follow unchanged.
[[ $(grep -n '^live:' "$work/live.txt" | cut -d: -f1) -lt $(grep -n '^comm 0x99' "$work/live.txt" | cut -d: -f1) ]] ||
  fail "the live section is not before the communicators' tables"
rest() { sed -e '/^live:/,/^$/d' -e '/^wrote /d' "$1"; }
diff <(rest "$work/live.txt") <(rest "$work/out.txt") >/dev/null ||
  fail "the live state changed the rest of the text: $(diff <(rest "$work/live.txt") <(rest "$work/out.txt"))"
lhtml=$work/live.html
expect '<h2>live</h2>' "$lhtml"
expect '<div><b>1</b>stalled now</div><div><b>1</b>stragglers now</div>' "$lhtml"
expect '<p class="warn"><b>STALLED</b> comm 0xe9 &quot;ep&quot; (4 ranks, job 4711): AlltoAll #40, 1M bytes, stalled 6.0 s; suspects 3<br>why: rank 3 never launched AlltoAll #40' "$lhtml"
expect "<br>every rank: <code>nccl-pilot hang $work/live</code></p>" "$lhtml"
expect '<tr class="warn"><td>0xda7a &quot;dp&quot;</td><td>4711</td><td class="num">2</td><td class="num">2 / 2</td><td class="num">0.165</td></tr>' "$lhtml"
[[ $(grep -c '<script\|<link\|src=' "$lhtml") -eq 0 ]] || fail "the live page fetches or runs something"
[[ $(grep -o '<svg' "$lhtml" | wc -l) -eq 7 ]] || fail "the live page lost a chart"

# A job hung in its first operation has measured nothing yet: the live section alone, exit 0.
mkdir "$work/first"
for rank in 0 1 2 3; do live_state "$work/first" $rank; done
"$pilot" monitor "$work/first" >"$work/first.txt" 2>"$work/first.err" ||
  fail "state files without summaries: exit $?: $(cat "$work/first.err")"
expect "note: no readable summary among the inputs" "$work/first.err"
expect "$stall_line" "$work/first.txt"
grep -q '^drift' "$work/first.txt" && fail "a drift line without any summary"

# State files none of which can be used: one line saying so, each file a note.
mkdir "$work/cut"
cp "$work"/job/*.jsonl "$work/cut/"
head -c 100 "$work/live/nccl_pilot_n0_200.state.json" >"$work/cut/nccl_pilot_n0_200.state.json"
"$pilot" monitor "$work/cut" >"$work/cut.txt" 2>"$work/cut.err" || fail "a cut state file: exit $?"
expect "live: none of the 1 state file(s) could be used (notes above)" "$work/cut.txt"
expect "nccl_pilot_n0_200.state.json: cut short at byte 100" "$work/cut.err"

# Nothing to read is an error.
mkdir "$work/empty"
if "$pilot" monitor "$work/empty" >"$work/none.txt" 2>&1; then fail "an empty directory succeeded"; fi
expect "nccl-pilot: error: no readable summary among the inputs" "$work/none.txt"
[[ $status -eq 0 ]] && echo "monitor: late arriver, drift, page, live section and bad input as expected"
exit "$status"
