#!/bin/sh
# Checks a built plugin module the way a drop-in user depends on it
# (docs/research/style-ecosystem.md §2.3-2.5):
#   - dynamic exports: exactly NCCL plugin structs, and all of ncclTunerPlugin_v2..v7 and
#     ncclProfiler_v4..v6;
#   - NEEDED: only the C/C++ runtime (plus sanitizer runtimes in a sanitizer build);
#   - no SONAME (NCCL dlopens it by file name);
#   - highest GLIBC_ <= 2.34 (skipped in sanitizer builds) and GLIBCXX_ <= 3.4.30.
# Usage: check_module.sh MODULE [SANITIZE]   (SANITIZE: PILOT_SANITIZE, empty for normal builds)
# NM and OBJDUMP may name the binutils to use.
set -eu

if [ "$#" -lt 1 ] || [ "$#" -gt 2 ]; then
  echo "usage: $0 MODULE [SANITIZE]" >&2
  exit 2
fi
module=$1
sanitize=${2:-}
nm_tool=${NM:-nm}
objdump_tool=${OBJDUMP:-objdump}
max_glibc=2.34
max_glibcxx=3.4.30
status=0

fail() {
  echo "FAIL: $*" >&2
  status=1
}

[ -f "$module" ] || { echo "FAIL: no such file: $module" >&2; exit 1; }

# --- exports -------------------------------------------------------------------------------
exports=$("$nm_tool" -D --defined-only "$module" | awk '{ print $NF }' | sort)
[ -n "$exports" ] || fail "no dynamic symbols defined"
unexpected=$(printf '%s\n' "$exports" |
  grep -Ev '^ncclTunerPlugin_v[0-9]+$|^ncclNetPlugin_v[0-9]+$|^ncclProfiler_v[0-9]+$' || true)
[ -z "$unexpected" ] || fail "unexpected exports: $(echo "$unexpected" | tr '\n' ' ')"
for v in 2 3 4 5 6 7; do
  printf '%s\n' "$exports" | grep -qx "ncclTunerPlugin_v$v" || fail "missing ncclTunerPlugin_v$v"
done
for v in 4 5 6; do
  printf '%s\n' "$exports" | grep -qx "ncclProfiler_v$v" || fail "missing ncclProfiler_v$v"
done

# --- NEEDED and SONAME ---------------------------------------------------------------------
dynamic=$("$objdump_tool" -p "$module")
needed=$(printf '%s\n' "$dynamic" | awk '$1 == "NEEDED" { print $2 }')
for lib in $needed; do
  case "$lib" in
    libc.so.6 | libstdc++.so.6 | libgcc_s.so.1 | libm.so.6 | libdl.so.2 | libpthread.so.0) ;;
    # glibc's dynamic loader, for __tls_get_addr (the profiler's per-thread open group): every
    # dynamically linked process has it loaded, and libstdc++ NEEDs it already.
    ld-linux-x86-64.so.2 | ld-linux-aarch64.so.1) ;;
    libasan.so.* | libubsan.so.* | libtsan.so.*)
      [ -n "$sanitize" ] || fail "sanitizer runtime $lib NEEDED in a non-sanitizer build" ;;
    *) fail "unexpected NEEDED entry: $lib" ;;
  esac
done
soname=$(printf '%s\n' "$dynamic" | awk '$1 == "SONAME" { print $2 }')
[ -z "$soname" ] || fail "has a SONAME ($soname); a plugin module must not"

# --- symbol version floors -----------------------------------------------------------------
# Prints the highest version of symbols named PREFIX_x.y[.z], or nothing.
highest() {
  "$objdump_tool" -T "$module" | grep -oE "\\b$1_[0-9]+(\\.[0-9]+)*" | sed "s/^$1_//" |
    sort -uV | tail -n 1
}
# True if version $1 <= $2.
version_le() {
  [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]
}

glibc=$(highest GLIBC)
glibcxx=$(highest GLIBCXX)
if [ -n "$sanitize" ]; then
  echo "note: sanitizer build ($sanitize): GLIBC floor not checked (highest: ${glibc:-none})"
elif [ -n "$glibc" ] && ! version_le "$glibc" "$max_glibc"; then
  fail "needs GLIBC_$glibc > GLIBC_$max_glibc"
fi
if [ -n "$glibcxx" ] && ! version_le "$glibcxx" "$max_glibcxx"; then
  fail "needs GLIBCXX_$glibcxx > GLIBCXX_$max_glibcxx"
fi

if [ "$status" -eq 0 ]; then
  echo "ok: $module"
  echo "  exports: $(echo "$exports" | tr '\n' ' ')"
  echo "  NEEDED: $(echo "$needed" | tr '\n' ' ')"
  echo "  highest GLIBC_${glibc:-none} GLIBCXX_${glibcxx:-none}"
fi
exit "$status"
