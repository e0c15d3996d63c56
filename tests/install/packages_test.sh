#!/usr/bin/env bash
# The packages as a user gets them (cmake/PilotPackaging.cmake):
#   - the .tar.gz unpacked into an empty prefix holds exactly the documented files, nothing has
#     an RPATH/RUNPATH or names the build or source tree, `nccl-pilot version` runs from there
#     and finds the installed library, and a C host (NCCL's way: dlopen RTLD_NOW|RTLD_LOCAL) and
#     `nccl-pilot explain` drive the installed tuner with the installed example table;
#   - the .deb's control fields (Depends only on libc6, libstdc++6, libgcc-s1; hwloc and
#     libibverbs recommended) and its file list.
# Usage: packages_test.sh BUILD_DIR SOURCE_DIR C_HOST
set -euo pipefail
build=$(cd "${1:?usage: packages_test.sh BUILD_DIR SOURCE_DIR C_HOST}" && pwd)
src=$(cd "${2:?}" && pwd)
c_host=${3:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() {
  echo "FAIL: $*"
  status=1
}

(cd "$build" && cpack -G "TGZ;DEB" -B "$work/packages" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; exit 1; }
tarball=$(ls "$work"/packages/nccl-pilot-*-linux-*.tar.gz)
deb=$(ls "$work"/packages/nccl-pilot_*.deb)
echo "built $(basename "$tarball") and $(basename "$deb")"

# --- the tarball in an empty prefix ---------------------------------------------------------
prefix=$work/prefix
mkdir "$prefix"
tar -xzf "$tarball" -C "$prefix"
expected_top="bin/nccl-pilot
lib/libnccl-net-pilot.so
lib/libnccl-tuner-pilot.so
lib/libnccl-profiler-pilot.so
share/doc/nccl-pilot/README.md
share/nccl-pilot/examples/h100-2node.table"
for f in $expected_top; do
  [[ -f $prefix/$f ]] || fail "tarball lacks $f"
done
installed=$(cd "$prefix" && find . -type f | sed 's|^\./||')
allowed='^(bin/nccl-pilot|lib/libnccl-(net|tuner|profiler)-pilot\.so|share/nccl-pilot/examples/.+|share/doc/nccl-pilot/.+\.md)$'
unexpected=$(grep -Ev "$allowed" <<<"$installed" || true)
[[ -z $unexpected ]] || fail "unexpected files in the tarball: $unexpected"
[[ -f $prefix/share/doc/nccl-pilot/docs/deployment.md ]] || fail "docs/deployment.md not installed"
[[ -f $prefix/share/nccl-pilot/examples/deployment/slurm/train.sbatch ]] ||
  fail "deployment recipes not installed"

for elf in "$prefix"/bin/nccl-pilot "$prefix"/lib/*.so; do
  if readelf -d "$elf" | grep -Eq 'RPATH|RUNPATH'; then fail "$elf has an RPATH/RUNPATH"; fi
done
for tree in "$src" "$build"; do
  hits=$(grep -rlF "$tree" "$prefix" || true)
  [[ -z $hits ]] || fail "installed files name $tree: $hits"
done

version_out=$("$prefix/bin/nccl-pilot" version)
echo "$version_out" | head -n 3
want_version=$(sed -n 's/.*kVersion\[\] = "\(.*\)";/\1/p' "$build/core/generated/pilot/version.h")
grep -qxF "nccl-pilot $want_version" <<<"$version_out" ||
  fail "version does not print 'nccl-pilot $want_version'"
grep -qF "plugin:       $prefix/bin/../lib/libnccl-tuner-pilot.so" <<<"$version_out" ||
  grep -qF "plugin:       $prefix/lib/libnccl-tuner-pilot.so" <<<"$version_out" ||
  fail "version did not load the installed library"
grep -qE '^tuner ABI: +v2 v3 v4 v5 v6 v7' <<<"$version_out" || fail "version lists no tuner ABI"

"$c_host" "$prefix/lib/libnccl-tuner-pilot.so" || fail "the C host failed on the installed tuner"
"$c_host" "$prefix/lib/libnccl-net-pilot.so" || fail "the C host failed on the installed net name"

explain=$("$prefix/bin/nccl-pilot" explain --plugin "$prefix/lib/libnccl-tuner-pilot.so" \
  --table "$prefix/share/nccl-pilot/examples/h100-2node.table" --coll allreduce --nodes 2 \
  --ranks 16 --nccl 2.28 --json)
grep -q '"decision": "select"' <<<"$explain" || fail "explain through the installed tuner applied no rule"

# --- the .deb -------------------------------------------------------------------------------
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == nccl-pilot ]] || fail "Package: $(field Package)"
[[ $(field Version) == "$want_version" ]] || fail "Version: $(field Version), want $want_version"
[[ $(field Architecture) == "$(dpkg --print-architecture)" ]] || fail "Architecture: $(field Architecture)"
depends=$(field Depends)
[[ $depends == "libc6 (>= 2.34), libstdc++6 (>= 11), libgcc-s1" ]] || fail "Depends: $depends"
[[ $(field Recommends) == *libhwloc15* && $(field Recommends) == *libibverbs1* ]] ||
  fail "Recommends: $(field Recommends)"
[[ -n $(field Maintainer) && -n $(field Description) ]] || fail "no Maintainer/Description"
files=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|')
for f in /usr/lib/libnccl-net-pilot.so /usr/lib/libnccl-tuner-pilot.so \
  /usr/lib/libnccl-profiler-pilot.so /usr/bin/nccl-pilot \
  /usr/share/nccl-pilot/examples/h100-2node.table /usr/share/doc/nccl-pilot/README.md; do
  grep -qxF "$f" <<<"$files" || fail ".deb lacks $f"
done
outside=$(grep -v '/$' <<<"$files" | grep -Ev '^/usr/(bin|lib|share/nccl-pilot|share/doc/nccl-pilot)/' || true)
[[ -z $outside ]] || fail ".deb installs outside /usr/{bin,lib,share}: $outside"

# Unpacked as dpkg would lay it out, the tool finds the library under /usr/lib beside it.
debroot=$work/debroot
dpkg-deb -x "$deb" "$debroot"
"$debroot/usr/bin/nccl-pilot" version | grep -qF "plugin:       $debroot/usr/lib/libnccl-tuner-pilot.so" ||
  fail "the .deb's nccl-pilot does not find its library"

((status == 0)) && echo "packages: tarball and .deb as documented"
exit "$status"
