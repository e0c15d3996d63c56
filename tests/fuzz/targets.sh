# Sourced by run_fuzz.sh and tools/fuzz-campaign.sh, which set fuzz_dir (this folder): what
# targets.txt says about a target, and how its corpus is seeded. POSIX sh.
# shellcheck shell=sh disable=SC2034,SC2154  # fuzz_dir comes from, the rest goes to, the caller
fuzz_table=$fuzz_dir/targets.txt
fuzz_fixtures=${PILOT_SHARED_FIXTURES:-$fuzz_dir/../../../shared/fixtures}
# What every run uses: inputs up to 4 KiB, an input running 10 s is a hang.
fuzz_flags="-max_len=4096 -timeout=10"

# Every target's name, in the table's order.
fuzz_targets() {
  awk '!/^#/ && NF { print $1 }' "$fuzz_table"
}

# fuzz_row TARGET: sets fuzz_corpus, fuzz_dict (absolute paths), fuzz_published (absolute, ""
# for none) and fuzz_smoke (seconds); fails for a target the table does not name.
fuzz_row() {
  # shellcheck disable=SC2046  # the row's fields, split on purpose
  set -- $(awk -v t="$1" '!/^#/ && $1 == t { print $2, $3, $4, $5 }' "$fuzz_table")
  [ "$#" -eq 4 ] || return 1
  fuzz_corpus=$fuzz_dir/$1
  fuzz_dict=$fuzz_dir/$2
  fuzz_published=
  [ "$3" = - ] || fuzz_published=$fuzz_fixtures/$3
  fuzz_smoke=$4
}

# fuzz_seed DIR: the row's seeds into DIR, and the published files cut at line ends into seeds
# of at most 4,000 bytes (that data is not committed). Without the published folder the seeds
# are ours only and a line says so; under CI=true that fails.
fuzz_seed() {
  mkdir -p "$1"
  cp "$fuzz_corpus"/* "$1/"
  [ -n "$fuzz_published" ] || return 0
  if [ -d "$fuzz_published" ]; then
    for f in "$fuzz_published"/*; do
      [ -f "$f" ] && split -C 4000 "$f" "$1/published-$(basename "$f")-"
    done
    return 0
  fi
  echo "published fixture missing: $fuzz_published (seeds from it skipped; clone ../shared beside the repository)"
  if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then return 1; fi
}
