#!/usr/bin/env bash
# README step 2 and CI: every test. Release build + unit, plugin (fake NCCL) and ABI tests;
# the same under ASan+UBSan; the threaded tests under TSan; a short libFuzzer run.
# Tests that read published data (../shared/fixtures) skip without it, and the summary counts
# and names them; under CI=true a missing fixture fails instead (tests/support/published_fixture.h).
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh

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

run() {
  local preset=$1 dir=$2
  printf '\n== %s\n' "$preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset"
  summary+=("$preset: $(fixture_skips "$dir")")
}

run fuzz build-fuzz
run tsan build-tsan
run asan build-asan
# Last, so its summary is the closing block.
run release build

printf '\n== summary\n'
printf '%s\n' "${summary[@]}"
if [[ ! -d ../shared/fixtures ]]; then
  echo "../shared/fixtures is not beside this checkout: those tests were skipped (CI has it)."
fi
