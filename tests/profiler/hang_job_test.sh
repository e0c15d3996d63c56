#!/usr/bin/env bash
# Issue 30's acceptance on the fake NCCL: 8 rank processes of one communicator (profiler v5)
# finish 40 AllReduces, then get stuck each way (pilot_profiler_hang_job); with
# NCCL_PILOT_STALL_S=2, 6 s later `nccl-pilot hang DIR --json` must exit 1 and name the rank
# (never launched: not_launched; SIGSTOPped: frozen; ProxyOps stopped between two ranks: both
# as suspects, the channel in `why`; a rank that never created the communicator: missing), as
# the only suspect; a healthy job that computes exits 0 with no stall. The state files are
# refreshed every second while operations are in flight, whatever the export interval (30 s).
# Usage: hang_job_test.sh HANG_JOB PROFILER_MODULE NCCL_PILOT
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 HANG_JOB PROFILER_MODULE NCCL_PILOT" >&2; exit 2; }
job=$1 module=$2 tool=$3
work=$(mktemp -d /tmp/pilot-hang-job-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# check SCENARIO... EXPECTED_EXIT PYTHON_ASSERTIONS (on `s`, the first stall, and `d`)
check() {
  local expected=$1 asserts=$2
  shift 2
  local dir="$work/$*"
  dir=${dir// /_}
  mkdir -p "$dir"
  NCCL_PILOT_METRICS_DIR=$dir NCCL_PILOT_STALL_S=2 NCCL_PILOT_METRICS_PROXY=${PROXY:-off} \
    "$job" --module "$module" --scenario "$@" --hold 30 >"$dir/job.out" 2>"$dir/job.err" &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    grep -q stuck "$dir/job.out" 2>/dev/null && break
    sleep 0.1
  done
  grep -q stuck "$dir/job.out" || { echo "FAIL $*: the job never got stuck"; cat "$dir/job.err"; exit 1; }
  sleep 6
  local rc=0
  "$tool" hang "$dir" --json >"$dir/hang.json" 2>"$dir/hang.err" || rc=$?
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [[ $rc -ne $expected ]]; then
    echo "FAIL $*: exit $rc, expected $expected"
    cat "$dir/hang.json" "$dir/hang.err"
    exit 1
  fi
  python3 - "$dir/hang.json" "$*" "$asserts" <<'PY' || { cat "$dir/hang.err"; exit 1; }
import json, sys
d = json.load(open(sys.argv[1]))
s = d["stalls"][0] if d["stalls"] else None
for line in sys.argv[3].split(";"):
    line = line.strip()
    if line and not eval(line):
        print(f"FAIL {sys.argv[2]}: {line}\n{json.dumps(d, indent=1)}")
        sys.exit(1)
print(f"ok   {sys.argv[2]}: " + (s["why"] if s else "no stall"))
PY
}

check 1 'len(d["stalls"]) == 1; s["op"] == "AllReduce"; s["seq"] == 40;
         s["not_launched"] == [3]; s["suspects"] == [3]; s["frozen"] == [] and s["missing"] == [];
         s["stuck"] == [0, 1, 2, 4, 5, 6, 7]; "rank 3" in s["why"]; s["stalled_s"] >= 2' \
  never-launch 3
check 1 'len(d["stalls"]) == 1; s["frozen"] == [5]; s["suspects"] == [5];
         s["not_launched"] == []; "rank 5" in s["why"]' \
  sigstop 5
PROXY=steps check 1 'len(d["stalls"]) == 1; s["stuck"] == list(range(8)); s["suspects"] == [4, 5];
         "rank 4" in s["why"] and "rank 5" in s["why"] and "channel 0" in s["why"]' \
  proxy 4 5
check 1 'len(d["stalls"]) == 1; s["missing"] == [6]; s["suspects"] == [6]' \
  missing 6
check 0 'd["stalls"] == []' \
  healthy
