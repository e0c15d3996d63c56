#!/usr/bin/env bash
# Slurm TaskProlog (slurm.conf: TaskProlog=/etc/slurm/nccl-pilot-taskprolog.sh): every line it
# prints as "export NAME=value" lands in the environment of each task, so every job of the
# cluster gets nccl-pilot without touching its batch script. A job opts out with
# NCCL_PILOT_OPT_OUT=1 (sbatch --export=ALL,NCCL_PILOT_OPT_OUT=1).
set -u

pilot=/opt/nccl-pilot
[[ ${NCCL_PILOT_OPT_OUT:-0} == 1 ]] && exit 0
[[ -f $pilot/lib/libnccl-net-pilot.so ]] || exit 0

echo "export NCCL_NET_PLUGIN=$pilot/lib/libnccl-net-pilot.so"
echo "export NCCL_TUNER_PLUGIN=$pilot/lib/libnccl-tuner-pilot.so"
# The cluster's fitted table, if the admins published one; a job may set its own instead.
if [[ -z ${NCCL_PILOT_TUNER_TABLE:-} && -f /etc/nccl/pilot.table ]]; then
  echo "export NCCL_PILOT_TUNER_TABLE=/etc/nccl/pilot.table"
fi
# Ethernet partitions (no RDMA): name the interfaces that carry the traffic.
#   echo "export NCCL_SOCKET_IFNAME=eth0"
# InfiniBand/RoCE partitions need nothing more: NCCL's IB transport keeps the data.
