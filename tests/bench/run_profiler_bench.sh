#!/usr/bin/env bash
# What one collective's profiler events cost: pilot_profiler_bench through ncclProfiler_v5, our
# profiler next to callbacks that do nothing ("empty") and, when given, NCCL's Inspector
# (tests/bench/build_inspector.sh), all in each run, in alternating order, ROUNDS runs per
# channel count; prints the medians of ns per event sequence and of the ratio to "empty"
# measured in the same run. Each profiler exports to a scratch directory as in a job (ours:
# textfile every 30 s; Inspector: Prometheus mode, every 30 s, no minimum size, no P2P).
# Usage: run_profiler_bench.sh BUILD_DIR [INSPECTOR_SO]    (ROUNDS=7 CHANNELS="2 8 32")
# PILOT_BASELINE_MODULE=<another build's libnccl-profiler-pilot.so> adds it as "before", for A/B.
set -euo pipefail
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 BUILD_DIR [INSPECTOR_SO]" >&2; exit 2; }
build=$1
inspector=${2:-}
rounds=${ROUNDS:-7}
channels=${CHANNELS:-2 8 32}
bench=$build/bin/pilot_profiler_bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/cuda" "$work/pilot" "$work/inspector"
# Inspector's init asks the CUDA runtime and driver for the device: the stand-ins answer.
ln -s "$(realpath "$build/tests/profiler/fake-cuda/libfake-cuda-driver.so")" "$work/cuda/libcuda.so.1"
ln -s "$(realpath "$build/lib/libpilot-fake-cudart.so")" "$work/cuda/libpilot-fake-cudart.so"

modules=("empty=$build/lib/libpilot_empty_profiler.so" "pilot=$build/lib/libnccl-profiler-pilot.so")
[[ -n $inspector ]] && modules+=("inspector=$inspector")
[[ -n ${PILOT_BASELINE_MODULE:-} ]] && modules+=("before=$PILOT_BASELINE_MODULE")
names=()
for m in "${modules[@]}"; do names+=("${m%%=*}"); done

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds per channel count" >&2
printf '%-9s %-10s %12s %14s %12s\n' channels profiler "ns/sequence" "ns/event" "x empty"
for ch in $channels; do
  : >"$work/samples"
  for ((r = 0; r < rounds; r++)); do
    args=()
    if ((r % 2 == 0)); then
      for m in "${modules[@]}"; do args+=("--module=$m"); done
    else
      for ((i = ${#modules[@]} - 1; i >= 0; i--)); do args+=("--module=${modules[$i]}"); done
    fi
    LD_LIBRARY_PATH="$work/cuda" NCCL_PILOT_METRICS_DIR="$work/pilot" \
      NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_ENABLE_P2P=0 NCCL_INSPECTOR_PROM_DUMP=1 \
      NCCL_INSPECTOR_DUMP_DIR="$work/inspector" NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=0 \
      NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=30000000 \
      "$bench" "${args[@]}" --channels="$ch" --benchmark_min_time=0.3 --benchmark_format=csv \
      2>"$work/log" >"$work/run.csv" || { cat "$work/log" >&2; exit 1; }
    # name,iterations,real_time,cpu_time,...: one line per module of this run
    awk -F, -v round="$r" '$1 ~ /^"BM_Sequence\// {
        name = $1; gsub(/"|BM_Sequence\//, "", name); print round, name, $4 }' \
      "$work/run.csv" >>"$work/samples"
  done
  events=$((2 + 3 * ch))
  for name in "${names[@]}"; do
    python3 - "$work/samples" "$name" "$ch" "$events" <<'PY'
import statistics, sys
path, name, ch, events = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = [line.split() for line in open(path)]
by_round = {}
for r, n, ns in rows:
    by_round.setdefault(r, {})[n] = float(ns)
ns = statistics.median(v[name] for v in by_round.values())
ratio = statistics.median(v[name] / v["empty"] for v in by_round.values())
print(f"{ch:<9} {name:<10} {ns:12.1f} {ns / events:14.2f} {ratio:12.2f}")
PY
  done
done
