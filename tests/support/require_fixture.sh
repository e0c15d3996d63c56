#!/usr/bin/env bash
# ctest's guard for script and CLI tests that read published data (../shared/fixtures):
#   require_fixture.sh PATH... -- COMMAND [ARG...]
# runs COMMAND when every PATH exists. Otherwise it prints one line per missing path and exits
# 77, which the test's SKIP_RETURN_CODE turns into a skip, or 1 when CI is true (CI never passes
# by skipping). The wording matches tests/support/published_fixture.h.
set -u
missing=0
while (($# > 0)) && [[ $1 != -- ]]; do
  if [[ ! -e $1 ]]; then
    echo "published fixture missing: $1 (clone ../shared beside the repository to run this test; under CI=true it fails)"
    missing=1
  fi
  shift
done
if (($# == 0)); then
  echo "usage: require_fixture.sh PATH... -- COMMAND [ARG...]" >&2
  exit 2
fi
shift
if ((missing)); then
  [[ ${CI:-} == true || ${CI:-} == 1 ]] && exit 1
  exit 77
fi
exec "$@"
