#!/usr/bin/env python3
"""Clones one hung job's files to N ranks, for the scale benchmark of hang, monitor and doctor --job.

The recorded stuck job (examples/monitoring/stuck-job: 8 ranks of one communicator, rank 3 never
launched AllReduce #40) gives each rank's state file and summary; the odd-rank job's provenance
records give each rank's provenance. Rank r of N is a copy of recorded rank r % 8 (rank 3's files
only for rank 3, so exactly one rank never launched), on node "n<r // 8>" with pid 10000 + r; its
communicator has N ranks. Every file is one JSON document (or JSON lines) rewritten field by field.

Usage: hang_job_clone.py --ranks N --stuck DIR --provenance DIR --out DIR
"""
import argparse
import glob
import json
import os
import sys

RANKS_PER_NODE = 8


def load(paths):
    """rank -> text, keyed by the rank each recorded file holds."""
    out = {}
    for path in paths:
        with open(path) as f:
            text = f.read()
        first = json.loads(text.splitlines()[0])
        rank = first.get("rank")
        if rank is None:
            for line in text.splitlines():
                obj = json.loads(line)
                if "comms" in obj and obj["comms"]:
                    rank = obj["comms"][0]["rank"]
                    break
                if obj.get("kind") == "communicator":
                    rank = obj["rank"]
                    break
        out[int(rank)] = text
    return out


def rewrite(obj, rank, nranks, node, pid):
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "node" and isinstance(value, str):
                obj[key] = node
            elif key == "pid" and isinstance(value, int):
                obj[key] = pid
            elif key == "rank":
                obj[key] = str(rank) if isinstance(value, str) else rank
            elif key == "local_rank" and isinstance(value, str):
                obj[key] = str(rank % RANKS_PER_NODE)
            elif key == "nranks" and isinstance(value, int):
                obj[key] = nranks
            elif key == "n_nodes" and isinstance(value, int):
                obj[key] = (nranks + RANKS_PER_NODE - 1) // RANKS_PER_NODE
            else:
                rewrite(value, rank, nranks, node, pid)
    elif isinstance(obj, list):
        for item in obj:
            rewrite(item, rank, nranks, node, pid)


def clone_lines(text, rank, nranks, node, pid):
    lines = []
    for line in text.splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        rewrite(obj, rank, nranks, node, pid)
        lines.append(json.dumps(obj, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--stuck", required=True)
    p.add_argument("--provenance", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    states = load(sorted(glob.glob(os.path.join(a.stuck, "*.state.json"))))
    summaries = load(sorted(glob.glob(os.path.join(a.stuck, "*.jsonl"))))
    provenance = load(sorted(glob.glob(os.path.join(a.provenance, "*.provenance.json"))))
    if len(states) < RANKS_PER_NODE or len(summaries) < RANKS_PER_NODE or not provenance:
        sys.exit(f"{a.stuck} must hold 8 ranks' state files and summaries, {a.provenance} records")
    os.makedirs(a.out, exist_ok=True)
    healthy = [r for r in sorted(states) if r != 3]
    for rank in range(a.ranks):
        recorded = 3 if rank == 3 else healthy[rank % len(healthy)]
        node, pid = f"n{rank // RANKS_PER_NODE}", 10000 + rank
        base = os.path.join(a.out, f"nccl_pilot_{node}_{pid}")
        for suffix, text in ((".state.json", states[recorded]), (".jsonl", summaries[recorded]),
                             (".provenance.json",
                              provenance[sorted(provenance)[rank % len(provenance)]])):
            with open(base + suffix, "w") as f:
                f.write(clone_lines(text, rank, a.ranks, node, pid))


if __name__ == "__main__":
    main()
