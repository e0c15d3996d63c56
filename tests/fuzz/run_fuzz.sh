#!/bin/sh
# The CI smoke run: a fuzzer for SECONDS (default: its row of targets.txt) on a scratch copy of
# its seeds (plus the published data its row names, cut into seeds at run time), with its
# dictionary. Crash reproducers land in WORKDIR/artifacts/; replay one with:
#   FUZZER WORKDIR/artifacts/crash-...
# Long runs with a kept corpus: tools/fuzz-campaign.sh.
# Usage: run_fuzz.sh FUZZER WORKDIR [SECONDS]   (extra libFuzzer flags: PILOT_FUZZ_ARGS)
set -eu

if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then
  echo "usage: $0 FUZZER WORKDIR [SECONDS]" >&2
  exit 2
fi
fuzzer=$1
work=$2
fuzz_dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=targets.sh
. "$fuzz_dir/targets.sh"
if ! fuzz_row "$(basename "$fuzzer")"; then
  echo "$0: $(basename "$fuzzer") is not in $fuzz_table" >&2
  exit 2
fi
seconds=${3:-$fuzz_smoke}

rm -rf "$work/corpus"
mkdir -p "$work/artifacts"
fuzz_seed "$work/corpus"

# shellcheck disable=SC2086  # fuzz_flags and PILOT_FUZZ_ARGS are lists of flags
exec "$fuzzer" -max_total_time="$seconds" $fuzz_flags -print_final_stats=1 \
  -dict="$fuzz_dict" -artifact_prefix="$work/artifacts/" ${PILOT_FUZZ_ARGS:-} "$work/corpus"
