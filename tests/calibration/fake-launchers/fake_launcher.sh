#!/bin/sh
# Stand-ins for srun and mpirun (links to this script), for testing the commands
# `nccl-pilot sweep` builds: they read the options it uses, tell the fake nccl-tests the job
# shape through FAKE_NCCL_TESTS_NODES / FAKE_NCCL_TESTS_TASKS_PER_NODE, and run the program
# once (as an MPI build's rank 0 would print everything).
set -eu

nodes=1 tasks=1 np=0
case $(basename "$0") in
  srun)
    while [ $# -gt 0 ]; do
      case $1 in
        --nodes=*) nodes=${1#*=}; shift ;;
        -N | --nodes) nodes=$2; shift 2 ;;
        --ntasks-per-node=*) tasks=${1#*=}; shift ;;
        --ntasks-per-node) tasks=$2; shift 2 ;;
        --*=*) shift ;;
        -*) echo "fake srun: unknown option $1" >&2; exit 2 ;;
        *) break ;;
      esac
    done
    ;;
  mpirun)
    while [ $# -gt 0 ]; do
      case $1 in
        -np | -n) np=$2; shift 2 ;;
        -npernode | --npernode) tasks=$2; shift 2 ;;
        -H | --host)
          # host:slots,host:slots
          nodes=$(printf '%s\n' "$2" | tr ',' '\n' | wc -l)
          tasks=$(printf '%s\n' "$2" | cut -d, -f1 | cut -d: -f2)
          shift 2 ;;
        -x) export "${2?}"; shift 2 ;;
        -*) echo "fake mpirun: unknown option $1" >&2; exit 2 ;;
        *) break ;;
      esac
    done
    if [ "$np" -gt 0 ] && [ "$tasks" -gt 0 ]; then nodes=$((np / tasks)); fi
    ;;
  *) echo "call me as srun or mpirun" >&2; exit 2 ;;
esac
if [ $# -eq 0 ]; then echo "fake launcher: no program" >&2; exit 2; fi
FAKE_NCCL_TESTS_NODES=$nodes FAKE_NCCL_TESTS_TASKS_PER_NODE=$tasks
export FAKE_NCCL_TESTS_NODES FAKE_NCCL_TESTS_TASKS_PER_NODE
exec "$@"
