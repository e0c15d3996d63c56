#!/usr/bin/env bash
# Builds the release packages into build/packages/: a .deb (installs under /usr) and a
# relocatable .tar.gz (unpack anywhere, e.g. /opt/nccl-pilot). docs/deployment.md says how to
# use them; tests/install/packages_test.sh checks what they hold.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh
cmake --preset release >/dev/null   # again, so the package version has the current commit
cmake --build --preset release
rm -rf build/packages
(cd build && cpack -G "DEB;TGZ" -B packages >/dev/null)
for package in build/packages/*.deb build/packages/*.tar.gz; do
  printf '%s  %s\n' "$(du -h "$package" | cut -f1)" "$package"
done
