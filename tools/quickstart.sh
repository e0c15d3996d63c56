#!/usr/bin/env bash
# README step 1: install dependencies, build (build/), and run the demo on bundled data.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release

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
step "This machine as the net plugin would describe it to NCCL (no GPU here: nothing to pair)" \
  "$pilot" topo
step "A recorded KVM guest: GPUs and RDMA NICs on root ports (PHB), repaired into PIX pairs" \
  "$pilot" topo --sysfs-root tests/topology/data/kvm-flat-2gpu-2nic --nccl-xml build/kvm-topo.xml
step "The NCCL_TOPO_FILE the plugin would hand NCCL for it" cat build/kvm-topo.xml
step "netbench: our TCP transport driven like NCCL's proxy, between two processes over loopback" \
  env NCCL_SOCKET_IFNAME=lo "$pilot" netbench --plugin build/lib/libnccl-net-pilot.so \
  --sizes 64K,1M,4M --iters 20
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
step "real NCCL 2.28.9 on an H200 (recorded by tests/gpu/run.sh), checked again by this build" \
  tests/gpu/run.sh --dry-run tests/gpu/recorded/h200-nccl2.28.9-4ranks --out build/gpu-dry-run
