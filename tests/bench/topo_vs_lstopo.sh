#!/bin/sh
# Detection + NCCL XML writing (`nccl-pilot topo --nccl-xml`) against hwloc's own
# `lstopo-no-graphics --of xml` on this machine, both as whole commands, in one run.
# Usage: topo_vs_lstopo.sh NCCL_PILOT_BINARY [RUNS]   (default 30 runs each)
set -eu
pilot=$1
runs=${2:-30}
command -v lstopo-no-graphics >/dev/null || {
  echo "lstopo-no-graphics not found (apt-get install hwloc)" >&2
  exit 2
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Mean wall time in ms of "$@" over $runs runs (after one warm-up run).
mean_ms() {
  "$@" >/dev/null 2>&1
  start=$(date +%s%N)
  i=0
  while [ "$i" -lt "$runs" ]; do
    "$@" >/dev/null 2>&1
    i=$((i + 1))
  done
  end=$(date +%s%N)
  echo "$(((end - start) / runs / 1000))"
}

pilot_us=$(mean_ms "$pilot" topo --nccl-xml "$out/nccl.xml")
lstopo_us=$(mean_ms lstopo-no-graphics -f --of xml "$out/hwloc.xml")
awk -v p="$pilot_us" -v l="$lstopo_us" -v n="$runs" 'BEGIN {
  printf "nccl-pilot topo --nccl-xml : %8.2f ms per run (detect, pair, repair, write, print)\n", p / 1000
  printf "lstopo-no-graphics --of xml: %8.2f ms per run\n", l / 1000
  printf "ratio (nccl-pilot / lstopo): %8.2f   (%d runs each)\n", p / l, n
}'
