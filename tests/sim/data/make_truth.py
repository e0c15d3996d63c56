#!/usr/bin/env python3
"""Writes synthetic-2n-allreduce-truth.txt: a synthetic truth for the job simulator (tests/sim),
so the in-job calibration loop runs in a bare clone and in the quick start. Two nodes x 1 GPU
over TCP, all-reduce, every Ring/Tree x LL/LL128/Simple cell forced once, in the g5 fixture's
labels (default, ring_ll .. tree_simple). Each cell is alpha + bytes / bandwidth with a fixed
ripple; NCCL's default runs Ring/LL128 up to 64 KB and Ring/Simple above, so it is off by 25-35%
below 4 KB (Ring/LL, Tree/LL), by ~10% in the middle (Tree/LL128) and by ~5% at the top
(Tree/Simple). Made up for nccl-pilot, not a measurement. Deterministic:

    tests/sim/data/make_truth.py > tests/sim/data/synthetic-2n-allreduce-truth.txt
"""
import math

# (alpha us, bandwidth GB/s) per cell.
CELLS = {
    "ring_ll": (34.0, 0.45),
    "ring_ll128": (50.0, 0.80),
    "ring_simple": (70.0, 1.10),
    "tree_ll": (38.0, 0.55),
    "tree_ll128": (44.0, 0.95),
    "tree_simple": (60.0, 1.16),
}


def cell_time(name, size):
    alpha, gbs = CELLS[name]
    ripple = 1 + 0.02 * math.sin(3.1 * math.log2(size) + len(name))
    return (alpha + size / (gbs * 1e3)) * ripple


def truth(config, size):
    if config == "default":
        return cell_time("ring_ll128" if size <= 64 << 10 else "ring_simple", size)
    return cell_time(config, size)


def run(config):
    lines = [
        "# RUN file=synthetic/%s.txt config=%s" % (config, config),
        "# nccl-tests version 2.17.9 nccl-headers=22809 nccl-library=22809",
        "# Collective test starting: all_reduce_perf",
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 67108864 step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "#  Rank  0 Group  0 Pid   1000 on      node0 device  0 [0000:10:00] NVIDIA A10G",
        "#  Rank  1 Group  0 Pid   1001 on      node1 device  0 [0000:10:00] NVIDIA A10G",
        "#",
        "#                                                              out-of-place                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ",
    ]
    size = 8
    while size <= 64 << 20:
        t = truth(config, size)
        bw = size / t / 1e3  # 2 ranks: bus bandwidth = algorithm bandwidth
        cell = "%10.2f %7.2f %7.2f %7d" % (t, bw, bw, 0)
        lines.append("%12d %13d %9s %7s %7d %s %s" % (size, size // 4, "float", "sum", -1, cell, cell))
        size *= 2
    lines += ["# Avg bus bandwidth    : 0.5", "#"]
    return lines


def main():
    print("# SOURCE: synthetic, written by tests/sim/data/make_truth.py for nccl-pilot (not a real "
          "measurement): 2 nodes x 1 GPU over TCP, all-reduce; config=default is NCCL's own choice, "
          "ring_ll .. tree_simple force NCCL_ALGO x NCCL_PROTO; one run each")
    for config in ["default"] + sorted(CELLS):
        print("\n".join(run(config)))


if __name__ == "__main__":
    main()
