#!/usr/bin/env python3
"""Checks one GPU validation run (tests/gpu/run.sh) from the evidence it left in its folder.

Reads run.json, expect-<coll>.json (what `nccl-pilot explain` says the table makes NCCL do)
and, per phase, NCCL's debug log, result JSON and exit code of every rank. Prints one line per
check, "PASS|FAIL|SKIP <phase> <check> <evidence>" (SKIP: this NCCL release does not log the
evidence), writes summary.json, and exits 0 only if no check failed. docs/validation.md says
what each check proves.

Usage: check.py RUN_DIR
"""
import json
import pathlib
import re
import sys
from xml.etree import ElementTree

import explore_check
import hang_check
import metrics_check
import provenance_check

COLLECTIVES = ("allreduce", "allgather", "reducescatter")
NCCL_FUNC = {"AllReduce": "allreduce", "AllGather": "allgather", "ReduceScatter": "reducescatter"}
PLUGIN_PHASES = ("pilot", "tuned", "topo-only", "metrics")  # phases that load our libraries
TABLE_PHASES = ("tuned", "topo-only", "metrics")  # phases whose tuner has the validation table

# NCCL's lines (2.28 wording; earlier releases print the same facts, see docs/validation.md).
RE_NET_LOADED = re.compile(r"NET/Plugin: Loaded net plugin (\S+) \(v(\d+)\)")
RE_USING_NET = re.compile(r"NCCL INFO Using network (\S+)")
RE_TUNER_LOADED = re.compile(r"TUNER/Plugin: Using (?:tuner plugin )?(\S+?)(?: \(v(\d+)\))?$",
                             re.M)  # 2.27 and older print no version
RE_NODES = re.compile(r"comm \S+ rank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+)")
RE_SHUTDOWN = re.compile(r" - (Destroy|Abort) COMPLETE")
RE_TOPO_ENV = re.compile(r"NCCL_TOPO_FILE set by environment to (\S+)")
RE_DECISION = re.compile(  # 2.24+: names, channels, per-rank bytes for all-gather/reduce-scatter
    r"NCCL INFO (\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")
RE_DECISION_223 = re.compile(  # 2.23: enum numbers, the tuner's bytes, no channels
    r"NCCL INFO (\w+): (\d+) Bytes -> Algo (\d+) proto (\d+) time")
RE_DECISION_221 = re.compile(r"NCCL INFO (\d+) Bytes -> Algo (\d+) proto (\d+) time")  # no function
ALGOS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
PROTOS = ("ll", "ll128", "simple")
RE_VIA_PILOT = re.compile(r"via NET/Pilot/")
RE_WARN = re.compile(r"NCCL WARN (.*)")
# Our own lines (plugin/logger_bridge.cc prefixes, net/src/*_comm.cc, topology/src/topo_file.cc).
RE_OUR_WARN = re.compile(r"NCCL WARN ((?:NET|TUNER|PROFILER)/Pilot: .*)")
RE_OUR_TOPO = re.compile(r"NET/Pilot: NCCL_TOPO_FILE=(\S+) \(")
RE_TABLE_LOADED = re.compile(  # the digest since the tuner logs it (older runs: none)
    r"TUNER/Pilot: loaded (\d+) rules from (\S+) \((?:sha256 ([0-9a-f]+), )?(\d+) lines skipped\)")
# What the tuner matched the table's fabric= and nccl= keys with (tuner/src/tuner_runtime.cc).
RE_FACTS = re.compile(r"TUNER/Pilot: matching fabric (\w+) \((.*?)\), NCCL (.+?) \((.*)\): "
                      r"fabric= on")
RE_CLOSED = re.compile(
    r"NET/Pilot: (send to|receive from) (\S+) closed: (\d+) messages, (\d+) bytes over (\d+)")
RE_TOPO_ONLY = re.compile(r"NET/Pilot: topology-only mode")


class Report:
    def __init__(self):
        self.checks = []

    def add(self, phase, name, ok, evidence):
        """ok: True (PASS), False (FAIL) or None (SKIP: this NCCL does not log the evidence)."""
        status = "SKIP" if ok is None else "PASS" if ok else "FAIL"
        self.checks.append({"phase": phase, "check": name, "status": status,
                            "evidence": evidence})
        print(f"{status} {phase:<9} {name:<15} {evidence}", flush=True)

    def count(self, status):
        return sum(c["status"] == status for c in self.checks)


def read_text(path):
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def read_json(path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def norm(name):
    """NCCL's log says NVLS_TREE and COLLNET_DIRECT where explain says NVLSTree, CollNetDirect."""
    return name.lower().replace("_", "")


def human(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


class Phase:
    """The evidence one phase left: per rank its NCCL log, result JSON and exit code."""

    def __init__(self, root, name, ranks):
        self.name = name
        self.dir = root / name
        self.ranks = ranks
        self.logs = [read_text(self.dir / f"rank{r}.nccl.log") or "" for r in range(ranks)]
        self.results = [read_json(self.dir / f"rank{r}.json") for r in range(ranks)]
        self.stderr = [read_text(self.dir / f"rank{r}.out") or "" for r in range(ranks)]
        self.codes = {}
        for line in (read_text(self.dir / "exit-codes") or "").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "rank":
                self.codes[int(parts[1])] = int(parts[2])

    def all_logs(self, regex):
        """Per rank, the matches of regex in its log."""
        return [regex.findall(log) for log in self.logs]

    def decisions(self):
        """{(coll, tuner bytes): {(algo, proto, channels), ...}} from rank 0's TUNING lines.

        NCCL prints per-rank bytes for all-gather / reduce-scatter; its tuner (and our table)
        sees the total, so those are multiplied by the rank count."""
        seen = {}
        for func, nbytes, algo, proto, lo, hi in RE_DECISION.findall(self.logs[0]):
            coll = NCCL_FUNC.get(func)
            if coll is None:
                continue
            size = int(nbytes) * (self.ranks if coll != "allreduce" else 1)
            seen.setdefault((coll, size), set()).add(
                (norm(algo), norm(proto), int(hi) - int(lo) + 1))
        for func, nbytes, algo, proto in RE_DECISION_223.findall(self.logs[0]):
            coll = NCCL_FUNC.get(func)
            if coll is not None and int(algo) < len(ALGOS) and int(proto) < len(PROTOS):
                seen.setdefault((coll, int(nbytes)), set()).add(
                    (norm(ALGOS[int(algo)]), PROTOS[int(proto)], None))
        return seen

    def unattributed_decisions(self):
        """2.21/2.22 print decisions without the collective: they cannot be matched."""
        return len(RE_DECISION_221.findall(self.logs[0]))


def expected_decision(expect, size):
    """(algo, proto, channels or None) the table selects at `size`, or None if it leaves it."""
    for band in expect.get("ranges", []):
        if band["min"] <= size <= band["max"] and band.get("decision") == "select":
            return (norm(band["algorithm"]), norm(band["protocol"]), band.get("channels"))
    return None


def last_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    return f" ('{lines[-1].strip()}')" if lines else ""


def check_shutdown(report, phase):
    bad = [f"rank {r} exit {phase.codes.get(r, 'missing')}" + last_line(phase.stderr[r])
           for r in range(phase.ranks) if phase.codes.get(r) != 0]
    unfinished = [f"rank {r}" for r, res in enumerate(phase.results)
                  if not res or not res.get("finished")]
    ends = [m[0] if m else None for m in phase.all_logs(RE_SHUTDOWN)]
    errors = [e.strip().splitlines()[-1] for res in phase.results if res
              for e in res.get("errors", [])]
    ok = not bad and not unfinished and all(ends)
    evidence = (f"all {phase.ranks} ranks exited 0 after NCCL's "
                f"{'/'.join(sorted(set(filter(None, ends))))} COMPLETE" if ok else
                "; ".join(bad + [f"{u} did not finish" for u in unfinished] +
                          [f"rank {r}: no Destroy/Abort COMPLETE in its log"
                           for r, e in enumerate(ends) if not e] + errors[:2]))
    report.add(phase.name, "shutdown", ok, evidence)


def check_results(report, phase, sizes, iters):
    wrong, ops, p2p = [], 0, set()
    for res in phase.results:
        if not res:
            continue
        for op in res.get("ops", []):
            ops += 1
            if op.get("wrong"):
                wrong.append(f"rank {res['rank']} {op['coll']} {human(op['bytes'])}: {op['wrong']}")
        for op in res.get("p2p_ops", []):  # the metrics phase's all-to-all and ring exchange
            p2p.add(f"{op['coll']} {human(op['bytes'])}")
            if op.get("wrong"):
                wrong.append(f"rank {res['rank']} {op['coll']} {human(op['bytes'])}: {op['wrong']}")
    want = phase.ranks * len(COLLECTIVES) * len(sizes)
    ok = not wrong and ops == want
    evidence = (f"{ops // phase.ranks} collectives x {iters} iterations exact on every rank "
                f"({', '.join(COLLECTIVES)} at {', '.join(human(s) for s in sizes)}"
                + (f"; and {', '.join(sorted(p2p))}" if p2p else "") + ")" if ok else
                f"{ops} of {want} (rank, collective, size) results recorded; "
                + "; ".join(wrong[:3]))
    report.add(phase.name, "results", ok, evidence)


def check_hosts(report, phase):
    shapes = [m[0] if m else None for m in phase.all_logs(RE_NODES)]
    ok = all(s and int(s[2]) == phase.ranks and int(s[3]) == 1 for s in shapes)
    evidence = (f"NCCL sees nRanks {phase.ranks} nNodes {phase.ranks} localRanks 1 on every rank "
                "(one NCCL_HOSTID per rank)" if ok else
                "; ".join(f"rank {r}: " + (f"nNodes {s[2]} localRanks {s[3]}" if s else "no comm line")
                          for r, s in enumerate(shapes)))
    report.add(phase.name, "separate-hosts", ok, evidence)


def check_network(report, phase):
    using = [m[0] if m else None for m in phase.all_logs(RE_USING_NET)]
    if phase.name in ("pilot", "tuned", "metrics"):
        loaded = [m[0] if m else None for m in phase.all_logs(RE_NET_LOADED)]
        ok = all(u == "Pilot" for u in using) and all(l and l[0] == "Pilot" for l in loaded)
        versions = sorted({f"v{l[1]}" for l in loaded if l})
        evidence = (f"NCCL loaded net plugin Pilot through ncclNetPlugin_{'/'.join(versions)} "
                    "and says 'Using network Pilot' on every rank" if ok else
                    f"'Using network' per rank: {using}; loaded per rank: {loaded}")
    else:
        ok = all(u == "Socket" for u in using)
        evidence = f"'Using network' per rank: {using}"
        if phase.name == "topo-only":
            modes = [bool(m) for m in phase.all_logs(RE_TOPO_ONLY)]
            ok = ok and all(modes)
            evidence = ("our plugin stood aside (topology-only mode, 0 devices) and NCCL says "
                        "'Using network Socket' on every rank" if ok else
                        f"{evidence}; topology-only line per rank: {modes}")
    report.add(phase.name, "network", ok, evidence)


def min_received(ops, ranks):
    """Bytes a rank must receive at least for its collectives, whatever the algorithm: every
    element of its all-reduce / all-gather output depends on (n-1)/n of the data held by other
    ranks; a reduce-scatter output (1/n of the input) needs at least one partial sum."""
    total = 0
    for op in ops:
        size, iters = op["bytes"], op["iters"]
        share = size * (ranks - 1) // ranks if op["coll"] != "reducescatter" else size // ranks
        total += share * iters
    return total


def check_transport(report, phase):
    closed = phase.all_logs(RE_CLOSED)
    via = [len(m) for m in phase.all_logs(RE_VIA_PILOT)]
    if phase.name == "topo-only":
        ok = not any(closed) and not any(via)
        report.add(phase.name, "transport", ok,
                   "no connection through our transport (NCCL's Socket moved the data)" if ok
                   else f"our transport carried connections: {sum(map(len, closed))} closed")
        return
    problems, parts = [], []
    for r in range(phase.ranks):
        recv = sum(int(m[3]) for m in closed[r] if m[0] == "receive from")
        sent = sum(int(m[3]) for m in closed[r] if m[0] == "send to")
        comms = len(closed[r])
        res = phase.results[r] or {}
        need = min_received(res.get("ops", []), phase.ranks)
        parts.append(f"rank {r}: {comms} comms closed, sent {sent} B, received {recv} B "
                     f"(needs >= {need}), {via[r]} channel connections via NET/Pilot")
        if comms == 0 or recv < need or via[r] == 0:
            problems.append(r)
    report.add(phase.name, "transport", not problems, "; ".join(parts))


def check_tuner(report, phase, table_rules, table_sha256):
    """table_sha256: the digest run.sh pinned (NCCL_PILOT_TUNER_TABLE_SHA256), or None."""
    loaded = [m[0] if m else None for m in phase.all_logs(RE_TUNER_LOADED)]
    ok = all(l and l[0] == "Pilot" for l in loaded)
    versions = sorted({f"v{l[1]}" for l in loaded if l and l[1]})
    evidence = ("NCCL uses tuner Pilot " + (f"through ncclTunerPlugin_{'/'.join(versions)}"
                                            if versions else "(this NCCL logs no ABI version)")
                if ok else f"tuner line per rank: {loaded}")
    if phase.name in TABLE_PHASES:
        tables = [m[0] if m else None for m in phase.all_logs(RE_TABLE_LOADED)]
        good = all(t and int(t[0]) == table_rules and t[3] == "0" for t in tables)
        # Every rank must decide alike: the same table (by digest) on every rank, the pinned one.
        digests = {t[2] for t in tables if t}
        logged = all(t and t[2] for t in tables)
        same = len(digests) == 1 and (not table_sha256 or table_sha256 in digests)
        good = good and (same or not logged)
        ok = ok and good
        digest = (f", sha256 {digests.pop()}" if logged and same else
                  " (this build logs no table digest)" if not logged else "")
        evidence += (f"; table loaded with {table_rules} rules, 0 lines skipped{digest}, on every "
                     "rank" if good else
                     f"; table line per rank: {tables} (want {table_rules} rules, 0 skipped, one "
                     f"digest{f' = {table_sha256}' if table_sha256 else ''})")
    report.add(phase.name, "tuner", ok, evidence)


def check_facts(report, phase, nccl_version):
    """The fabric and NCCL version the tuner matched fabric=/nccl= keys with, on every rank: the
    same fabric (NCCL_IB_DISABLE=1 makes it ethernet) and the running NCCL's own version, read
    with ncclGetVersion (not inferred from the tuner ABI)."""
    facts = [m[0] if m else None for m in phase.all_logs(RE_FACTS)]
    if not any(facts):
        report.add(phase.name, "facts", None, "this build's tuner logs no facts (recorded before "
                   "it matched fabric= and nccl= keys)")
        return
    ok = all(f and f[0] == "ethernet" and f[2] == nccl_version and f[3].startswith("ncclGetVersion")
             for f in facts)
    evidence = (f"every rank matched fabric ethernet ({facts[0][1]}) and NCCL {nccl_version} "
                f"({facts[0][3]})" if ok else
                "; ".join(f"rank {r}: " + (f"fabric {f[0]}, NCCL {f[2]} ({f[3]})" if f else
                                           "no facts line") for r, f in enumerate(facts))
                + f" (want ethernet and {nccl_version} from ncclGetVersion)")
    report.add(phase.name, "facts", ok, evidence)


def check_decisions(report, phase, seen, sizes, expects, defaults):
    """seen: phase.decisions(); defaults: the same of the untuned phase."""
    wrong, matched, differ, rows = [], 0, 0, []
    for coll in COLLECTIVES:
        for size in sizes:
            want = expected_decision(expects.get(coll, {}), size)
            got = seen.get((coll, size), set())
            row = {"coll": coll, "bytes": size, "nccl": sorted(got), "table": want,
                   "default": sorted(defaults.get((coll, size), set()))}
            rows.append(row)
            if want is None:
                continue
            ok = bool(got) and all(
                g[0] == want[0] and g[1] == want[1] and (want[2] is None or g[2] in (None, want[2]))
                for g in got)
            if ok:
                matched += 1
            else:
                wrong.append(f"{coll} {human(size)}: NCCL {sorted(got) or 'no TUNING line'}, "
                             f"table {want}")
            if got and defaults.get((coll, size)) and got != defaults[(coll, size)]:
                differ += 1
    total = sum(1 for r in rows if r["table"] is not None)
    if not seen and phase.unattributed_decisions():
        report.add(phase.name, "decisions", None, "this NCCL (2.21/2.22) logs its decisions "
                   "without naming the collective; NCCL 2.23 or newer shows them")
        return rows
    ok = not wrong and total > 0
    no_channels = any(g[2] is None for d in seen.values() for g in d)
    evidence = (f"{matched}/{total} (collective, size) decisions in NCCL's TUNING lines are the "
                f"table's (algorithm, protocol" + ("; this NCCL logs no channel count)"
                                                   if no_channels else ", channels)")
                if ok else "; ".join(wrong[:4]))
    report.add(phase.name, "decisions", ok, evidence)
    if defaults:
        report.add(phase.name, "differs", differ > 0,
                   f"{differ}/{total} of them differ from NCCL's own choice in the "
                   "untuned phase (so the table, not NCCL, made them)")
    return rows


def pci_nodes(path):
    """{busid: class} of every <pci> in a topology XML file; {} if missing or malformed."""
    try:
        tree = ElementTree.parse(path)
    except (OSError, ElementTree.ParseError):
        return {}
    return {p.get("busid", "").lower(): p.get("class", "") for p in tree.iter("pci")}


def check_topology(report, phase):
    ours = [m[0] if m else None for m in phase.all_logs(RE_OUR_TOPO)]
    nccl = [m[0] if m else None for m in phase.all_logs(RE_TOPO_ENV)]
    if phase.name == "baseline":
        ok = not any(nccl)
        report.add(phase.name, "topology", ok, "NCCL detected the machine itself (no NCCL_TOPO_FILE)"
                   if ok else f"NCCL_TOPO_FILE was set: {nccl}")
        return
    same = all(o and o == n for o, n in zip(ours, nccl))
    written = pci_nodes(phase.dir / "rank0.pilot-topo.xml")
    dumped = pci_nodes(phase.dir / "nccl-topo-dump.xml")
    # NCCL keeps a NIC's PCI node only when one of its network devices lives there (with the
    # socket transport on lo, none does), so only GPUs and bridges must survive.
    kept = sorted(b for b, c in written.items() if not c.startswith("0x02"))
    missing = [b for b in kept if b not in dumped]
    dropped = sorted(b for b, c in written.items() if c.startswith("0x02") and b not in dumped)
    ok = same and bool(kept) and bool(dumped) and not missing
    evidence = (f"every rank: we published NCCL_TOPO_FILE={ours[0]} and NCCL read that path; "
                f"NCCL's dump holds our GPU/bridge PCI nodes {', '.join(kept)}" if ok else
                f"ours per rank {ours}, NCCL's per rank {nccl}; GPU/bridge PCI nodes in our "
                f"file {kept}, missing from NCCL's dump {missing or '-'}"
                + ("" if dumped else " (no NCCL dump)"))
    if dropped:
        evidence += f" (NIC nodes NCCL has no network device on, so dropped: {', '.join(dropped)})"
    report.add(phase.name, "topology", ok, evidence)


def check_warnings(report, phase, expected=None):
    """expected: a regex of our WARN lines the phase must cause (hang: the stall WARNs), left to
    its own check."""
    ours = [w for log in phase.logs for w in RE_OUR_WARN.findall(log)
            if not (expected and expected.search("NCCL WARN " + w))]
    others = [w for log in phase.logs for w in RE_WARN.findall(log)
              if not w.startswith(("NET/Pilot", "TUNER/Pilot", "PROFILER/Pilot"))]
    evidence = ("no WARN from NET/Pilot, TUNER/Pilot or PROFILER/Pilot" if not ours else
                f"{len(ours)} WARN from us, first: {ours[0]}")
    if others:
        evidence += f"; {len(others)} WARN from NCCL itself, first: {others[0]}"
    report.add(phase.name, "warnings", not ours, evidence)


def compare_times(phases, gpus):
    """Time per operation of our transport (pilot) over NCCL's Socket (baseline), geometric mean
    over the sizes from 512K: information, not a check (the ranks may share one GPU)."""
    ours, theirs = phases.get("pilot", {}), phases.get("baseline", {})
    ratios = []
    for key, ms in ours.get("ms_per_iter", {}).items():
        base = theirs.get("ms_per_iter", {}).get(key)
        if ms and base and int(key.split()[1]) >= 512 << 10:
            ratios.append(ms / base)
    if not ratios:
        return None
    geomean = 1.0
    for r in ratios:
        geomean *= r ** (1 / len(ratios))
    caveat = ("ranks time-share one GPU, so this is not a performance figure" if gpus == 1
              else f"{gpus} GPUs")
    return {"pilot_over_baseline": round(geomean, 3), "operations": len(ratios),
            "note": f"time per operation, our transport / NCCL's Socket, geomean of {len(ratios)} "
                    f"(collective, size >= 512K): {geomean:.2f} ({caveat})"}


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    run = read_json(root / "run.json")
    if not run:
        print(f"check.py: {root}/run.json missing or unreadable", file=sys.stderr)
        return 2
    ranks, sizes, iters = run["ranks"], run["sizes"], run["iters"]
    expects = {c: read_json(root / f"expect-{c}.json") or {} for c in COLLECTIVES}
    table = read_text(root / "validation.table") or ""
    table_rules = sum(1 for line in table.splitlines()
                      if line.split("#", 1)[0].strip())
    report = Report()
    summary = {"run": run, "phases": {}}
    defaults = {}
    print(f"NCCL {run['nccl']}, {ranks} ranks, sizes {', '.join(human(s) for s in sizes)}")
    for name in run["phases"].split(","):
        phase = Phase(root, name, ranks)
        if name == "hang":  # not the sweep: its own all-reduces, pauses and probes
            check_shutdown(report, phase)
            check_hosts(report, phase)
            check_network(report, phase)
            metrics_check.check_profiler(report, phase)
            hang_check.check_hang(report, phase)
            check_warnings(report, phase, expected=hang_check.RE_STALL_WARN)
            summary["phases"][name] = {}
            continue
        if name == "provenance":  # one size: what each process recorded, not the sweep
            check_shutdown(report, phase)
            check_hosts(report, phase)
            provenance_check.check_provenance(report, phase)
            summary["phases"][name] = {}
            continue
        check_shutdown(report, phase)
        check_results(report, phase, sizes, iters)
        check_hosts(report, phase)
        check_network(report, phase)
        if name in PLUGIN_PHASES:
            check_transport(report, phase)
            check_tuner(report, phase, table_rules, run.get("table_sha256"))
            if name in TABLE_PHASES:
                check_facts(report, phase, run["nccl"])
        check_topology(report, phase)
        decisions = phase.decisions()
        entry = {"decisions": sorted(([c, s, sorted(d)] for (c, s), d in decisions.items()),
                                     key=str)}
        if name in TABLE_PHASES:
            entry["decisions"] = check_decisions(report, phase, decisions, sizes, expects,
                                                 defaults)
        elif name in ("pilot", "baseline") and (not defaults or name == "pilot"):
            defaults = decisions
        if name == "explore":
            explore_check.check_exploration(report, phase, RE_DECISION)
        if name == "metrics":
            metrics_check.check_profiler(report, phase)
            metrics_check.check_metrics(report, phase, sizes, iters, expects)
            metrics_check.check_p2p(report, phase)
            metrics_check.check_churn(report, phase)
        if name in PLUGIN_PHASES:
            check_warnings(report, phase)
        entry["ms_per_iter"] = {f"{op['coll']} {op['bytes']}": op.get("ms_per_iter")
                                for op in ((phase.results[0] or {}).get("ops", []))}
        summary["phases"][name] = entry
    timing = compare_times(summary["phases"], run.get("gpus", 1))
    if timing:
        summary["timing"] = timing
        print(f"INFO {timing['note']}")
    profiler_cost = metrics_check.profiler_cost(summary["phases"], run.get("gpus", 1))
    if profiler_cost:
        summary["profiler_cost"] = profiler_cost
        print(f"INFO {profiler_cost['note']}")
    summary["checks"] = report.checks
    for status in ("PASS", "FAIL", "SKIP"):
        summary[{"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}[status]] = \
            report.count(status)
    (root / "summary.json").write_text(json.dumps(summary, indent=1, default=list) + "\n",
                                       encoding="utf-8")
    print(f"{summary['passed']} passed, {summary['failed']} failed"
          + (f", {summary['skipped']} skipped" if summary["skipped"] else ""))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
