#!/usr/bin/env bash
# Long libFuzzer campaigns (docs/reliability.md, "Fuzzing"): each target runs SECONDS on a corpus
# kept outside the repository, seeded from its row of tests/fuzz/targets.txt (our seeds, and the
# published data it names, cut at run time), with its dictionary; the corpus is then merged and
# minimized into a fresh folder that replaces it. One line per target: exec/s, edges covered
# (libFuzzer's cov:), features (ft:), corpus size and crashes (count and reproducers). Exits 1 if
# any target crashed. It builds nothing: the targets come from the fuzz build folder.
#
# Usage: tools/fuzz-campaign.sh [TARGET...] [--seconds N] [--build DIR] [--corpus-root DIR]
#   TARGET         targets.txt names (default: all of them, one after another)
#   --seconds N    per target (default 600)
#   --build DIR    the fuzz preset's build folder (default build-fuzz/ of the repository)
#   --corpus-root  where DIR/<target>/corpus and DIR/<target>/runs/<time>/ live (default
#                  $PILOT_FUZZ_CAMPAIGN_DIR, else ${XDG_CACHE_HOME:-~/.cache}/nccl-pilot/fuzz);
#                  a folder inside the repository is refused
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd -P)
fuzz_dir=$repo/tests/fuzz
# shellcheck source-path=SCRIPTDIR source=../tests/fuzz/targets.sh
. "$fuzz_dir/targets.sh"

usage() { sed -n 's/^# \{0,1\}//; 9,15p' "$0"; }
die() {
  echo "fuzz-campaign: $*" >&2
  exit 2
}

seconds=600
build=$repo/build-fuzz
root=${PILOT_FUZZ_CAMPAIGN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nccl-pilot/fuzz}
targets=()
while (($#)); do
  case $1 in
    --seconds | --build | --corpus-root) (($# >= 2)) || die "$1 needs a value" ;;&
    --seconds) seconds=$2 && shift 2 ;;
    --build) build=$2 && shift 2 ;;
    --corpus-root) root=$2 && shift 2 ;;
    -h | --help) usage && exit 0 ;;
    -*) usage >&2 && exit 2 ;;
    *) targets+=("$1") && shift ;;
  esac
done
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "--seconds wants a whole number above 0, not '$seconds'"
((${#targets[@]})) || mapfile -t targets < <(fuzz_targets)
for t in "${targets[@]}"; do
  fuzz_row "$t" || die "$t is not in $fuzz_table"
  [[ -x $build/bin/$t ]] || die "no $build/bin/$t; build it first:
  cmake --preset fuzz && cmake --build build-fuzz --target ${targets[*]}"
done
root=$(realpath -m -- "$root")
case "$root/" in
  "$repo"/*) die "the corpus root $root is inside the repository; choose a folder outside it" ;;
esac

# campaign TARGET: one run, the merge, and the line.
campaign() {
  local t=$1 dir=$root/$1 run status=0
  run=$dir/runs/$(date -u +%Y%m%dT%H%M%SZ)
  mkdir -p "$run/artifacts" "$dir/corpus"
  fuzz_row "$t"
  fuzz_seed "$dir/corpus" >&2
  echo "fuzz-campaign: $t for ${seconds} s, corpus $dir/corpus, log $run/fuzz.log" >&2
  # shellcheck disable=SC2086  # fuzz_flags is a list of flags
  "$build/bin/$t" -max_total_time="$seconds" $fuzz_flags -print_final_stats=1 \
    -dict="$fuzz_dict" -artifact_prefix="$run/artifacts/" "$dir/corpus" >"$run/fuzz.log" 2>&1 ||
    status=$?
  rm -rf "$dir/corpus.merged" && mkdir "$dir/corpus.merged"
  # shellcheck disable=SC2086
  # A unit that fails during the merge is written where -artifact_prefix says, not in the
  # working directory.
  if "$build/bin/$t" -merge=1 $fuzz_flags -artifact_prefix="$run/artifacts/merge-" \
    "$dir/corpus.merged" "$dir/corpus" >"$run/merge.log" 2>&1; then
    rm -rf "$dir/corpus" && mv "$dir/corpus.merged" "$dir/corpus"
  else
    echo "fuzz-campaign: $t: the merge failed (see $run/merge.log); the corpus is kept as it was" >&2
    rm -rf "$dir/corpus.merged"
  fi
  local execs edges features files bytes crashes
  execs=$(awk '/^stat::average_exec_per_sec:/ { v = $2 } END { print v + 0 }' "$run/fuzz.log")
  edges=$(grep -o 'cov: [0-9]*' "$run/fuzz.log" | tail -n 1 | awk '{ print $2 + 0 }')
  features=$(grep -o 'ft: [0-9]*' "$run/fuzz.log" | tail -n 1 | awk '{ print $2 + 0 }')
  files=$(find "$dir/corpus" -type f | wc -l)
  bytes=$(find "$dir/corpus" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
  # slow-unit-* files are libFuzzer's notes on slow inputs, not failures.
  mapfile -t crashes < <(find "$run/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
  if ((status != 0 && ${#crashes[@]} == 0)); then crashes=("(exit status $status, no reproducer: $run/fuzz.log)"); fi
  local line="$t: exec/s ${execs:-0}, edges ${edges:-0}, features ${features:-0}, corpus $files files ($bytes bytes), crashes ${#crashes[@]}"
  ((${#crashes[@]} == 0)) || line+=": ${crashes[*]}"
  echo "$line"
  ((${#crashes[@]} == 0))
}

crashed=0
for t in "${targets[@]}"; do
  campaign "$t" || crashed=1
done
exit "$crashed"
