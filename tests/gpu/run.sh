#!/usr/bin/env bash
# GPU validation with the real NCCL: several ranks as separate processes on one machine (one
# GPU is enough), each with its own NCCL_HOSTID, so NCCL treats every rank as another host and
# must move all data through the network plugin. Eight phases, all but hang and provenance a full
# sweep of all-reduce, all-gather and reduce-scatter with exact result checks:
#   baseline   NCCL's own Socket transport, no plugins: proves the NCCL_HOSTID setup works and
#              records NCCL's default decisions
#   pilot      our net plugin (NCCL_NET=Pilot, so a failure to load is fatal) and our tuner
#              without a table
#   tuned      the same with tests/gpu/validation.table, whose choices differ from NCCL's
#   topo-only  NCCL_PILOT_TRANSPORT=none: NCCL uses its own Socket transport, still with our
#              topology file and tuner
#   metrics    tuned again with our profiler (NCCL_PROFILER_PLUGIN) measuring every collective
#              into <phase>/metrics (NCCL_PILOT_METRICS_DIR), then an all-to-all of 256 KiB per
#              peer and a ring Send/Recv of 512 KiB (rank.py, PILOT_GPU_P2P_BYTES), then a
#              weight-sync group rebuilt 20 times (PILOT_GPU_CHURN): one folded record, every
#              slot given back
#   explore    NCCL's Socket transport, tuner and profiler from the net plugin's library (one
#              copy, as by default), NCCL_PILOT_TUNER_EXPLORE=0.25: every rank must run the same
#              cell on every call, and the cells exploration selected
#   hang       NCCL's Socket transport and our profiler alone (NCCL_PILOT_STALL_S=3), 1 MiB
#              all-reduces (hang_rank.py, not the sweep): rank 1 calls one 15 s late, and is
#              stopped (SIGSTOP) for 10 s in another while the others wait; run.sh runs
#              `nccl-pilot hang` during each pause (drive_hang), which must name rank 1; every
#              result exact. About 40 s (an estimate: not yet run on a GPU)
#   provenance NCCL's Socket transport; our net (topology only), tuner and profiler each from
#              its own library, NCCL_PILOT_METRICS=1, RANK set as torchrun sets it; one 64K
#              size, one iteration: each rank's provenance record must name the libnccl PyTorch
#              mapped (rank.py reads /proc/self/maps) and the version torch.cuda.nccl.version()
#              gives, and our three plugins; at most one WARN from us per rank
#              (provenance_check.py; issue 31)
# then tests/gpu/check.py prints one PASS/FAIL line per check with its evidence and writes
# summary.json. Everything lands in the output folder. docs/validation.md explains each check.
#
# Usage: tests/gpu/run.sh [--out DIR] [--build DIR] [--ranks N] [--gpus N] [--sizes LIST]
#                         [--iters N] [--phases LIST] [--python PY] [--phase-timeout S]
#        tests/gpu/run.sh --dry-run RECORDED_DIR [--out DIR] [--build DIR]
#   --gpus     rank r runs on GPU r % N (1: all share GPU 0, enough for every check; with a GPU
#              per rank the per-phase times compare our transport with NCCL's Socket)
#   --dry-run  no GPU: copy a recorded run (logs and results of a real one) and check it with the
#              expectations the built CLI computes now (what CI runs)
# Defaults: --out gpu-validation --build build --ranks 4 --gpus 1 --sizes 1K,8K,64K,512K,4M,16M
#           --iters 3 --phases baseline,pilot,tuned,topo-only,metrics,explore,hang,provenance
#           --phase-timeout 60 (the hang phase gets its 29 s of pauses on top)
# Needs: the built libnccl-net-pilot.so, libnccl-tuner-pilot.so, libnccl-profiler-pilot.so and
# nccl-pilot (BUILD/lib, BUILD/bin); for a real run python3 with PyTorch and its NCCL, and a GPU
# (without PyTorch a real run prints why and exits 77: skipped).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=gpu-validation
build=build
ranks=4
gpus=1
sizes=1K,8K,64K,512K,4M,16M
iters=3
phases=baseline,pilot,tuned,topo-only,metrics,explore,hang,provenance
python=${PYTHON:-python3}
phase_timeout=60
dry_run=""

die() {
  echo "gpu/run.sh: $*" >&2
  exit 2
}
need_value() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value"; }

while [[ $# -gt 0 ]]; do
  case $1 in
  --out) need_value "$@"; out=$2; shift 2 ;;
  --build) need_value "$@"; build=$2; shift 2 ;;
  --ranks) need_value "$@"; ranks=$2; shift 2 ;;
  --gpus) need_value "$@"; gpus=$2; shift 2 ;;
  --sizes) need_value "$@"; sizes=$2; shift 2 ;;
  --iters) need_value "$@"; iters=$2; shift 2 ;;
  --phases) need_value "$@"; phases=$2; shift 2 ;;
  --python) need_value "$@"; python=$2; shift 2 ;;
  --phase-timeout) need_value "$@"; phase_timeout=$2; shift 2 ;;
  --dry-run) need_value "$@"; dry_run=$2; shift 2 ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[[ $ranks =~ ^[0-9]+$ && $ranks -ge 2 && $ranks -le 16 ]] || die "--ranks takes 2..16"
[[ $gpus =~ ^[0-9]+$ && $gpus -ge 1 ]] || die "--gpus takes a positive number"
[[ $iters =~ ^[0-9]+$ && $iters -ge 1 ]] || die "--iters takes a positive number"
[[ $phase_timeout =~ ^[0-9]+$ && $phase_timeout -ge 10 ]] || die "--phase-timeout takes >= 10"
for phase in ${phases//,/ }; do
  case $phase in baseline | pilot | tuned | topo-only | metrics | explore | hang | provenance) ;;
  *) die "unknown phase '$phase'" ;;
  esac
done

# Nothing from the caller's environment may steer NCCL or our library in this run.
while IFS= read -r name; do unset "$name"; done < <(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\)=.*/\1/p')

cli=$build/bin/nccl-pilot
net_lib=$(realpath -m "$build/lib/libnccl-net-pilot.so")
tuner_lib=$(realpath -m "$build/lib/libnccl-tuner-pilot.so")
profiler_lib=$(realpath -m "$build/lib/libnccl-profiler-pilot.so")
[[ -x $cli ]] || die "$cli not found (build first: cmake --preset release && cmake --build --preset release)"
[[ -f $net_lib && -f $tuner_lib && -f $profiler_lib ]] || die "plugins not found under $build/lib"

# "4K" -> 4096 (binary suffixes, as everywhere in nccl-pilot).
to_bytes() {
  local v=$1 n
  n=${v%[KMG]}
  [[ $n =~ ^[0-9]+$ ]] || die "bad size '$v'"
  case $v in
  *K) echo $((n << 10)) ;;
  *M) echo $((n << 20)) ;;
  *G) echo $((n << 30)) ;;
  *) echo "$n" ;;
  esac
}

mkdir -p "$out"
out=$(realpath "$out")
# Empties the output folder, but only one that is empty or holds an earlier run.
clear_out() {
  if [[ -n $(ls -A "$out") && ! -f $out/run.json ]]; then
    die "$out is not empty and holds no earlier run (run.json); refusing to clear it"
  fi
  rm -rf "${out:?}"/*
}

if [[ -n $dry_run ]]; then
  [[ -f $dry_run/run.json ]] || die "$dry_run holds no recorded run (run.json missing)"
  if [[ $(realpath "$dry_run") != "$out" ]]; then
    clear_out
    cp -R "$dry_run"/. "$out"/
  fi
  nccl_version=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["nccl"])' "$out/run.json")
  ranks=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["ranks"])' "$out/run.json")
else
  command -v "$python" >/dev/null || die "$python not found"
  command -v timeout >/dev/null || die "timeout (coreutils) not found"
  byte_sizes=""
  for s in ${sizes//,/ }; do
    b=$(to_bytes "$s")
    ((b % (4 * ranks) == 0)) || die "size $s is not a multiple of 4 x $ranks bytes"
    byte_sizes+=${byte_sizes:+,}$b
  done
  # Every phase runs PyTorch's NCCL: without it there is nothing to validate (a skip, not a
  # failure of ours).
  torch_error=$(mktemp)
  if ! nccl_version=$("$python" -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))' \
    2>"$torch_error"); then
    echo "gpu/run.sh: SKIP: $python cannot import torch or read its NCCL version:" \
      "$(tail -n 1 "$torch_error")"
    rm -f "$torch_error"
    exit 77
  fi
  rm -f "$torch_error"
  clear_out
  cp "$here/validation.table" "$out/validation.table"
  table_sha=$("$cli" explain --table "$out/validation.table" --digest) ||
    die "nccl-pilot explain --digest failed"
  {
    echo "{"
    echo "  \"nccl\": \"$nccl_version\","
    echo "  \"table_sha256\": \"$table_sha\","
    echo "  \"ranks\": $ranks,"
    echo "  \"gpus\": $gpus,"
    echo "  \"sizes\": [$byte_sizes],"
    echo "  \"iters\": $iters,"
    echo "  \"phases\": \"$phases\","
    echo "  \"started\": \"$(date -u +%FT%TZ)\","
    echo "  \"pilot\": \"$("$cli" version 2>/dev/null | head -1)\""
    echo "}"
  } >"$out/run.json"
  {
    nvidia-smi -L 2>&1 || true
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
    "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' 2>&1
    uname -a
    echo "libraries our detection dlopens:"
    ldconfig -p | grep -E 'libnvidia-ml|libhwloc|libibverbs' || echo "  (none in ldconfig)"
  } >"$out/machine.txt"
fi

# What the table must make NCCL do, from the built tuner itself (not a second implementation).
# The table is the run's own copy: a dry run checks a recorded run against the table it used.
table=$out/validation.table
[[ -f $table ]] || die "$table missing"
# The full version: a patch release can change the tuner ABI (2.32.3 loads v6, 2.32.6 v7). The
# fabric is what NCCL_IB_DISABLE=1 (every phase) makes the tuner detect.
for coll in allreduce allgather reducescatter; do
  "$cli" explain --table "$table" --coll "$coll" --nodes "$ranks" --ranks "$ranks" \
    --nccl "$nccl_version" --fabric ethernet --min 1 --max 16G --json >"$out/expect-$coll.json" ||
    die "nccl-pilot explain failed for $coll"
done

# The hang phase's pauses (hang_rank.py) and when its driver looks: rank 1 calls one all-reduce
# hang_late_s late and is stopped hang_stop_s in another; `nccl-pilot hang` runs
# hang_probe_late_s into the first pause and hang_probe_stop_s into the second: past the stall
# threshold and the 3 s after which a stopped rank's state file is overdue (next_due_ms, a
# second after its last write, plus hang's 2 s of grace), well before the pause ends: each
# probe runs `hang` twice (JSON, text), and each may watch the writers for up to 2 s.
hang_stall_s=3 hang_late_s=15 hang_stop_s=14 hang_probe_late_s=8 hang_probe_stop_s=6

now_ms() { date +%s%3N; }
sleep_until_ms() { # UNIX_MS
  local left=$(($1 - $(now_ms)))
  if ((left > 0)); then sleep "$((left / 1000)).$(printf %03d $((left % 1000)))"; fi
}
wait_file() { # FILE SECONDS: fails if FILE did not appear in time
  local deadline=$((SECONDS + $2))
  until [[ -f $1 ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
}

# The hang phase's driver, while its ranks run: waits for rank 1's markers in DIR/control, runs
# `nccl-pilot hang DIR/metrics` during each pause (DIR/hang-{late,stop}.json, .err, and .txt, the
# text form right after), stops and continues rank 1, and logs each step with its time (unix ms,
# the state files' clock) in DIR/driver.log, which hang_check.py reads.
hang_log() { # DIR WORDS...
  local dir=$1
  shift
  echo "$(now_ms) $*" >>"$dir/driver.log"
}
hang_probe() { # DIR NAME
  local rc=0
  hang_log "$1" "probe $2 begin"
  "$cli" hang "$1/metrics" --json >"$1/hang-$2.json" 2>"$1/hang-$2.err" || rc=$?
  hang_log "$1" "probe $2 end $rc"
  "$cli" hang "$1/metrics" >"$1/hang-$2.txt" 2>&1 || true
}
hang_marker() { # DIR NAME: "PID UNIX_MS" of rank 1's marker, once it is there
  local pid since
  wait_file "$1/control/$2" "$phase_timeout" || return 1
  read -r pid since <"$1/control/$2" || return 1
  [[ $pid =~ ^[0-9]+$ && $since =~ ^[0-9]+$ ]] || return 1
  echo "$pid $since"
}
drive_hang() { # DIR
  local dir=$1 marker pid since
  hang_log "$dir" "stall_s $hang_stall_s"
  if marker=$(hang_marker "$dir" late); then
    read -r pid since <<<"$marker"
    hang_log "$dir" "late $pid"
    sleep_until_ms $((since + hang_probe_late_s * 1000))
    hang_probe "$dir" late
  else
    hang_log "$dir" "gave up: no control/late within $phase_timeout s"
  fi
  if ! marker=$(hang_marker "$dir" stop-me); then
    hang_log "$dir" "gave up: no control/stop-me within $phase_timeout s"
  elif read -r pid _ <<<"$marker" && kill -STOP "$pid"; then
    since=$(now_ms)
    hang_log "$dir" "stop $pid"
    : >"$dir/control/stopped"
    sleep_until_ms $((since + hang_probe_stop_s * 1000))
    hang_probe "$dir" stop
    sleep_until_ms $((since + hang_stop_s * 1000))
    kill -CONT "$pid" || true
    hang_log "$dir" "cont $pid"
  else
    hang_log "$dir" "gave up: could not stop $pid"
  fi
}

run_phase() { # PHASE
  local phase=$1 dir=$out/$1 port r
  local -a common=(
    NCCL_DEBUG=INFO "NCCL_DEBUG_SUBSYS=INIT,NET,TUNING,GRAPH,ENV"
    NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
    NCCL_TOPO_DUMP_FILE="$dir/nccl-topo-dump.xml"
  )
  local -a mode=()
  case $phase in
  baseline) mode=(NCCL_NET=Socket NCCL_NET_PLUGIN=none NCCL_TUNER_PLUGIN=none) ;;
  pilot) mode=(NCCL_NET=Pilot NCCL_NET_PLUGIN="$net_lib" NCCL_TUNER_PLUGIN="$tuner_lib") ;;
  tuned)
    # The table's digest is pinned as a launcher would pin it: a rank reading another table
    # would leave NCCL's choices (and WARN), which the checks would catch.
    mode=(NCCL_NET=Pilot NCCL_NET_PLUGIN="$net_lib" NCCL_TUNER_PLUGIN="$tuner_lib"
      NCCL_PILOT_TUNER_TABLE="$table" NCCL_PILOT_TUNER_TABLE_SHA256="$table_sha")
    ;;
  topo-only)
    # NCCL_NET stays unset: NCCL 2.28+ skips a plugin's init when NCCL_NET names another.
    mode=(NCCL_PILOT_TRANSPORT=none NCCL_NET_PLUGIN="$net_lib" NCCL_TUNER_PLUGIN="$tuner_lib"
      NCCL_PILOT_TUNER_TABLE="$table" NCCL_PILOT_TUNER_TABLE_SHA256="$table_sha")
    ;;
  metrics)
    mode=(NCCL_NET=Pilot NCCL_NET_PLUGIN="$net_lib" NCCL_TUNER_PLUGIN="$tuner_lib"
      NCCL_PILOT_TUNER_TABLE="$table" NCCL_PROFILER_PLUGIN="$profiler_lib"
      NCCL_PILOT_METRICS_DIR="$dir/metrics" NCCL_PILOT_METRICS_INTERVAL_S=5
      PILOT_GPU_P2P_BYTES=262144 PILOT_GPU_CHURN=20)
    ;;
  explore)
    # NCCL_TUNER_PLUGIN and NCCL_PROFILER_PLUGIN unset: NCCL takes both from the net plugin's
    # library, the one copy in which a captured graph stops exploration.
    mode=(NCCL_PILOT_TRANSPORT=none NCCL_NET_PLUGIN="$net_lib" NCCL_PILOT_TUNER_EXPLORE=0.25
      NCCL_PILOT_METRICS_DIR="$dir/metrics" NCCL_PILOT_METRICS_INTERVAL_S=5)
    ;;
  provenance)
    # Each plugin from its own library: three copies of ours in the process, one record.
    mode=(NCCL_PILOT_TRANSPORT=none NCCL_NET_PLUGIN="$net_lib" NCCL_TUNER_PLUGIN="$tuner_lib"
      NCCL_PROFILER_PLUGIN="$profiler_lib" NCCL_PILOT_METRICS=1
      NCCL_PILOT_METRICS_DIR="$dir/metrics")
    ;;
  hang)
    # Our profiler alone, on NCCL's own transport, as a job that only wants the forensics; the
    # export interval stays at its default (30 s): an idle rank's state is due every 30 s, one
    # with an operation in flight every second, as in a real job.
    mode=(NCCL_NET=Socket NCCL_NET_PLUGIN=none NCCL_TUNER_PLUGIN=none
      NCCL_PROFILER_PLUGIN="$profiler_lib" NCCL_PILOT_METRICS_DIR="$dir/metrics"
      NCCL_PILOT_STALL_S="$hang_stall_s" PILOT_GPU_HANG_LATE_S="$hang_late_s")
    ;;
  esac
  mkdir -p "$dir"
  port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  local -a pids=() worker launcher=()
  local begin=$SECONDS limit=$phase_timeout phase_sizes=$byte_sizes phase_iters=$iters
  if [[ $phase == hang ]]; then
    limit=$((phase_timeout + hang_late_s + hang_stop_s))
    mkdir -p "$dir/control"
  fi
  # The provenance phase checks records, not the sweep: one size (a multiple of 4 x 16 ranks).
  if [[ $phase == provenance ]]; then phase_sizes=65536 phase_iters=1; fi
  for ((r = 0; r < ranks; r++)); do
    # torchrun's variables, which the record takes the rank from (each rank is its own host).
    if [[ $phase == provenance ]]; then launcher=(RANK="$r" LOCAL_RANK=0); fi
    if [[ $phase == hang ]]; then
      worker=("$here/hang_rank.py" "$r" "$ranks" "$port" "$dir/rank$r.json" "$gpus"
        "$dir/control")
    else
      worker=("$here/rank.py" "$r" "$ranks" "$port" "$phase_sizes" "$phase_iters"
        "$dir/rank$r.json" "$gpus")
    fi
    env "${common[@]}" "${mode[@]}" "${launcher[@]}" \
      NCCL_HOSTID="pilot-validation-host-$r" \
      NCCL_DEBUG_FILE="$dir/rank$r.nccl.log" \
      NCCL_PILOT_TOPO_DUMP="$dir/rank$r.pilot-topo.xml" \
      timeout -k 10 "$limit" "$python" "${worker[@]}" >"$dir/rank$r.out" 2>&1 &
    pids+=($!)
  done
  if [[ $phase == hang ]]; then drive_hang "$dir"; fi
  : >"$dir/exit-codes"
  for ((r = 0; r < ranks; r++)); do
    local code=0
    wait "${pids[$r]}" || code=$?
    echo "rank $r $code" >>"$dir/exit-codes"
  done
  echo "gpu/run.sh: phase $phase took $((SECONDS - begin)) s (exit codes: $(cut -d' ' -f3 "$dir/exit-codes" | tr '\n' ' '))"
}

if [[ -z $dry_run ]]; then
  for phase in ${phases//,/ }; do run_phase "$phase"; done
fi

status=0
"$python" "$here/check.py" "$out" || status=$?
echo "gpu/run.sh: evidence in $out (summary.json)"
exit "$status"
