#!/bin/sh
# Runs a fuzzer for SECONDS on a scratch copy of its seed corpus with its dictionary: by default
# table_parser_fuzz's (corpus/ and table.dict beside this script); PILOT_FUZZ_CORPUS and
# PILOT_FUZZ_DICT name another target's. Crash reproducers land in WORKDIR/artifacts/; replay one
# with: FUZZER WORKDIR/artifacts/crash-...
# PILOT_FUZZ_PUBLISHED names a folder of published data (../shared/fixtures/...) whose files are
# cut at line ends into seeds of at most 4,000 bytes at run time: that data is not committed.
# Without the folder the run uses our own seeds only and says so; under CI=true it fails.
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
corpus=${PILOT_FUZZ_CORPUS:-$here/corpus}
dict=${PILOT_FUZZ_DICT:-$here/table.dict}

rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/artifacts"
cp "$corpus"/* "$work/corpus/"
if [ -n "${PILOT_FUZZ_PUBLISHED:-}" ]; then
  if [ -d "$PILOT_FUZZ_PUBLISHED" ]; then
    for f in "$PILOT_FUZZ_PUBLISHED"/*; do
      [ -f "$f" ] && split -C 4000 "$f" "$work/corpus/published-$(basename "$f")-"
    done
  else
    echo "published fixture missing: $PILOT_FUZZ_PUBLISHED (seeds from it skipped; clone ../shared beside the repository)"
    if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then exit 1; fi
  fi
fi

# shellcheck disable=SC2086  # PILOT_FUZZ_ARGS is a list of flags
exec "$fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1 \
  -dict="$dict" -artifact_prefix="$work/artifacts/" ${PILOT_FUZZ_ARGS:-} \
  "$work/corpus"
