#!/usr/bin/env bash
# README step 1: install dependencies, build (build/) the library, the tool and the programs the
# demo runs (the build preset "demo": none of the tests, which tools/run-tests.sh builds), and
# run the demo on bundled data.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset demo

pilot=build/bin/nccl-pilot
table=examples/h100-2node.table
step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }

step "What the library exports" "$pilot" version
step "The example table's all-reduce decisions on 2 x 8 GPUs, as NCCL 2.28 sees them" \
  "$pilot" explain --table "$table" --coll allreduce --nodes 2 --ranks 16 --nccl 2.28
step "All-gather keyed on per-rank bytes, with chunk sizes (NCCL 2.30, tuner ABI v6)" \
  "$pilot" explain --table "$table" --coll allgather --nodes 2 --ranks 16 --nccl 2.30
step "The same all-reduce when NCCL_ALGO excludes Tree: a rule whose cell NCCL disabled steps aside" \
  "$pilot" explain --table "$table" --coll allreduce --nodes 2 --ranks 16 --nccl 2.28 \
  --disable tree
fleet=examples/fleet.table
step "One table, two fabrics (fabric= keys): the same all-reduce on InfiniBand ..." \
  "$pilot" explain --table "$fleet" --coll allreduce --nodes 2 --ranks 16 --nccl 2.30 --fabric ib
step "... and on RoCE, where a rule measured on NCCL 2.28-2.30 (nccl=) applies" \
  "$pilot" explain --table "$fleet" --coll allreduce --nodes 2 --ranks 16 --nccl 2.30 --fabric roce
step "The same on NCCL 2.32 (tuner ABI v7): that rule steps aside, NCCL keeps its own choice" \
  "$pilot" explain --table "$fleet" --coll allreduce --nodes 2 --ranks 16 --nccl 2.32 --fabric roce
step "The table's digest, which every rank logs and a launcher pins (NCCL_PILOT_TUNER_TABLE_SHA256)" \
  "$pilot" explain --table "$fleet" --digest
step "This machine as the net plugin would describe it to NCCL (no GPU here: nothing to pair)" \
  "$pilot" topo
step "A recorded KVM guest: GPUs and RDMA NICs on root ports (PHB), repaired into PIX pairs" \
  "$pilot" topo --sysfs-root tests/topology/data/kvm-flat-2gpu-2nic --nccl-xml build/kvm-topo.xml
step "The NCCL_TOPO_FILE the plugin would hand NCCL for it" cat build/kvm-topo.xml
# The plugin's INFO line on who carries the data, for a recorded sysfs tree (netbench then stops:
# with 0 devices there is nothing to measure, as NCCL would move on to its own transports).
transport_choice() {
  NCCL_PILOT_SYSFS_ROOT=$1 NCCL_SOCKET_IFNAME=lo "$pilot" netbench \
    --plugin build/lib/libnccl-net-pilot.so --sizes 4K --verbose 2>&1 |
    grep -m1 "transport auto" || true
}
step "Its RoCE ports are ACTIVE: by default the plugin leaves the data to NCCL's IB transport" \
  transport_choice tests/topology/data/kvm-flat-2gpu-2nic
mkdir -p build/ethernet-only-sysfs
step "An Ethernet-only host (no RDMA device): by default NCCL's own Socket transport carries the data" \
  transport_choice build/ethernet-only-sysfs
step "netbench: our TCP transport (opt-in) driven like NCCL's proxy, between two processes over loopback" \
  env NCCL_PILOT_TRANSPORT=socket NCCL_SOCKET_IFNAME=lo "$pilot" netbench \
  --plugin build/lib/libnccl-net-pilot.so --sizes 4K,64K,1M,4M --iters 20
sweep=tests/calibration/data/synthetic-2n-allreduce.txt
labels=(--label 'iteration_*=default' --label 'proto_simple*=NCCL_PROTO=Simple'
  --label 'proto_ll128=NCCL_PROTO=LL128' --label 'algo_tree=NCCL_ALGO=Tree')
step "fit a tuning table from a bundled sweep (keeps NCCL's default wherever the gain is noise)" \
  "$pilot" fit "$sweep" "${labels[@]}" -o build/fitted.table --evaluate
step "score that table on another sweep it was not fitted on (one run per configuration)" \
  "$pilot" evaluate --table build/fitted.table tests/calibration/data/synthetic-2n-allreduce-single.txt \
  "${labels[@]}"
step "what the fitted table makes NCCL 2.28 do" \
  "$pilot" explain --table build/fitted.table --coll allreduce --nodes 2 --ranks 16 --nccl 2.28
step "the evidence as a self-contained page" \
  "$pilot" report "$sweep" "${labels[@]}" -o build/report.html --no-gnuplot
doctor=tests/doctor/data
step "doctor on a recorded machine: ACS above a GPU, a NIC at x8, an IB port down (exit 1 expected)" \
  "$pilot" doctor --sysfs-root "$doctor/baremetal-faulty" || true
step "the same machine repaired: those checks pass" \
  "$pilot" doctor --sysfs-root "$doctor/baremetal-repaired" --only pcie-acs,pcie-link,rdma-port
rm -rf build/doctor-fp
for node in node-a node-b node-c; do
  "$pilot" doctor --sysfs-root "$doctor/baremetal-repaired" --fingerprint build/doctor-fp \
    --node "$node" >/dev/null 2>&1
done
"$pilot" doctor --sysfs-root "$doctor/baremetal-faulty" --fingerprint build/doctor-fp \
  --node node-d >/dev/null 2>&1 || true
step "the distributed check: which of four nodes differs, and why (exit 1 expected)" \
  "$pilot" doctor --compare build/doctor-fp || true
step "real NCCL 2.28.9 on an H200 (recorded by tests/gpu/run.sh), checked again by this build" \
  tests/gpu/run.sh --dry-run tests/gpu/recorded/h200-nccl2.28.9-4ranks --out build/gpu-dry-run
rm -rf build/monitor-demo
for rank in 0 1 2 3; do
  NCCL_PILOT_METRICS_DIR=build/monitor-demo NCCL_PILOT_TUNER_TABLE=examples/monitoring/demo.table \
    build/bin/pilot_profiler_replay --module build/lib/libnccl-profiler-pilot.so \
    --scenario examples/monitoring/demo.scenario --rank "$rank"
done
step "the profiler's files of a bundled 4-rank demo job (replayed through it by the test suite's fake NCCL)" \
  ls build/monitor-demo
step "read back: calls, kernel times, decisions, drift against the table's calibration, the late rank; the MoE all-to-all (a group of Send/Recv) as one operation, the pipeline's Send/Recv" \
  "$pilot" monitor build/monitor-demo --html build/monitor.html
step "a bundled stuck job (8 ranks, examples/monitoring/stuck-job): which rank the others wait for, and why (exit 1 expected)" \
  "$pilot" hang examples/monitoring/stuck-job || true
step "what every rank of a bundled 4-rank job really loaded (examples/monitoring/odd-rank-job): another NCCL on rank 3, a second libnccl in rank 1, NCCL_PROTO=LL128 on rank 2 (exit 1 expected)" \
  "$pilot" doctor --job examples/monitoring/odd-rank-job || true
rm -rf build/long-job-demo
mkdir -p build/long-job-demo
step "a long RL job's process: its weight-sync group rebuilt 2,000 times (every tenth torn down mid-Broadcast) while the exporter writes; time per block, memory and files stay flat" \
  build/bin/pilot_profiler_long_job --module build/lib/libnccl-profiler-pilot.so \
  --dir build/long-job-demo --comms 2000 --block 500
step "read back: the 2,000 finished communicators are one record, every call and the bandwidth exact" \
  "$pilot" monitor build/long-job-demo
# In-job calibration on a simulated 2-node job (tests/sim: a synthetic truth, one process per
# rank driving the built tuner and profiler through NCCL's ABIs, per-call noise and stragglers).
sim=build/bin/pilot_job_sim
truth=tests/sim/data/synthetic-2n-allreduce-truth.txt
calib=build/calibration-demo
rm -rf "$calib"
step "in-job calibration: three simulated jobs (NCCL's own cost model as the table NCCL passes); each explores within 5% of NCCL's time (NCCL_PILOT_TUNER_EXPLORE=0.05), nccl-pilot fit reads every job so far, the next job runs the table and explores only what it marks unknown" \
  "$sim" loop --sweep "$truth" --out "$calib" --jobs 3
step "the last table explained: its rules, and the explore= marks the next exploring job reads" \
  "$pilot" explain --table "$calib/seed1/job3/fitted.table" --coll allreduce --nodes 2 --ranks 2 \
  --nccl 2.28 --fabric ethernet
step "installed as a user gets it (cmake --install into a scratch prefix; packages: tools/package.sh)" \
  sh -c 'cmake --install build --prefix build/demo-prefix >/dev/null &&
         find build/demo-prefix -type f ! -path "*/share/*" | sort'
step "the installed tool finds the installed library beside it" build/demo-prefix/bin/nccl-pilot version
