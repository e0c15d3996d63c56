"""The checks of the GPU run's "metrics" phase (tests/gpu/run.sh): the tuned phase again with our
profiler plugin (NCCL_PROFILER_PLUGIN) writing into <phase>/metrics (NCCL_PILOT_METRICS_DIR).

  profiler      NCCL loaded our profiler on every rank and we said we measure
  metrics-files one textfile and one JSON-lines summary per rank, every communicator finalized
  metrics-count every (collective, size) of the run appears on every rank with exactly the
                iterations rank.py ran
  metrics-time  every such kernel time is positive and within the host's wall time per
                iteration (a kernel runs inside the iteration that waits for it)
  metrics-rule  where the table selects, the summary credits the decision to that table line
  metrics-p2p   rank.py's all-to-all is measured as one AlltoAll per iteration (a group of
                Send/Recv with every peer, or NCCL's own ncclAlltoAll), and its ring exchange
                as one Send and one Recv per iteration, on every rank, each within the wall
                time per iteration (only when the run had point-to-point traffic)
Used by check.py; docs/validation.md explains them.
"""
import json
import re

RE_PROFILER_LOADED = re.compile(  # 2.28+: "Loaded Pilot (v5)"; 2.27: "loaded Pilot"
    r"PROFILER/Plugin: [Ll]oaded (\S+?)(?: \(v(\d+)\))?$", re.M)
RE_MEASURING = re.compile(r"PROFILER/Pilot: measuring collectives")
NCCL_NAMES = {"allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter"}
ELEMENT = 4  # float32, as rank.py runs them


def message_bytes(coll, size, ranks):
    """The profiler's message size: count x element, per rank for all-gather/reduce-scatter."""
    return size if coll == "allreduce" else size // ranks


def bucket(nbytes):
    return 1 << (nbytes.bit_length() - 1) if nbytes > 0 else 1


def read_summaries(directory):
    """{rank: {"comms": [...], "colls": [...]}} from every nccl_pilot_*.jsonl, and notes."""
    out, notes = {}, []
    for path in sorted(directory.glob("nccl_pilot_*.jsonl")):
        comms, colls, p2p = [], [], []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                obj = json.loads(line)
            except ValueError:
                notes.append(f"{path.name}:{number}: not JSON")
                continue
            if obj.get("kind") == "communicator":
                comms.append(obj)
            elif obj.get("kind") == "collective":
                colls.append(obj)
            elif obj.get("kind") == "p2p":
                p2p.append(obj)
        ranks = {c["rank"] for c in comms}
        if len(ranks) != 1:
            notes.append(f"{path.name}: {len(ranks)} ranks in one process's summary")
            continue
        out[ranks.pop()] = {"comms": comms, "colls": colls, "p2p": p2p, "file": path.name}
    return out, notes


def check_profiler(report, phase):
    loaded = [m[0] if m else None for m in phase.all_logs(RE_PROFILER_LOADED)]
    measuring = [bool(m) for m in phase.all_logs(RE_MEASURING)]
    ok = all(l and l[0] == "Pilot" for l in loaded) and all(measuring)
    versions = sorted({f"v{l[1]}" for l in loaded if l and l[1]})
    report.add(phase.name, "profiler", ok,
               f"NCCL loaded profiler Pilot through ncclProfiler_{'/'.join(versions) or '?'} and "
               "we measure on every rank" if ok else
               f"profiler line per rank: {loaded}; 'measuring collectives' per rank: {measuring}")


def measured_problem(label, rows, op):
    """("count", why) unless the summary rows hold one call per iteration of rank.py's `op`,
    ("time", why) unless their mean kernel time is positive and within its wall time per
    iteration; None when both hold."""
    calls = sum(c["calls"] for c in rows)
    if calls != op["iters"]:
        return "count", f"{label}: {calls} measured, {op['iters']} run"
    mean_us = sum(c["time_us"]["sum"] for c in rows) / calls
    wall_us = (op.get("ms_per_iter") or 0) * 1000
    if not 0 < mean_us <= wall_us:
        return "time", f"{label}: kernel {mean_us:.1f} us, wall {wall_us:.1f} us per iteration"
    return None


def check_metrics(report, phase, sizes, iters, expects):
    summaries, notes = read_summaries(phase.dir / "metrics")
    proms = sorted(p.name for p in (phase.dir / "metrics").glob("nccl_pilot_*.prom"))
    unfinished = [f"rank {r}" for r, s in summaries.items()
                  if not s["comms"] or not all(c.get("finalized") for c in s["comms"])]
    ok = (len(summaries) == phase.ranks and len(proms) == phase.ranks and not unfinished
          and not notes)
    report.add(phase.name, "metrics-files", ok,
               f"{len(proms)} textfiles and {len(summaries)} summaries, one per rank, every "
               "communicator finalized" if ok else
               f"{len(proms)} textfiles, summaries of ranks {sorted(summaries)} (want "
               f"{phase.ranks}); not finalized: {unfinished or '-'}; {'; '.join(notes) or ''}")

    wrong_count, wrong_time, wrong_rule, checked, credited = [], [], [], 0, 0
    for rank in range(phase.ranks):
        result = phase.results[rank] or {}
        colls = summaries.get(rank, {}).get("colls", [])
        for op in result.get("ops", []):
            coll, size = op["coll"], op["bytes"]
            want = bucket(message_bytes(coll, size, phase.ranks))
            rows = [c for c in colls if c.get("collective") == NCCL_NAMES[coll]
                    and c.get("size_bucket_bytes") == want]
            checked += 1
            problem = measured_problem(f"rank {rank} {coll} {size}", rows, op)
            if problem and problem[0] == "count":
                wrong_count.append(problem[1])
                continue
            if problem:
                wrong_time.append(problem[1])
            # rank.py's sizes are what NCCL hands the tuner, as explain's bands are.
            band = next((b for b in expects.get(coll, {}).get("ranges", [])
                         if b["min"] <= size <= b["max"] and b.get("decision") == "select"),
                        None)
            if band:
                lines = {f"(line {line})" for line in band.get("lines", [])}
                if all(any(c.get("decision", "").endswith(l) for l in lines) for c in rows):
                    credited += 1
                else:
                    wrong_rule.append(f"rank {rank} {coll} {size}: "
                                      f"{sorted({c.get('decision') for c in rows})}, table "
                                      f"line {sorted(lines)}")
    want_ops = phase.ranks * 3 * len(sizes)
    ok = not wrong_count and checked == want_ops
    report.add(phase.name, "metrics-count", ok,
               f"all {checked} (rank, collective, size) measured exactly {iters} times" if ok else
               f"{checked} of {want_ops} checked; " + "; ".join(wrong_count[:3]))
    report.add(phase.name, "metrics-time", not wrong_time and checked > 0,
               "every kernel time is positive and within the wall time per iteration"
               if not wrong_time else "; ".join(wrong_time[:3]))
    report.add(phase.name, "metrics-rule", not wrong_rule and credited > 0,
               f"{credited} (rank, collective, size) decisions credited to the table line that "
               "selects them" if not wrong_rule and credited else
               ("; ".join(wrong_rule[:3]) or "no decision of the table to credit"))


def check_p2p(report, phase):
    """metrics-p2p; nothing when no rank ran point-to-point traffic (older recorded runs)."""
    summaries, _ = read_summaries(phase.dir / "metrics")
    wrong, checked, alltoall_kinds = [], 0, set()
    for rank in range(phase.ranks):
        result = phase.results[rank] or {}
        summary = summaries.get(rank, {})
        for op in result.get("p2p_ops", []):
            want = bucket(op["bytes"])
            if op["coll"] == "alltoall":
                groups = {"AlltoAll": [c for c in summary.get("colls", [])
                                       if c.get("collective") == "AlltoAll"
                                       and c.get("size_bucket_bytes") == want]}
                alltoall_kinds.update(c.get("algo") for c in groups["AlltoAll"])
            else:
                groups = {name: [c for c in summary.get("p2p", [])
                                 if c.get("p2p_operation") == name
                                 and c.get("size_bucket_bytes") == want]
                          for name in ("Send", "Recv")}
            for name, rows in groups.items():
                checked += 1
                problem = measured_problem(f"rank {rank} {op['coll']} {name} {op['bytes']}",
                                           rows, op)
                if problem:
                    wrong.append(problem[1])
    if checked == 0:
        return
    how = ", ".join(sorted("a group of Send/Recv" if a == "P2P" else f"NCCL's ncclAlltoAll ({a})"
                           for a in alltoall_kinds if a)) or "?"
    report.add(phase.name, "metrics-p2p", not wrong,
               f"all {checked} (rank, operation) measured once per iteration within its wall "
               f"time; the all-to-all as {how}" if not wrong else "; ".join(wrong[:3]))


def check_churn(report, phase):
    """metrics-churn; nothing when no rank rebuilt a group (older recorded runs). Per rank: the
    communicators rank.py created and destroyed, beyond the world's, are folded into records
    (`folded`) holding every Broadcast it ran, and the last textfile has no slot in use."""
    summaries, _ = read_summaries(phase.dir / "metrics")
    wrong, ranks = [], 0
    for rank in range(phase.ranks):
        churn = (phase.results[rank] or {}).get("churn")
        if not churn:
            continue
        ranks += 1
        summary = summaries.get(rank, {})
        rows = [c for c in summary.get("colls", []) if c.get("collective") == "Broadcast"
                and c.get("size_bucket_bytes") == bucket(churn["bytes"])]
        ids = {c["comm"] for c in rows}
        records = [c for c in summary.get("comms", [])
                   if c.get("folded", 0) > 0 and c["comm"] in ids]
        broadcasts = sum(c["calls"] for c in rows if c["comm"] in {r["comm"] for r in records})
        folded = sum(c["folded"] for c in records)
        if folded < churn["groups"] or broadcasts != churn["broadcasts"]:
            wrong.append(f"rank {rank}: {folded} finished communicators in {len(records)} "
                         f"record(s) with {broadcasts} Broadcasts; rank.py made "
                         f"{churn['groups']} with {churn['broadcasts']}")
        prom = phase.dir / "metrics" / summary.get("file", "-").replace(".jsonl", ".prom")
        in_use = re.search(r"^nccl_pilot_profiler_slots_in_use\{[^}]*\} (\S+)$",
                           prom.read_text(encoding="utf-8") if prom.exists() else "", re.M)
        if not in_use or float(in_use.group(1)) != 0:
            wrong.append(f"rank {rank}: slots in use after the last finalize: "
                         f"{in_use.group(1) if in_use else 'no textfile'}")
    if ranks == 0:
        return
    report.add(phase.name, "metrics-churn", not wrong,
               f"on {ranks} ranks every rebuilt group is in its rank's folded record with every "
               "Broadcast, and no slot is left in use" if not wrong else "; ".join(wrong[:3]))


def profiler_cost(phases, gpus):
    """Time per operation with our profiler (metrics) over without it (tuned): NCCL's kernel
    instrumentation for KernelCh events and our callbacks together. Information, not a check."""
    ours, theirs = phases.get("metrics", {}), phases.get("tuned", {})
    ratios = []
    for key, ms in ours.get("ms_per_iter", {}).items():
        base = theirs.get("ms_per_iter", {}).get(key)
        if ms and base:
            ratios.append(ms / base)
    if not ratios:
        return None
    geomean = 1.0
    for r in ratios:
        geomean *= r ** (1 / len(ratios))
    caveat = ("ranks time-share one GPU, so this is not a performance figure" if gpus == 1
              else f"{gpus} GPUs")
    return {"metrics_over_tuned": round(geomean, 3), "operations": len(ratios),
            "note": f"time per operation with the profiler / without, geomean of {len(ratios)} "
                    f"(collective, size): {geomean:.2f} ({caveat})"}

