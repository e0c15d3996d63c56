"""One rank of the GPU run's "hang" phase (tests/gpu/run.sh starts one process per rank).

Live stall forensics on the real NCCL: the ranks run all-reduces on one communicator with our
profiler writing its state files (NCCL_PILOT_METRICS_DIR, NCCL_PILOT_STALL_S=3), and rank 1 (the
target) makes the others wait twice, while run.sh's driver runs `nccl-pilot hang` on those files
during each pause (tests/gpu/hang_check.py judges what it said):

  late     all-reduce #BEFORE: the target writes CONTROL/late ("PID UNIX_MS") and sleeps
           PILOT_GPU_HANG_LATE_S (15 s) before it calls it; the others wait in it. The target
           never launched it: `hang` must say not_launched [1].
  stopped  all-reduce #BEFORE+1+BETWEEN: the target launches it, waits 1.5 s (its writer has
           rewritten its state within a second of the launch), then writes CONTROL/stop-me; the
           driver stops it (SIGSTOP) and writes CONTROL/stopped, on which the others launch it and
           wait, until the driver continues the target (SIGCONT, 10 s later). `hang` must say
           frozen [1].

Every all-reduce (1 MiB of float32: rank r's pattern of rank.py plus the all-reduce's number)
is checked exactly, AFTER more follow the second pause, and the rank writes what it did to
RESULT_JSON: each all-reduce's number (NCCL's seqNumber: nothing else runs on the communicator),
result and wall time, the plan, and the target's sleep (unix ms, the state files' clock).

Usage: python3 hang_rank.py RANK WORLD PORT RESULT_JSON GPUS CONTROL_DIR
"""
import datetime
import json
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist

from rank import ELEMENT, mismatch, pattern

TARGET = 1
BEFORE, BETWEEN, AFTER = 10, 10, 5
BYTES = 1 << 20
LAUNCH_WRITTEN_S = 1.5  # the writer rewrites the state within a second of a launch
WAIT_FOR_DRIVER_S = 60


def now_ms():
    return int(time.time() * 1000)


def write_marker(control, name):
    """CONTROL/NAME holding "PID UNIX_MS", written whole (rename) for the driver to poll."""
    path = os.path.join(control, name)
    with open(path + ".tmp", "w", encoding="utf-8") as out:
        out.write(f"{os.getpid()} {now_ms()}\n")
    os.rename(path + ".tmp", path)


def wait_marker(control, name):
    path = os.path.join(control, name)
    deadline = time.monotonic() + WAIT_FOR_DRIVER_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {WAIT_FOR_DRIVER_S} s (the driver "
                               "never stopped the target)")
        time.sleep(0.02)


def main():
    rank, world, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    result_path, gpus, control = sys.argv[4], int(sys.argv[5]), sys.argv[6]
    late_s = float(os.environ.get("PILOT_GPU_HANG_LATE_S", "15"))
    late_seq, stop_seq = BEFORE, BEFORE + 1 + BETWEEN
    result = {"rank": rank, "world": world, "pid": os.getpid(), "bytes": BYTES,
              "plan": {"target": TARGET, "late_seq": late_seq, "stop_seq": stop_seq,
                       "late_s": late_s, "all_reduces": stop_seq + 1 + AFTER},
              "all_reduces": [], "errors": [], "finished": False}
    try:
        device = torch.device(f"cuda:{rank % gpus}")
        torch.cuda.set_device(device)
        result["torch"] = torch.__version__
        result["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world, device_id=device,
                                timeout=datetime.timedelta(seconds=120))
        count = BYTES // ELEMENT
        base = pattern(count, 0, device) * (world * (world + 1) // 2)
        for seq in range(result["plan"]["all_reduces"]):
            data = pattern(count, rank, device) + seq
            begin = time.monotonic()
            if seq == late_seq and rank == TARGET:
                write_marker(control, "late")
                result["slept_ms"] = [now_ms()]
                time.sleep(late_s)
                result["slept_ms"].append(now_ms())
            if seq == stop_seq and rank != TARGET:
                wait_marker(control, "stopped")
                begin = time.monotonic()
            dist.all_reduce(data)
            if seq == stop_seq and rank == TARGET:
                time.sleep(LAUNCH_WRITTEN_S)
                write_marker(control, "stop-me")
            torch.cuda.synchronize(device)
            result["all_reduces"].append({"seq": seq, "wrong": mismatch(data, base + world * seq),
                                          "s": round(time.monotonic() - begin, 3)})
        dist.destroy_process_group()
        result["finished"] = True
    except Exception:  # the run must always leave its evidence
        result["errors"].append(traceback.format_exc())
    with open(result_path, "w", encoding="utf-8") as out:
        json.dump(result, out, indent=1)
    wrong = any(op["wrong"] for op in result["all_reduces"])
    return 0 if result["finished"] and not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
