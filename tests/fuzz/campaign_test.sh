#!/bin/sh
# tools/fuzz-campaign.sh: a 3 s campaign of a real target prints its line (exec/s, edges,
# features, corpus, crashes 0) and keeps the merged corpus in the default place outside the
# repository; a corpus root inside the repository is refused before anything is written; a
# target that crashes (a stand-in that behaves as libFuzzer does) is counted with its
# reproducer and makes the exit status 1.
# Usage: campaign_test.sh BUILD_DIR   (the fuzz build, holding bin/http_request_fuzz)
set -eu
build=$1
repo=$(cd "$(dirname "$0")/../.." && pwd -P)
script=$repo/tools/fuzz-campaign.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
unset PILOT_FUZZ_CAMPAIGN_DIR

# A real target, the default corpus root under XDG_CACHE_HOME.
XDG_CACHE_HOME=$tmp/cache "$script" --build "$build" --seconds 3 http_request_fuzz >"$tmp/out" ||
  fail "a clean campaign exited $?"
cat "$tmp/out"
line=$(grep '^http_request_fuzz: ' "$tmp/out") || fail "no line for the target"
echo "$line" | grep -Eq '^http_request_fuzz: exec/s [1-9][0-9]*, edges [1-9][0-9]*, features [1-9][0-9]*, corpus [1-9][0-9]* files \([1-9][0-9]* bytes\), crashes 0$' ||
  fail "the line has another shape: $line"
corpus=$tmp/cache/nccl-pilot/fuzz/http_request_fuzz/corpus
files=$(find "$corpus" -type f | wc -l)
echo "$line" | grep -q "corpus $files files" || fail "$files files in $corpus, the line says otherwise"
[ -z "$(find "$tmp/cache" -name corpus.merged)" ] || fail "the merge folder was left behind"

# Inside the repository: refused, nothing created.
if PILOT_FUZZ_CAMPAIGN_DIR=$repo/tests/fuzz/campaign-corpus "$script" --build "$build" \
  --seconds 1 http_request_fuzz >"$tmp/out" 2>"$tmp/err"; then
  fail "a corpus root inside the repository was taken"
fi
grep -q "inside the repository" "$tmp/err" || fail "the refusal does not say why"
[ ! -e "$repo/tests/fuzz/campaign-corpus" ] || fail "the refused corpus root was created"

# A target that crashes: the stand-in writes a reproducer where -artifact_prefix says.
mkdir -p "$tmp/fake/bin"
cat >"$tmp/fake/bin/http_request_fuzz" <<'EOF'
#!/bin/sh
for a in "$@"; do
  case $a in
    -merge=1) exit 0 ;;
    -artifact_prefix=*) prefix=${a#-artifact_prefix=} ;;
  esac
done
echo "#2 INITED cov: 7 ft: 9 corp: 1/1b exec/s: 0 rss: 30Mb"
echo "==1== ERROR: libFuzzer: deadly signal"
printf 'boom' >"${prefix}crash-0123"
exit 1
EOF
chmod +x "$tmp/fake/bin/http_request_fuzz"
if "$script" --build "$tmp/fake" --corpus-root "$tmp/crash" --seconds 1 http_request_fuzz \
  >"$tmp/out" 2>/dev/null; then
  fail "a crash did not make the exit status non-zero"
fi
cat "$tmp/out"
grep -Eq "^http_request_fuzz: exec/s 0, edges 7, features 9, corpus [0-9]+ files \([0-9]+ bytes\), crashes 1: $tmp/crash/http_request_fuzz/runs/[0-9TZ]+/artifacts/crash-0123$" \
  "$tmp/out" || fail "the crash is not counted with its reproducer"
echo "PASS"
