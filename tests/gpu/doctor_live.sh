#!/usr/bin/env bash
# What only a GPU host shows `nccl-pilot doctor`: its real sysfs. On a machine with an NVIDIA
# GPU, doctor must find the GPU (pcie-link judges its link, numa its local CPUs), name the
# libnccl.so.2 the loader finds, and exit 0 or 1 (never 2 or a crash). The recorded trees of
# tests/doctor cover every verdict; this covers the live reads.
#   tests/gpu/doctor_live.sh [BUILD_DIR]   exit 77 (skipped) without an NVIDIA PCI device
set -euo pipefail
build=${1:-build}
cli=$build/bin/nccl-pilot
python=${PYTHON:-python3}

if ! grep -qsx 0x10de /sys/bus/pci/devices/*/vendor; then
  echo "no NVIDIA PCI device in /sys/bus/pci/devices: skipped"
  exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
"$cli" doctor --json >"$out" || status=$?
if ((status > 1)); then
  echo "nccl-pilot doctor exited $status"
  exit 1
fi
"$python" - "$out" <<'PY'
import json
import sys

report = json.load(open(sys.argv[1]))
checks = report["checks"]
def named(check, prefix):
    return [c for c in checks if c["id"] == check and c["subject"].startswith(prefix)]
links = named("pcie-link", "GPU")
assert links and all(c["status"] != "SKIP" for c in links), ("no GPU link judged", report["machine"])
assert named("numa", "GPU"), ("no GPU in the numa check", report["machine"])
assert named("nccl", "libnccl.so.2"), "no nccl finding"
print(report["machine"])
for c in links + named("numa", "GPU") + named("nccl", "libnccl.so.2") + named("gdr", ""):
    print(c["status"], c["id"], c["subject"], "|", c["evidence"])
PY
