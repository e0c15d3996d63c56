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
# Mode proxy (not in the default MODES): the collective of mode coll over the network, with
# NCCL's network progress events (a send and a receive ProxyOp per channel, STEPS ProxySteps
# each): ours and the empty callbacks once per NCCL_PILOT_METRICS_PROXY setting of PROXY (copies
# of each module, side by side in every run; "empty"/"pilot" are off, "empty-ops"/"pilot-ops",
# "empty-steps"/"pilot-steps"), each given the events its mask asks for; Inspector asks for none
# (Coll | KernelCh). Prints per module the median and the range over the runs of ns per
# collective, the median ratio to the empty callbacks of the same setting, and what the setting
# adds to the same module with it off, paired within each run: in all, and beyond what it adds
# to the empty callbacks (NCCL's calls themselves).
# Usage: run_profiler_bench.sh BUILD_DIR [INSPECTOR_SO]
#        (ROUNDS=7 CHANNELS="2 8 32" MODES="coll p2p"; mode proxy: STEPS=8 PROXY="off ops steps")
# PILOT_BASELINE_MODULE=<another build's libnccl-profiler-pilot.so> adds it as "before", for A/B
# (in mode proxy, once per setting: "before", "before-ops", "before-steps").
set -euo pipefail
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 BUILD_DIR [INSPECTOR_SO]" >&2; exit 2; }
build=$1
inspector=${2:-}
rounds=${ROUNDS:-7}
channels=${CHANNELS:-2 8 32}
modes=${MODES:-coll p2p}
steps=${STEPS:-8}
proxy_settings=${PROXY:-off ops steps}
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

# Mode proxy: one copy of each module per setting (dlopen loads a path once), all in $work so
# that a rebuild of BUILD_DIR during the runs changes none of them.
proxy_modules=() proxy_env=() proxy_names=()
if [[ " $modes " == *" proxy "* ]]; then
  families=("empty=$build/lib/libpilot_empty_profiler.so" "pilot=$build/lib/libnccl-profiler-pilot.so")
  [[ -n ${PILOT_BASELINE_MODULE:-} ]] && families+=("before=$PILOT_BASELINE_MODULE")
  for f in "${families[@]}"; do
    for setting in $proxy_settings; do
      case $setting in off | ops | steps) ;; *) echo "PROXY: off, ops or steps, not $setting" >&2; exit 2 ;; esac
      name=${f%%=*}
      [[ $setting != off ]] && name+=-$setting
      mkdir -p "$work/so/$name" "$work/pilot/$name"
      cp "${f#*=}" "$work/so/$name/${f##*/}"
      proxy_modules+=("$name=$work/so/$name/${f##*/}")
      proxy_names+=("$name")
      proxy_env+=("--env-of=$name:NCCL_PILOT_METRICS_PROXY=$setting"
        "--env-of=$name:NCCL_PILOT_METRICS_DIR=$work/pilot/$name")
    done
  done
  if [[ -n $inspector ]]; then
    proxy_modules+=("inspector=$inspector")
    proxy_names+=(inspector)
  fi
fi

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds per channel count" >&2
for mode in $modes; do
  if [[ $mode == proxy ]]; then
    printf '\n%s\n%-9s %-12s %7s %14s %17s %8s %16s %14s\n' \
      "mode proxy: $steps ProxySteps per ProxyOp, a send and a receive ProxyOp per channel" \
      channels profiler events "ns/collective" "(runs' range)" "x empty" "+ns over off" \
      "beyond empty"
    for ch in $channels; do
      : >"$work/samples"
      for ((r = 0; r < rounds; r++)); do
        args=()
        if ((r % 2 == 0)); then
          for m in "${proxy_modules[@]}"; do args+=("--module=$m"); done
        else
          for ((i = ${#proxy_modules[@]} - 1; i >= 0; i--)); do args+=("--module=${proxy_modules[$i]}"); done
        fi
        LD_LIBRARY_PATH="$work/cuda" NCCL_PILOT_METRICS_DIR="$work/pilot" \
          NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_ENABLE_P2P=0 NCCL_INSPECTOR_PROM_DUMP=1 \
          NCCL_INSPECTOR_DUMP_DIR="$work/inspector" NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=0 \
          NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=30000000 \
          "$bench" "${args[@]}" "${proxy_env[@]}" --proxy --steps="$steps" --channels="$ch" \
          --benchmark_min_time=0.3 --benchmark_format=csv \
          2>"$work/log" >"$work/run.csv" || { cat "$work/log" >&2; exit 1; }
        awk -F, -v round="$r" '$1 ~ "^\"BM_Network/" {
            name = $1; gsub("\"|BM_Network/", "", name); print round, name, $4 }' \
          "$work/run.csv" >>"$work/samples"
      done
      python3 - "$work/samples" "$ch" "$steps" "${proxy_names[@]}" <<'PY'
import statistics, sys
path, ch, steps, names = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
by_round = {}
for r, n, ns in (line.split() for line in open(path)):
    by_round.setdefault(r, {})[n] = float(ns)
runs = list(by_round.values())
def setting(name):
    return name.rsplit("-", 1)[1] if name.endswith(("-ops", "-steps")) else "off"
def family(name):
    return name.rsplit("-", 1)[0] if setting(name) != "off" else name
def base(name, fam):  # the module of family fam with name's setting
    return fam if setting(name) == "off" else fam + "-" + setting(name)
# The events NCCL sends per collective (Coll start and stop, 3 per kernel channel; per ProxyOp
# its start, InProgress state and stop; per ProxyStep its start, 3 states and stop).
events = {"off": 2 + 3 * ch, "ops": 2 + 3 * ch + 2 * ch * 3}
events["steps"] = events["ops"] + 2 * ch * steps * 5
for name in names:
    ns = [v[name] for v in runs]
    s = "off" if name == "inspector" else setting(name)
    ratio = added = beyond = "-"
    empty = base(name, "empty")
    if family(name) != "empty" and all(empty in v for v in runs):
        ratio = "%.2f" % statistics.median(v[name] / v[empty] for v in runs)
    if s != "off" and all(family(name) in v for v in runs):
        added = "%.0f" % statistics.median(v[name] - v[family(name)] for v in runs)
        if family(name) != "empty" and all("empty" in v and empty in v for v in runs):
            beyond = "%.0f" % statistics.median(
                (v[name] - v[family(name)]) - (v[empty] - v["empty"]) for v in runs)
    span = "%.0f-%.0f" % (min(ns), max(ns))
    print(f"{ch:<9} {name:<12} {events[s]:7d} {statistics.median(ns):14.1f} {span:>17} "
          f"{ratio:>8} {added:>16} {beyond:>14}")
PY
    done
    continue
  fi
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
