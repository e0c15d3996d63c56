#!/usr/bin/env bash
# Issues 30 and 38 on the fake NCCL: 8 rank processes (profiler v5) finish 40 AllReduces, then
# get stuck each way pilot_profiler_hang_job makes; with NCCL_PILOT_STALL_S=2,
# `nccl-pilot hang DIR --json` runs DELAYS seconds after the fault (the stop, the kill, the
# ranks in place) and must exit 1 with exactly the ranks at fault as suspects, no healthy rank
# frozen (nor any of a node whose clock runs 20 s behind), and the kind of hang named (kind,
# and its words in `why`); a healthy job that
# computes exits 0 with no stall. Every job is killed at the end: its ranks die with it
# (PR_SET_PDEATHSIG), stopped or not, and the test checks that none is left.
# Usage: hang_job_test.sh HANG_JOB PROFILER_MODULE NCCL_PILOT [DELAYS...]   (default: 2)
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: $0 HANG_JOB PROFILER_MODULE NCCL_PILOT [DELAYS...]" >&2; exit 2; }
job=$1 module=$2 tool=$3
shift 3
delays=("$@")
[[ ${#delays[@]} -gt 0 ]] || delays=(2)
hold=$((${delays[-1]} + 20))
work=$(mktemp -d /tmp/pilot-hang-job-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# check EXPECTED_EXIT PYTHON_ASSERTIONS SCENARIO...: `d` is hang's JSON, `s` its first stall,
# `dp` the stall of comm dp, `ok` a healthy rank never frozen.
check() {
  local expected=$1 asserts=$2
  shift 2
  local dir="$work/$*"
  dir=${dir// /_}
  mkdir -p "$dir"
  NCCL_PILOT_METRICS_DIR=$dir NCCL_PILOT_STALL_S=2 NCCL_PILOT_METRICS_PROXY=${PROXY:-off} \
    "$job" --module "$module" --scenario "$@" --hold "$hold" >"$dir/job.out" 2>"$dir/job.err" &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do
    grep -q stuck "$dir/job.out" 2>/dev/null && break
    sleep 0.05
  done
  grep -q stuck "$dir/job.out" || { echo "FAIL $*: the job never got stuck"; cat "$dir/job.err"; exit 1; }
  local fault=$SECONDS waited=0
  for delay in "${delays[@]}"; do
    sleep $((delay - waited))
    waited=$delay
    local rc=0 out="$dir/hang-$delay.json"
    "$tool" hang "$dir" --json >"$out" 2>"$dir/hang-$delay.err" || rc=$?
    if [[ $rc -ne $expected ]]; then
      echo "FAIL $* at ${delay} s: exit $rc, expected $expected"
      cat "$out" "$dir/hang-$delay.err"
      exit 1
    fi
    python3 - "$out" "$* at ${delay} s" "$asserts" <<'PY' || { cat "$dir/hang-$delay.err"; exit 1; }
import json, sys
d = json.load(open(sys.argv[1]))
s = d["stalls"][0] if d["stalls"] else None
dp = next((x for x in d["stalls"] if x["comm_name"] == "dp"), None)
suspects = {r for x in d["stalls"] for r in x["suspects"]}
ok = all(r["state"] != "frozen" for x in d["stalls"] for r in x["ranks"] if r["rank"] not in suspects)
for line in sys.argv[3].split(";"):
    line = line.strip()
    if line and not eval(line):
        print(f"FAIL {sys.argv[2]}: {line}\n{json.dumps(d, indent=1)}")
        sys.exit(1)
print(f"ok   {sys.argv[2]}: " + (f'({s["kind"]}) {s["why"]}' if s else "no stall"))
PY
  done
  (( SECONDS - fault <= ${delays[-1]} + 15 )) || echo "note: $* took $((SECONDS - fault)) s"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  # The ranks die with the parent, a stopped one too (their command line is the parent's).
  local mine="^$job --module $module --scenario $* "
  for _ in $(seq 50); do
    pgrep -f -- "$mine" >/dev/null || break
    sleep 0.1
  done
  if pgrep -f -- "$mine" >/dev/null; then
    echo "FAIL $*: ranks left behind after the job was killed:"
    pgrep -af -- "$mine"
    exit 1
  fi
}

check 1 'len(d["stalls"]) == 1; s["kind"] == "not_launched"; s["op"] == "AllReduce";
         s["seq"] == 40; s["not_launched"] == [3]; s["suspects"] == [3]; ok;
         s["frozen"] == [] and s["missing"] == []; s["stuck"] == [0, 1, 2, 4, 5, 6, 7];
         "rank 3 never launched" in s["why"]; s["stalled_s"] >= 2' \
  never-launch 3
check 1 'len(d["stalls"]) == 1; s["frozen"] == [5]; s["suspects"] == [5]; ok;
         s["kind"] == "frozen"; s["not_launched"] == []; "is stopped (state T" in s["why"]' \
  sigstop 5
PROXY=steps check 1 'len(d["stalls"]) == 1; s["stuck"] == list(range(8)); s["suspects"] == [4, 5];
         s["kind"] == "network"; ok;
         "rank 4" in s["why"] and "rank 5" in s["why"] and "channel 0" in s["why"]' \
  proxy 4 5
check 1 'len(d["stalls"]) == 1; s["missing"] == [6]; s["suspects"] == [6]; s["kind"] == "missing"' \
  missing 6
check 0 'd["stalls"] == []' \
  healthy
check 1 'len(d["stalls"]) == 1; s["kind"] == "mismatch"; s["suspects"] == [3]; ok;
         "AllGather #0" in s["why"] and "AllReduce #40" in s["why"]' \
  mismatch 3
check 1 'len(d["stalls"]) == 1; s["kind"] == "mismatch"; s["suspects"] == [2]; ok;
         "with 8 MiB" in s["why"] and "size mismatch" in s["why"]' \
  size-mismatch 2
check 1 'len(d["stalls"]) == 1; s["kind"] == "p2p_cycle"; s["suspects"] == [2, 3]; ok;
         "Recv #0 from rank 3" in s["why"] and "Recv #0 from rank 2" in s["why"]' \
  p2p-cycle 2 3
for how in blocking enqueued; do
  check 1 'len(d["stalls"]) == 2; all(x["kind"] == "order" for x in d["stalls"]); ok;
           all(x["suspects"] == [5] for x in d["stalls"]);
           "rank 5 runs dp AllReduce #40 before tp AllReduce #40" in s["why"]' \
    order-$how 5
done
check 1 'len(d["stalls"]) == 1; s["frozen"] == [1]; s["suspects"] == [1]; ok;
         not any(r["state"] == "frozen" for r in s["ranks"] if r["node"] == "node-b");
         any("node-b'"'"'s clock is 20 s behind" in n for n in d["notes"])' \
  clock-behind 1
check 1 'len(d["stalls"]) == 1; s["suspects"] == [3]; s["kind"] == "not_launched";
         s["frozen"] == []; "killed as a whole" in s["why"]; "py-spy" not in s["why"]' \
  kill-all 3
check 1 'len(d["stalls"]) == 1; s["suspects"] == [3]; s["kind"] == "dead"; ok;
         "is gone" in s["why"] and "py-spy" not in s["why"]' \
  die-idle 3
