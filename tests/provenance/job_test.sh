#!/usr/bin/env bash
# Issue 31's "Done when" through the real ABIs: four rank processes, each loading a fake
# libnccl.so.2 RTLD_LOCAL (tests/provenance/fake_libnccl.cc) that merges nccl.conf into the
# environment and loads the built plugin as NCCL's init does:
#   rank 0  NCCL 2.28.9, NCCL_SOCKET_IFNAME=eth0: nothing odd
#   rank 1  the same, and a second libnccl (2.27.5) mapped first, as cupy or vLLM would
#   rank 2  NCCL_PROTO=LL128; tuner and profiler from libnccl-tuner-pilot.so and
#           libnccl-profiler-pilot.so, so three copies of our library share the one WARN
#   rank 3  NCCL 2.28.3 with NCCL_SOCKET_IFNAME=eth1
# (and, beforehand, one process of NCCL 2.27.5 in a directory of its own: the older ABIs).
# Every rank reads NCCL_CONF_FILE (NCCL_IB_TIMEOUT=22, and NCCL_SOCKET_IFNAME=eth9, which the
# environment overrides). job_check.py then checks what the fake NCCL did, each record, each
# process's WARN lines, and `nccl-pilot doctor --job` (exit 1, ranks 1, 2, 3 named, rank 0 not
# as odd).
# Usage: job_test.sh RANK_DRIVER FAKE_NCCL_DIR NET_LIB TUNER_LIB PROFILER_LIB NCCL_PILOT SRC
#   FAKE_NCCL_DIR holds nccl-<version>/libnccl.so.2 (2.28.9, 2.28.3, 2.27.5); SRC the checkout
set -euo pipefail
[[ $# -eq 7 ]] || {
  echo "usage: $0 RANK_DRIVER FAKE_NCCL_DIR NET_LIB TUNER_LIB PROFILER_LIB NCCL_PILOT SRC" >&2
  exit 2
}
driver=$1 fakes=$2 net=$3 tuner=$4 profiler=$5 tool=$6 src=$7
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# NCCL merges /etc/nccl.conf into every process (so does the fake): a host's own file would
# change every record and the WARN counts this test expects.
if [[ -e /etc/nccl.conf ]]; then
  echo "SKIP: this host has an /etc/nccl.conf, which NCCL (and the fake) merge into every rank"
  exit 77
fi

work=$(mktemp -d /tmp/pilot-provenance-job-XXXXXX)
trap 'rm -rf "$work"' EXIT

# Nothing from the caller's environment may steer NCCL, our library or the launcher's rank.
while IFS= read -r name; do
  unset "$name"
done < <(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\)=.*/\1/p')
unset RANK LOCAL_RANK SLURM_PROCID SLURM_LOCALID OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_LOCAL_RANK \
  PMI_RANK PMIX_RANK

# NCCL dlcloses the net plugin at the last communicator's destroy (src/plugin/net.cc,
# ncclNetPluginUnload), and so does the fake: the net plugin's process-lifetime state
# (plugin/net/process.cc) is then unreachable, which LeakSanitizer would report. Leaks are
# tests/net_plugin's and tests/profiler's to find; this test is about the records.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

job=$work/job
conf=$work/nccl.conf
table=$src/examples/h100-2node.table
mkdir -p "$job" "$work/nccl-2.27" "$work/empty-sysfs"
printf '%s\n' "# site-wide settings, as /etc/nccl.conf holds them" "NCCL_IB_TIMEOUT=22" \
  "NCCL_SOCKET_IFNAME=eth9" >"$conf"

# Rank r's process; its stdout and stderr in $work/rank<r>.out, .err.
rank() { # R NCCL_VERSION IFNAME [VAR=VALUE...] -- DRIVER_ARGS...
  local r=$1 version=$2 ifname=$3
  shift 3
  local -a vars=()
  while [[ $1 != -- ]]; do
    vars+=("$1")
    shift
  done
  shift
  # The machine is a recording (hwloc XML, an empty sysfs) and our transport stays off: only
  # what the record says may differ between ranks. PILOT_TEST_SECRET must appear in no file.
  env NCCL_PILOT_METRICS=1 NCCL_PILOT_METRICS_DIR="$job" RANK="$r" LOCAL_RANK="$r" \
    NCCL_CONF_FILE="$conf" NCCL_SOCKET_IFNAME="$ifname" NCCL_PILOT_TRANSPORT=none \
    NCCL_PILOT_HWLOC_XML="$src/tests/topology/data/hwloc/baremetal-2gpu-2nic-switch.xml" \
    NCCL_PILOT_SYSFS_ROOT="$work/empty-sysfs" NCCL_PILOT_TUNER_TABLE="$table" \
    PILOT_TEST_SECRET=hunter2-not-for-records "${vars[@]}" \
    "$driver" --nccl "$fakes/nccl-$version/libnccl.so.2" --rank "$r" --nranks 4 "$@" \
    >"$work/rank$r.out" 2>"$work/rank$r.err"
}

# The fake NCCL's own mechanics, before any record: each copy answers with its own version
# through dladdr on its code, and neither is in the global scope.
"$driver" --check --nccl "$fakes/nccl-2.28.9/libnccl.so.2" \
  --also-map "$fakes/nccl-2.27.5/libnccl.so.2" >"$work/check.out"

# Outside the job: one process of NCCL 2.27.5, which takes net v10, tuner v4 and profiler v4.
job=$work/nccl-2.27
rank 0 2.27.5 eth0 -- --net "$net" || {
  echo "FAIL the NCCL 2.27.5 process exited $?:"
  cat "$work/rank0.err"
  exit 1
}
mv "$work/rank0.out" "$work/nccl-2.27.out"
mv "$work/rank0.err" "$work/nccl-2.27.err"
job=$work/job

pids=()
rank 0 2.28.9 eth0 -- --net "$net" &
pids+=($!)
rank 1 2.28.9 eth0 -- --net "$net" --also-map "$fakes/nccl-2.27.5/libnccl.so.2" &
pids+=($!)
rank 2 2.28.9 eth0 NCCL_PROTO=LL128 -- --net "$net" --tuner "$tuner" --profiler "$profiler" &
pids+=($!)
rank 3 2.28.3 eth1 -- --net "$net" &
pids+=($!)
failed=0
for r in 0 1 2 3; do
  rc=0
  wait "${pids[$r]}" || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "FAIL rank $r exited $rc:"
    cat "$work/rank$r.err"
    failed=1
  fi
done
[[ $failed -eq 0 ]] || exit 1

doctor_rc=0
"$tool" doctor --job "$job" >"$work/doctor.txt" 2>"$work/doctor.err" || doctor_rc=$?
json_rc=0
"$tool" doctor --job "$job" --json >"$work/doctor.json" 2>>"$work/doctor.err" || json_rc=$?

python3 "$here/job_check.py" --work "$work" --fakes "$fakes" --net "$net" --tuner "$tuner" \
  --profiler "$profiler" --table "$table" --conf "$conf" --doctor-rc "$doctor_rc" \
  --doctor-json-rc "$json_rc"
