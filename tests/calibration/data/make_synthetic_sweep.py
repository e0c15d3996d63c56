#!/usr/bin/env python3
"""Writes synthetic-2n-allreduce-single.txt: a second synthetic sweep of the ground truth in
synthetic-2n-allreduce.txt, one run per configuration (what most people have), for the quick
start's `evaluate` step and the estimated-noise tests. Deterministic: the same file every time.

    tests/calibration/data/make_synthetic_sweep.py > tests/calibration/data/synthetic-2n-allreduce-single.txt
"""
import random

SEED = 11
RANKS = 16


def truth(config, size):
    """Microseconds: the ground truth in synthetic-2n-allreduce.txt's header."""
    ll = 12 + size / 5e3
    simple = 30 + size / 2.2e4
    ll128 = 18 + size / 1.4e4
    tree = 14 + size / (3e3 if size < 4 << 20 else 2.6e4)
    if config == "default":
        return ll if size < 1 << 20 else simple
    return {"proto_simple": simple, "proto_ll128": ll128, "algo_tree": tree}[config]


def amplitude(config, size):
    """Uniform noise: the default +-12% below 64 KB and +-3% above, forced runs +-8%/+-2%."""
    if config == "default":
        return 0.12 if size < 64 << 10 else 0.03
    return 0.08 if size < 64 << 10 else 0.02


def row(size, rng, config):
    cells = []
    for _ in ("out-of-place", "in-place"):
        t = truth(config, size) * (1 + amplitude(config, size) * (2 * rng.random() - 1))
        algbw = size / t / 1e3
        busbw = algbw * 2 * (RANKS - 1) / RANKS
        cells.append("%9.2f %7.2f %7.2f %7d" % (t, algbw, busbw, 0))
    return "%12d %13d %9s %7s %7d %s %s" % (size, size // 4, "float", "sum", -1, cells[0], cells[1])


def run(name, config, rng):
    lines = [
        "# RUN file=%s.txt config=%s" % (name, name),
        "# nccl-tests version 2.17.9 nccl-headers=22803 nccl-library=22803",
        "# Collective test starting: all_reduce_perf",
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    for rank in range(RANKS):
        node = "nodeA" if rank < RANKS // 2 else "nodeB"
        lines.append("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0000:%02x:00] NVIDIA H100 80GB HBM3"
                     % (rank, 1000 + rank, node, rank % (RANKS // 2), rank))
    lines += [
        "nodeA:1000:1000 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>",
        "nodeA:1000:1000 [0] NCCL INFO Using network IB",
        "NCCL version 2.28.3+cuda12.9",
        "#",
        "#                                                              out-of-place                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ",
    ]
    size = 8
    while size <= 1 << 30:
        lines.append(row(size, rng, config))
        size *= 2
    lines += [
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 1.0",
        "#",
        "# Collective test concluded: all_reduce_perf",
        "#",
    ]
    return lines


def main():
    rng = random.Random(SEED)
    print("# SOURCE: synthetic, written by tests/calibration/data/make_synthetic_sweep.py for "
          "nccl-pilot (not a real measurement). The ground truth of synthetic-2n-allreduce.txt "
          "(2 nodes x 8 ranks, IB; NCCL's default keeps LL up to 1 MB, Tree is faster from 4 MB "
          "and 5x slower at 1-2 MB), ONE run per configuration, seed %d; out-of-place and in-place "
          "are separate draws. iteration_1 = default; proto_simple = NCCL_PROTO=Simple; "
          "proto_ll128 = NCCL_PROTO=LL128; algo_tree = NCCL_ALGO=Tree" % SEED)
    for name, config in (("iteration_1", "default"), ("proto_simple", "proto_simple"),
                         ("proto_ll128", "proto_ll128"), ("algo_tree", "algo_tree")):
        print("\n".join(run(name, config, rng)))


if __name__ == "__main__":
    main()
