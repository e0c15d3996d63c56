#!/bin/sh
# Fails when a C/C++ source of the project differs from clang-format's output (.clang-format).
# Usage: check_format.sh SOURCE_DIR [CLANG_FORMAT]
set -eu
root=$1
clang_format=${2:-clang-format}
cd "$root"
files=$(find core tuner topology net metrics calibration doctor plugin tools tests \
  \( -name '*.cc' -o -name '*.h' -o -name '*.c' \) -not -path '*/data/*' | sort)
# shellcheck disable=SC2086  # the file list is whitespace-free by construction
if ! "$clang_format" --dry-run -Werror $files; then
  echo "run: clang-format -i <the files above>" >&2
  exit 1
fi
echo "clang-format: $(echo "$files" | wc -l) files clean"
