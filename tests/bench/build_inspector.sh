#!/usr/bin/env bash
# Builds NCCL's Inspector profiler (plugins/profiler/inspector of NVIDIA/nccl) beside ours for the
# overhead comparison only: nothing of it is committed or linked into the project. Its CUDA
# runtime calls go to tests/bench/fake_cuda_runtime.c, so it loads on a machine without a GPU
# (at run time LD_LIBRARY_PATH must also reach the fake driver, libcuda.so.1, of tests/profiler).
# Usage: build_inspector.sh NCCL_SOURCE OUT_DIR FAKE_CUDART
#   NCCL_SOURCE  a checkout of NVIDIA/nccl, or its git directory (the sources are exported)
#   OUT_DIR      receives libnccl-profiler-inspector.so
#   FAKE_CUDART  the built libpilot-fake-cudart.so
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 NCCL_SOURCE OUT_DIR FAKE_CUDART" >&2; exit 2; }
nccl=$1 out=$2 cudart=$3
cuda=${CUDA_HOME:-/usr/local/cuda}
[[ -f $cuda/include/cuda_runtime.h ]] || { echo "no CUDA headers under $cuda (set CUDA_HOME)" >&2; exit 1; }
mkdir -p "$out"
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
if [[ -d $nccl/plugins/profiler/inspector ]]; then
  cp -R "$nccl/plugins/profiler/inspector/." "$src/"
  rev=$(git -C "$nccl" rev-parse --short HEAD 2>/dev/null || echo unknown)
else
  git --git-dir="$nccl" archive HEAD plugins/profiler/inspector | tar -x -C "$src" --strip-components=3
  rev=$(git --git-dir="$nccl" rev-parse --short HEAD)
fi
printf 'extern "C" const char* get_git_version_info() { return "%s"; }\n' "$rev" >"$src/version.cc"
# The flags of Inspector's own Makefile (-O2, C++17 with CUDA 13), its sources as they are.
g++ -std=c++17 -fPIC -O2 -shared -I"$cuda/include" -I"$src" -I"$src/nccl" \
  "$src"/inspector.cc "$src"/inspector_json.cc "$src"/inspector_prom.cc \
  "$src"/inspector_plugin.cc "$src"/inspector_cudawrap.cc "$src"/inspector_ring.cc \
  "$src"/inspector_event_pool.cc "$src"/json.cc "$src"/version.cc \
  -o "$out/libnccl-profiler-inspector.so" "$cudart" -ldl -lpthread
echo "built $out/libnccl-profiler-inspector.so (NVIDIA/nccl $rev)"
