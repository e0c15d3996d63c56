#!/usr/bin/env bash
# docs/architecture.md names every top-level folder of the checkout in its table (a row
# starting "| `NAME/` |"), and every folder it names exists: the map a newcomer reads first
# stays true. Build trees (build*/) and hidden folders are not part of the house.
#   layout_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: layout_test.sh SOURCE_DIR}
doc=$src/docs/architecture.md

# shellcheck disable=SC2016  # the backticks are the table's markdown, not a command
mapfile -t named < <(sed -n 's/^| `\([A-Za-z0-9_.-]*\)\/` |.*/\1/p' "$doc" | sort -u)
mapfile -t present < <(cd "$src" && git ls-files --cached --others --exclude-standard 2>/dev/null | sed -n 's|^\([^/.][^/]*\)/.*|\1|p' | sort -u)
if ((${#present[@]} == 0)); then  # not a git checkout (an exported tarball)
  mapfile -t present < <(cd "$src" && find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' \
    ! -name 'build*' -printf '%f\n' | sort -u)
fi

status=0
for folder in "${present[@]}"; do
  if ! printf '%s\n' "${named[@]}" | grep -qxF "$folder"; then
    echo "docs/architecture.md does not name the top-level folder $folder/"
    status=1
  fi
done
for folder in "${named[@]}"; do
  if [[ ! -d $src/$folder ]]; then
    echo "docs/architecture.md names $folder/, which does not exist"
    status=1
  fi
done
((status == 0)) && echo "docs/architecture.md names all ${#present[@]} top-level folders"
exit "$status"
