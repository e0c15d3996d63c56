#!/bin/sh
# A stand-in for the nccl-tests binaries, for testing `nccl-pilot sweep` without a GPU.
# all_reduce_perf, all_gather_perf and reduce_scatter_perf are links to this script; the name
# it is called by is the collective. It prints output in nccl-tests' text layout (preamble,
# 3-line header, rows, footer) and, with -J FILE, the -J JSON file, with times from a small
# alpha-beta model in which every NCCL_ALGO / NCCL_PROTO / NCCL_MIN_NCHANNELS /
# NCCL_MAX_NCHANNELS setting gives different times. The "default" choice uses a skewed model
# (it underrates LL128), so forcing LL128 beats the default in a band of sizes, as happens on
# real machines. Deterministic: the noise (1-4%) is seeded from NCCL_PILOT_SWEEP_RUN, the
# configuration and FAKE_NCCL_TESTS_SEED.
#
# Options read: -b -e -f -i -g -t -n -w -c -J (also --output_file), --help; others are
# accepted and ignored.
# Environment:
#   FAKE_NCCL_TESTS_FAIL=1             fail like a launch failure (exit 1)
#   FAKE_NCCL_TESTS_FAIL_IF=VAR=VALUE  the same, only when VAR has that value
#   FAKE_NCCL_TESTS_HANG_IF=VAR=VALUE  print the header, then sleep (for interrupt tests)
#   FAKE_NCCL_TESTS_WRONG=1            report #wrong > 0 at the largest size
#   FAKE_NCCL_TESTS_NO_JSON=1          behave like a release without -J
#   FAKE_NCCL_TESTS_NODES, FAKE_NCCL_TESTS_TASKS_PER_NODE  set by the fake srun/mpirun
#   NCCL_DEBUG=INFO [NCCL_DEBUG_SUBSYS=...TUNING...]  NCCL's env and TUNING lines
set -eu

prog=$(basename "$0")
case $prog in
  all_reduce_perf | all_gather_perf | reduce_scatter_perf | broadcast_perf | reduce_perf) ;;
  *) prog=all_reduce_perf ;;
esac

usage() {
  echo "USAGE: $prog"
  echo "	[-t,--nthreads <num threads>]"
  echo "	[-g,--ngpus <gpus per thread>]"
  echo "	[-b,--minbytes <min size in bytes>]"
  echo "	[-e,--maxbytes <max size in bytes>]"
  echo "	[-i,--stepbytes <increment size>]"
  echo "	[-f,--stepfactor <increment factor>]"
  echo "	[-n,--iters <iteration count>]"
  echo "	[-w,--warmup_iters <warmup iteration count>]"
  echo "	[-c,--check <check iteration count>]"
  if [ "${FAKE_NCCL_TESTS_NO_JSON:-0}" != 1 ]; then
    echo "	[-J,--output_file <file> write output to filepath, if accessible.]"
  fi
  echo "	[-h,--help]"
}

minbytes=33554432 maxbytes=33554432 factor=1 stepbytes=1048576
ngpus=1 nthreads=1 iters=20 warmup=1 check=1 json=""
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    -b | --minbytes) minbytes=$2; shift 2 ;;
    -e | --maxbytes) maxbytes=$2; shift 2 ;;
    -f | --stepfactor) factor=$2; shift 2 ;;
    -i | --stepbytes) stepbytes=$2; shift 2 ;;
    -g | --ngpus) ngpus=$2; shift 2 ;;
    -t | --nthreads) nthreads=$2; shift 2 ;;
    -n | --iters) iters=$2; shift 2 ;;
    -w | --warmup_iters) warmup=$2; shift 2 ;;
    -c | --check) check=$2; shift 2 ;;
    -J | --output_file)
      if [ "${FAKE_NCCL_TESTS_NO_JSON:-0}" = 1 ]; then
        echo "invalid option 'J'"; usage; exit 0
      fi
      json=$2; shift 2 ;;
    -*) if [ $# -ge 2 ]; then shift 2; else shift; fi ;;
    *) echo "invalid argument '$1'"; exit 1 ;;
  esac
done

# VAR=VALUE: does the environment have it?
env_is() {
  var=${1%%=*}
  want=${1#*=}
  case $var in '' | *[!A-Za-z0-9_]*) return 1 ;; esac
  have=""
  eval "have=\${$var-}"
  [ "$have" = "$want" ]
}

nodes=${FAKE_NCCL_TESTS_NODES:-1}
tasks=${FAKE_NCCL_TESTS_TASKS_PER_NODE:-1}
host=$(uname -n)
fail=0
if [ "${FAKE_NCCL_TESTS_FAIL:-0}" = 1 ]; then fail=1; fi
if [ -n "${FAKE_NCCL_TESTS_FAIL_IF:-}" ] && env_is "$FAKE_NCCL_TESTS_FAIL_IF"; then fail=1; fi
hang=0
if [ -n "${FAKE_NCCL_TESTS_HANG_IF:-}" ] && env_is "$FAKE_NCCL_TESTS_HANG_IF"; then hang=1; fi

run_model() {
  awk -v prog="$prog" -v minbytes="$minbytes" -v maxbytes="$maxbytes" -v factor="$factor" \
    -v stepbytes="$stepbytes" -v ngpus="$ngpus" -v nthreads="$nthreads" -v iters="$iters" \
    -v warmup="$warmup" -v check="$check" -v json="$json" -v nodes="$nodes" -v tasks="$tasks" \
    -v host="$host" -v fail="$fail" -v part="$1" -f "$(dirname "$0")/fake_nccl_tests.awk"
}

if [ "$hang" = 1 ]; then
  run_model preamble
  sleep 600
  exit 0
fi
run_model all || exit 1
if [ "$fail" = 1 ]; then exit 1; fi
