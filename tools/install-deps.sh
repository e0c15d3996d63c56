#!/usr/bin/env bash
# Installs the Debian 12 packages nccl-pilot needs; skips what is present.
#   tools/install-deps.sh          to build the library and the tool and run the demo (quickstart.sh)
#   tools/install-deps.sh --tests  and to run every test (run-tests.sh)
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkgconf binutils
  libgtest-dev libgmock-dev libbenchmark-dev   # the test programs the demo runs; benchmarks
  libcli11-dev nlohmann-json3-dev              # the nccl-pilot tool
  libhwloc-dev hwloc                           # topology (headers; lstopo for the benchmark)
  python3                                      # the GPU validation checker (the demo's dry run)
)
if [[ ${1:-} == --tests ]]; then
  packages+=(
    iproute2                                   # network namespaces for transport tests
    nftables                                   # packet loss in the netns fault tests (tests/net)
    iperf3                                     # netbench's TCP baseline (tests/netbench)
    clang libclang-rt-14-dev clang-format      # the asan build and libFuzzer targets, formatting check
    shellcheck                                 # lint of our shell scripts
    jq                                         # tests/netbench/bench_vs_nccl_socket.sh reads netbench JSON
    python3-yaml                               # the deployment recipes' lint (tests/install)
    prometheus prometheus-node-exporter        # promtool, and the profiler's scrape test
  )
elif (($# > 0)); then
  echo "usage: $0 [--tests]" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "installing: ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
