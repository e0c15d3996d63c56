"""The explore phase of tests/gpu/run.sh (NCCL_PILOT_TUNER_EXPLORE on real NCCL): every rank ran
the same algorithm and protocol on every call, NCCL ran the cells exploration selected, and the
profiler recorded them alike on every rank. docs/validation.md explains the check."""
import json
import re

# "exploring within 25% of NCCL's predicted time, ..." (issue 29: a budget of the job's time);
# before it "exploring 0.25 of the calls of each (collective, size), ...".
RE_EXPLORING = re.compile(
    r"TUNER/Pilot: communicator \d+ ranks on \d+ nodes: exploring (?:within )?(\S+?)(?:% of)? .*?"
    r"schedule digest (\w+)")


def calibration_counts(path):
    """{(collective, bytes, algo, proto): calls} of one rank's summary (its calibration lines)."""
    counts = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("kind") == "calibration":
            key = (j.get("collective"), j.get("bytes"), j.get("algo"), j.get("proto"))
            counts[key] = counts.get(key, 0) + int(j.get("calls", 0))
    return counts


def check_exploration(report, phase, decision_regex):
    """decision_regex: NCCL's TUNING line (check.RE_DECISION: func, bytes, algo, proto, lo, hi)."""
    problems, parts = [], []
    lines = phase.all_logs(RE_EXPLORING)
    digests = {m[0] for m in lines if m}
    if not all(lines) or len(digests) != 1:
        problems.append(f"exploration line per rank: {lines}")
    else:
        fraction, digest = next(iter(digests))
        parts.append(f"every rank explores within {fraction} (schedule digest {digest})")
    # NCCL's own account of each call: the same sequence on every rank, more than one cell at
    # some sizes.
    sequences = [[(f, b, a, p) for f, b, a, p, _lo, _hi in decision_regex.findall(log)]
                 for log in phase.logs]
    apart = [r for r, s in enumerate(sequences) if s != sequences[0]]
    if not sequences[0] or apart:
        problems.append(f"NCCL's decisions differ from rank 0's on ranks {apart} "
                        f"({len(sequences[0])} on rank 0)")
    cells = {}
    for func, nbytes, algo, proto in sequences[0]:
        cells.setdefault((func, nbytes), set()).add((algo, proto))
    explored = sum(1 for c in cells.values() if len(c) > 1)
    if explored == 0:
        problems.append("no (collective, size) ran more than one algorithm x protocol")
    parts.append(f"NCCL logged {len(sequences[0])} decisions, the same on all {phase.ranks} "
                 f"ranks; {explored} of {len(cells)} (collective, size) ran 2 or more cells")
    # The profiler's record of the same calls.
    files = sorted((phase.dir / "metrics").glob("*.jsonl"))
    counts = [calibration_counts(f) for f in files]
    if len(files) != phase.ranks or not counts[0] or any(c != counts[0] for c in counts):
        problems.append(f"{len(files)} summaries; their calibration lines differ between ranks or "
                        "are missing")
    else:
        parts.append(f"every rank's summary holds the same {len(counts[0])} (collective, size, "
                     "algo, proto) keys with the same calls")
    report.add(phase.name, "exploration", not problems, "; ".join(problems or parts))
