#!/usr/bin/env bash
# README step 2 and CI: every test, in the three builds that run them (docs/testing.md):
#   tsan     the threaded tests under ThreadSanitizer;
#   asan     every test of our code and every fuzz target's smoke run, under ASan + UBSan (clang),
#            with the thread census (a test that starts a thread must be of kind threads);
#   release  the build users get, and its own checks (exports, packages, soak, benchmarks, lint).
# Each build compiles only what its tests run. Every step's wall time is printed beside its share
# of the 40-minute budget, and the steps add up to the total.
# Tests that read published data (../shared/fixtures) skip without it, and the summary counts
# and names them; under CI=true a missing fixture fails instead (tests/support/published_fixture.h).
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
budget_s=2400
# Each step's share of the budget, in seconds (docs/testing.md, "Budget"); they add up to it.
declare -A share=(
  [setup]=60
  [tsan-configure]=10 [tsan-build]=300 [tsan-test]=170
  [asan-configure]=10 [asan-build]=620 [asan-test]=580
  [release-configure]=10 [release-build]=500 [release-test]=140
)
steps=()
declare -A took=()
start=$EPOCHREALTIME

# step NAME COMMAND...: runs COMMAND and notes its wall time under NAME.
step() {
  local name=$1 t0=$EPOCHREALTIME
  shift
  steps+=("$name")
  "$@" || {
    local status=$?
    took[$name]=$(elapsed "$t0")
    echo "$name failed (exit $status)" >&2
    return "$status"
  }
  took[$name]=$(elapsed "$t0")
}
# Seconds since the EPOCHREALTIME $1, to 0.1 s.
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# The time of every step run so far beside its share, and the total; on every exit, so a failed
# run shows where its time went too.
print_times() {
  local total sum=0 name
  total=$(elapsed "$start")
  printf '\n== time (budget %d s on 2 cores, cold; docs/testing.md)\n' "$budget_s"
  printf '%-20s %8s %8s\n' step seconds share
  for name in "${steps[@]}"; do
    printf '%-20s %8s %8s%s\n' "$name" "${took[$name]:-?}" "${share[$name]:-}" \
      "$(awk -v t="${took[$name]:-0}" -v s="${share[$name]:-0}" 'BEGIN { if (s > 0 && t > s) print "  over its share" }')"
    sum=$(awk -v a="$sum" -v b="${took[$name]:-0}" 'BEGIN { printf "%.1f", a + b }')
  done
  printf '%-20s %8s %8s\n' "steps" "$sum" ""
  printf '%-20s %8s %8s%s\n' total "$total" "$budget_s" \
    "$(awk -v t="$total" -v b="$budget_s" 'BEGIN { if (t > b) print "  OVER BUDGET" }')"
}
trap print_times EXIT

summary=()

# How many tests of the last ctest run in build dir $1 printed the skip line of a missing
# published fixture (ctest keeps every test's output in LastTest.log), and which: per test
# suite (the name before the first '.', without a parameterized instantiation's prefix).
fixture_skips() {
  awk '/^[0-9]+\/[0-9]+ Testing: / { name = $3 }
       /published fixture missing/ && !(name in seen) {
         seen[name] = 1; n++
         suite = name; sub(/\..*/, "", suite); sub(/.*\//, "", suite)
         if (!(suite in count)) order[++k] = suite
         count[suite]++
       }
       END {
         printf "%d test(s) skipped for missing published fixtures", n + 0
         for (i = 1; i <= k; i++) printf "%s%s (%d)", (i == 1 ? ": " : ", "), order[i], count[order[i]]
         print ""
       }' "$1/Testing/Temporary/LastTest.log"
}

configure() { cmake --preset "$1" >/dev/null; }
# The asan stage's tests run with the thread census preloaded (its test preset); its folder
# starts empty, and the census is checked once they pass. (Called as a step, where set -e does
# not hold: each command's failure is returned.)
asan_tests() {
  rm -rf build-asan/thread-census && mkdir -p build-asan/thread-census || return
  ctest --preset asan -j "$jobs" || return
  python3 tests/support/thread_census_check.py build-asan build-asan/thread-census
}

run() {
  local preset=$1 dir=$2
  printf '\n== %s\n' "$preset"
  step "$preset-configure" configure "$preset"
  step "$preset-build" cmake --build --preset "$preset"
  if [[ $preset == asan ]]; then
    step "$preset-test" asan_tests
  else
    step "$preset-test" ctest --preset "$preset" -j "$jobs"
  fi
  summary+=("$preset: $(fixture_skips "$dir")")
}

step setup tools/install-deps.sh --tests
run tsan build-tsan
run asan build-asan
# Last, so its summary is the closing block.
run release build

printf '\n== summary\n'
printf '%s\n' "${summary[@]}"
if [[ ! -d ../shared/fixtures ]]; then
  echo "../shared/fixtures is not beside this checkout: those tests were skipped (CI has it)."
fi
