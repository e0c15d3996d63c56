"""One rank of the GPU validation run (tests/gpu/run.sh starts one process per rank).

Rank r uses GPU r % GPUS (by default all share GPU 0); run.sh gives each rank its own
NCCL_HOSTID, so NCCL sees one GPU per host and has to move every byte through the network
plugin. The rank runs
all-reduce, all-gather and reduce-scatter over a size sweep, checks every result exactly
(small integers in float32 add without rounding) and writes what it did to a JSON file.

With PILOT_GPU_P2P_BYTES=B it then runs point-to-point traffic, checked as exactly: an
all_to_all_single of B bytes per peer (MoE dispatch; PyTorch issues it as a group of
ncclSend/ncclRecv with every rank, or as ncclAlltoAll) and a ring exchange of 2B bytes
(batch_isend_irecv: a Send to the next rank, a Recv from the previous one; pipeline stages).

With PILOT_GPU_CHURN=N it then rebuilds a weight-sync group N times, as an RL job's checkpoint
engine may at every sync: each time a new NCCL communicator of every rank broadcasts
CHURN_BYTES from rank 0 ITERS times, checked exactly, and is destroyed. The profiler must fold
them into one record with every call, and give back every slot (tests/gpu/metrics_check.py).

Usage: python3 rank.py RANK WORLD PORT SIZES ITERS RESULT_JSON [GPUS]
  SIZES  comma-separated byte counts, as nccl-tests' `size` (all-gather / reduce-scatter:
         the total over all ranks, which is also what NCCL hands its tuner)
"""
import os
import datetime
import json
import sys
import time
import traceback

import torch
import torch.distributed as dist

COLLECTIVES = ("allreduce", "allgather", "reducescatter")
ELEMENT = 4  # float32
CHURN_BYTES = 1 << 20


def pattern(n, rank, device):
    """Rank r's values: (r + 1) * (1 + i % 61), exact in float32 at any sum we make."""
    return (torch.arange(n, device=device, dtype=torch.float32) % 61 + 1) * (rank + 1)


def mismatch(got, want):
    """None if `got` is exactly `want`, else how many elements differ and the first of them."""
    wrong = (got != want).nonzero()
    if wrong.numel() == 0:
        return None
    first = int(wrong[0][0])
    return (f"{wrong.numel()} wrong element(s), first at {first}: "
            f"{float(got[first])} instead of {float(want[first])}")


def timed(kind, size, iters, run):
    """`run()` `iters` times: the operation's record, with its first wrong result (None if every
    one was exact) and its wall time per iteration."""
    op = {"coll": kind, "bytes": size, "iters": iters, "wrong": None}
    begin = time.monotonic()
    for _ in range(iters):
        op["wrong"] = op["wrong"] or run()
    op["ms_per_iter"] = round((time.monotonic() - begin) * 1000 / iters, 3)
    return op


def run_one(coll, size, rank, world, device):
    """One collective of `size` bytes; returns None if the result is exact, else a reason."""
    count = size // ELEMENT
    if coll == "allreduce":
        data = pattern(count, rank, device)
        dist.all_reduce(data)
        want = pattern(count, 0, device) * (world * (world + 1) // 2)
        got = data
    elif coll == "allgather":
        part = count // world
        data = pattern(part, rank, device)
        got = torch.empty(part * world, device=device, dtype=torch.float32)
        dist.all_gather_into_tensor(got, data)
        want = torch.cat([pattern(part, r, device) for r in range(world)])
    else:
        part = count // world
        data = pattern(part * world, rank, device)
        got = torch.empty(part, device=device, dtype=torch.float32)
        dist.reduce_scatter_tensor(got, data)
        full = pattern(part * world, 0, device) * (world * (world + 1) // 2)
        want = full[rank * part:(rank + 1) * part]
    torch.cuda.synchronize(device)
    return mismatch(got, want)


def run_p2p(kind, size, rank, world, device):
    """One all-to-all of `size` bytes per peer, or one ring exchange of `size` bytes; returns
    None if the result is exact, else a reason."""
    count = size // ELEMENT
    if kind == "alltoall":
        data = pattern(count * world, rank, device)  # chunk j goes to rank j
        got = torch.empty_like(data)
        dist.all_to_all_single(got, data)
        want = torch.cat([pattern(count * world, r, device)[rank * count:(rank + 1) * count]
                          for r in range(world)])
    else:
        data = pattern(count, rank, device)
        got = torch.empty_like(data)
        ops = [dist.P2POp(dist.isend, data, (rank + 1) % world),
               dist.P2POp(dist.irecv, got, (rank - 1) % world)]
        for request in dist.batch_isend_irecv(ops):
            request.wait()
        want = pattern(count, (rank - 1) % world, device)
    torch.cuda.synchronize(device)
    return mismatch(got, want)


def run_churn(groups, iters, rank, world, device):
    """The weight-sync group rebuilt `groups` times; its record, with its first wrong result."""
    record = {"groups": groups, "broadcasts": groups * iters, "bytes": CHURN_BYTES,
              "wrong": None}
    count = CHURN_BYTES // ELEMENT
    want = pattern(count, 0, device)
    begin = time.monotonic()
    for _ in range(groups):
        group = dist.new_group(ranks=list(range(world)), backend="nccl")
        for _ in range(iters):
            data = want.clone() if rank == 0 else torch.zeros_like(want)
            dist.broadcast(data, src=0, group=group)
            torch.cuda.synchronize(device)
            record["wrong"] = record["wrong"] or mismatch(data, want)
        dist.destroy_process_group(group)
    record["s"] = round(time.monotonic() - begin, 3)
    return record


def mapped_libnccl():
    """The libnccl.so files this process maps (torch's own, and any other copy), for the
    provenance phase to compare with what our library recorded."""
    found = set()
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            fields = line.split(None, 5)  # address perms offset dev inode [path]
            if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith("libnccl.so"):
                found.add(fields[5].strip())
    return sorted(found)


def main():
    rank, world, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    sizes = [int(s) for s in sys.argv[4].split(",")]
    iters = int(sys.argv[5])
    result_path = sys.argv[6]
    gpus = int(sys.argv[7]) if len(sys.argv) > 7 else 1
    p2p_bytes = int(os.environ.get("PILOT_GPU_P2P_BYTES", "0"))
    churn = int(os.environ.get("PILOT_GPU_CHURN", "0"))
    result = {"rank": rank, "world": world, "ops": [], "p2p_ops": [], "errors": [],
              "finished": False}
    try:
        device = torch.device(f"cuda:{rank % gpus}")
        torch.cuda.set_device(device)
        result["torch"] = torch.__version__
        result["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        result["gpu"] = f"{device}: {torch.cuda.get_device_name(device)}"
        started = time.monotonic()
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world, device_id=device,
                                timeout=datetime.timedelta(seconds=120))
        result["init_s"] = round(time.monotonic() - started, 3)
        result["pid"] = os.getpid()
        result["libnccl"] = mapped_libnccl()
        for coll in COLLECTIVES:
            for size in sizes:
                if size % (ELEMENT * world):
                    raise ValueError(f"size {size} is not a multiple of {ELEMENT * world}")
                result["ops"].append(timed(coll, size, iters,
                                           lambda: run_one(coll, size, rank, world, device)))
        for kind, size in (("alltoall", p2p_bytes), ("sendrecv", 2 * p2p_bytes)):
            if size <= 0:
                continue
            result["p2p_ops"].append(timed(kind, size, iters,
                                           lambda: run_p2p(kind, size, rank, world, device)))
        if churn > 0:
            result["churn"] = run_churn(churn, iters, rank, world, device)
        dist.barrier()
        dist.destroy_process_group()
        result["finished"] = True
    except Exception:  # the run must always leave its evidence
        result["errors"].append(traceback.format_exc())
    with open(result_path, "w", encoding="utf-8") as out:
        json.dump(result, out, indent=1)
    wrong = any(op["wrong"] for op in result["ops"] + result["p2p_ops"] +
                [result.get("churn") or {}])
    return 0 if result["finished"] and not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
