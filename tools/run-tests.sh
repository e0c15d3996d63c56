#!/usr/bin/env bash
# README step 2 and CI: every test. Release build + unit, plugin (fake NCCL) and ABI tests;
# the same under ASan+UBSan; the threaded tests under TSan; a short libFuzzer run.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh

run() {
  local preset=$1
  printf '\n== %s\n' "$preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset"
}

run fuzz
run tsan
run asan
# Last, so its summary is the closing line.
run release
