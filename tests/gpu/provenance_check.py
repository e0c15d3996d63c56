"""The checks of the GPU run's "provenance" phase (tests/gpu/run.sh; issue 31): PyTorch's NCCL
loads our net (topology only), tuner and profiler, each from its own library, with metrics on;
our library writes one provenance record per process into <phase>/metrics.

  provenance  every rank's record (matched by the pid rank.py reports) names as the NCCL that
              called us the libnccl that rank's process maps (rank.py reads /proc/self/maps:
              PyTorch's wheel, under site-packages/nvidia/nccl/lib or torch/lib) at the version
              torch.cuda.nccl.version() gives, lists that library among those mapped, and names
              our three plugins at the paths NCCL_*_PLUGIN give. SKIP where PyTorch maps no
              libnccl.so (NCCL linked into libtorch: nothing to compare the path with)
  own-warn    at most one WARN from our library per rank (the record's one line about its own
              setup; the three copies of the library share it)
Used by check.py; docs/validation.md explains them.
"""
import json
import os
import re

RE_OUR_WARN = re.compile(r"NCCL WARN ((?:NET|TUNER|PROFILER)/Pilot: .*)")
RE_WHEEL = re.compile(r"/(?:site|dist)-packages/(?:nvidia/nccl/lib|torch/lib)/libnccl\.so[.\d]*$")
KINDS = {"net": "NCCL_NET_PLUGIN", "tuner": "NCCL_TUNER_PLUGIN",
         "profiler": "NCCL_PROFILER_PLUGIN"}


def read_records(directory):
    """{pid: record} from every nccl_pilot_*.provenance.json, and notes. Each copy of our library
    appends a whole line at its first init of each plugin kind, naming the plugins it serves:
    the record is the last line with every line's plugins."""
    records, notes = {}, []
    for path in sorted(directory.glob("nccl_pilot_*.provenance.json")):
        try:
            lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                     if line.strip()]
            record = dict(lines[-1], plugins=[])
            for line in lines:
                record["plugins"] += [p for p in line.get("plugins", [])
                                      if p not in record["plugins"]]
            records[int(record["pid"])] = record
        except (IndexError, ValueError, KeyError, TypeError, AttributeError) as e:
            notes.append(f"{path.name}: {e!r}")
    return records, notes


def real(path):
    return os.path.realpath(path) if path else ""


def rank_problems(rank, result, record):
    """What is wrong with one rank's record (a list), and whether it could be checked."""
    if record is None:
        return [f"rank {rank}: no record of pid {result.get('pid')}"], True
    problems = []
    nccl = record.get("nccl") or {}
    if nccl.get("version") != result.get("nccl"):
        problems.append(f"rank {rank}: record says NCCL {nccl.get('version')!r}, "
                        f"torch.cuda.nccl.version() {result.get('nccl')!r}")
    settings = record.get("plugin_settings") or {}
    loaded = {p.get("kind"): p for p in record.get("plugins") or []}
    for kind, setting in KINDS.items():
        plugin = loaded.get(kind)
        if not plugin or real(plugin.get("path")) != real(settings.get(setting)):
            problems.append(f"rank {rank}: {kind} plugin {plugin} is not {setting}'s "
                            f"{settings.get(setting)!r}")
    mapped = result.get("libnccl") or []
    if not mapped:
        return problems, False
    path = real(nccl.get("path"))
    if path not in {real(m) for m in mapped}:
        problems.append(f"rank {rank}: record's NCCL {nccl.get('path')!r} is not the libnccl "
                        f"the process maps ({', '.join(mapped)})")
    elif not any(RE_WHEEL.search(p) for p in (nccl.get("path"), path)):
        problems.append(f"rank {rank}: {nccl.get('path')} is not PyTorch's bundled libnccl")
    listed = {real(lib.get("path")) for lib in record.get("libraries") or []}
    if listed != {real(m) for m in mapped}:
        problems.append(f"rank {rank}: libraries {sorted(listed)} are not those mapped "
                        f"{sorted(mapped)}")
    return problems, True


def check_provenance(report, phase):
    records, notes = read_records(phase.dir / "metrics")
    problems, unchecked, seen = [], [], []
    for rank, result in enumerate(phase.results):
        if not result or "pid" not in result:
            problems.append(f"rank {rank}: no pid in rank{rank}.json")
            continue
        record = records.get(int(result["pid"]))
        found, checked = rank_problems(rank, result, record)
        problems += found
        if not checked:
            unchecked.append(rank)
        elif record:
            nccl = record["nccl"]
            abis = ", ".join(f"{p['kind']} v{p['abi']}" for p in record.get("plugins") or [])
            seen.append(f"NCCL {nccl.get('version')} at {nccl.get('path')}; {abis}")
    if problems or notes:
        report.add(phase.name, "provenance", False, "; ".join((problems + notes)[:4]))
    elif unchecked:
        report.add(phase.name, "provenance", None,
                   f"ranks {unchecked} map no libnccl.so (this PyTorch links NCCL into libtorch): "
                   "the record's path has nothing to be compared with")
    else:
        report.add(phase.name, "provenance", True,
                   f"all {phase.ranks} records name the libnccl each process maps, at "
                   f"torch.cuda.nccl.version(), and our plugins: {sorted(set(seen))}")
    warns = [RE_OUR_WARN.findall(log) for log in phase.logs]
    over = [f"rank {r}: {len(w)}" for r, w in enumerate(warns) if len(w) > 1]
    first = next((w[0] for w in warns if w), None)
    report.add(phase.name, "own-warn", not over,
               (f"more than one WARN from us: {', '.join(over)}; first: {first}" if over else
                f"{sum(1 for w in warns if w)} of {phase.ranks} ranks logged one WARN from us"
                + (f": {first}" if first else "")))
