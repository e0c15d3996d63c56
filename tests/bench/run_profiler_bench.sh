#!/usr/bin/env bash
# What one collective's profiler events cost (mode coll), and one Send/Recv operation's (mode
# p2p: rank 3 of 8 exchanging 1 MiB with each peer in one group, 14 operations):
# pilot_profiler_bench through ncclProfiler_v5, our profiler next to callbacks that do nothing
# ("empty") and, when given, NCCL's Inspector (tests/bench/build_inspector.sh), all in each run,
# in alternating order, ROUNDS runs per channel count; prints the medians of ns per event
# sequence (coll) or per operation (p2p) and of the ratio to "empty" measured in the same run,
# and with Inspector the median of (profiler - empty) / (Inspector - empty): the share of
# Inspector's host cost. Each profiler exports to a scratch directory as in a job (ours:
# textfile every 30 s; Inspector: Prometheus mode, every 30 s, no minimum size; P2P on in p2p
# mode, off in coll mode).
# Usage: run_profiler_bench.sh BUILD_DIR [INSPECTOR_SO]
#        (ROUNDS=7 CHANNELS="2 8 32" MODES="coll p2p")
# PILOT_BASELINE_MODULE=<another build's libnccl-profiler-pilot.so> adds it as "before", for A/B.
set -euo pipefail
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 BUILD_DIR [INSPECTOR_SO]" >&2; exit 2; }
build=$1
inspector=${2:-}
rounds=${ROUNDS:-7}
channels=${CHANNELS:-2 8 32}
modes=${MODES:-coll p2p}
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
for mode in $modes; do
  if [[ $mode == p2p ]]; then
    flag=--p2p benchmark=BM_P2p per=14 unit=ns/op p2pInspector=1
  else
    flag='' benchmark=BM_Sequence per=0 unit=ns/event p2pInspector=0
  fi
  printf '\n%s\n%-9s %-10s %12s %14s %12s %12s\n' "mode $mode" channels profiler "ns/sequence" "$unit" \
    "x empty" "of inspector"
  for ch in $channels; do
    : >"$work/samples"
    for ((r = 0; r < rounds; r++)); do
      args=()
      if ((r % 2 == 0)); then
        for m in "${modules[@]}"; do args+=("--module=$m"); done
      else
        for ((i = ${#modules[@]} - 1; i >= 0; i--)); do args+=("--module=${modules[$i]}"); done
      fi
      # shellcheck disable=SC2086  # $flag is empty or one word
      LD_LIBRARY_PATH="$work/cuda" NCCL_PILOT_METRICS_DIR="$work/pilot" \
        NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_ENABLE_P2P=$p2pInspector NCCL_INSPECTOR_PROM_DUMP=1 \
        NCCL_INSPECTOR_DUMP_DIR="$work/inspector" NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=0 \
        NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=30000000 \
        "$bench" "${args[@]}" $flag --channels="$ch" --benchmark_min_time=0.3 --benchmark_format=csv \
        2>"$work/log" >"$work/run.csv" || { cat "$work/log" >&2; exit 1; }
      # name,iterations,real_time,cpu_time,...: one line per module of this run
      awk -F, -v round="$r" -v bm="$benchmark" '$1 ~ "^\"" bm "/" {
          name = $1; gsub("\"|" bm "/", "", name); print round, name, $4 }' \
        "$work/run.csv" >>"$work/samples"
    done
    # Per event for a collective (Coll start and stop, 3 per channel), per operation for P2P.
    per_unit=$per
    ((per_unit == 0)) && per_unit=$((2 + 3 * ch))
    for name in "${names[@]}"; do
      python3 - "$work/samples" "$name" "$ch" "$per_unit" <<'PY'
import statistics, sys
path, name, ch, per = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = [line.split() for line in open(path)]
by_round = {}
for r, n, ns in rows:
    by_round.setdefault(r, {})[n] = float(ns)
ns = statistics.median(v[name] for v in by_round.values())
ratio = statistics.median(v[name] / v["empty"] for v in by_round.values())
share = "-"
if all("inspector" in v for v in by_round.values()) and name != "empty":
    share = "%.2f" % statistics.median(
        (v[name] - v["empty"]) / (v["inspector"] - v["empty"]) for v in by_round.values())
print(f"{ch:<9} {name:<10} {ns:12.1f} {ns / per:14.2f} {ratio:12.2f} {share:>12}")
PY
    done
  done
done
