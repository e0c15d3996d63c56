#!/bin/sh
# Runs table_parser_fuzz for SECONDS on a scratch copy of the seed corpus (corpus/ beside this
# script) with the table dictionary. Crash reproducers land in WORKDIR/artifacts/; replay one
# with: FUZZER WORKDIR/artifacts/crash-...
# Usage: run_fuzz.sh FUZZER WORKDIR [SECONDS]   (extra libFuzzer flags: PILOT_FUZZ_ARGS)
set -eu

if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then
  echo "usage: $0 FUZZER WORKDIR [SECONDS]" >&2
  exit 2
fi
fuzzer=$1
work=$2
seconds=${3:-20}
here=$(cd "$(dirname "$0")" && pwd)

rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/artifacts"
cp "$here"/corpus/* "$work/corpus/"

# shellcheck disable=SC2086  # PILOT_FUZZ_ARGS is a list of flags
exec "$fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1 \
  -dict="$here/table.dict" -artifact_prefix="$work/artifacts/" ${PILOT_FUZZ_ARGS:-} \
  "$work/corpus"
