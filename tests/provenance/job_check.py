#!/usr/bin/env python3
"""Checks what job_test.sh's four rank processes left (its header says who does what).

Four parts, each line "ok   ..." or "FAIL ...", every check run even after a failure:
  fake NCCL   what the fake libnccl did: its copies' versions through dladdr, the conf file
              merged (the environment winning), the plugin symbols and ABIs NCCL 2.28 takes, the
              libraries they came from, the caller our tuner found (plugin/tuner/process_facts);
              and a process of NCCL 2.27.5 apart: net v10, tuner v4, profiler v4 in its record
  records     each rank's nccl_pilot_<node>_<pid>.provenance.json as provenance/record.h says,
              the same line in its summary, its textfile series
  warnings    each process's WARN lines from our library: none on ranks 0 and 3, one on 1 and 2
  doctor      `nccl-pilot doctor --job` exits 1 and names ranks 1, 2, 3, never rank 0, as odd
Exits 1 if any check failed.
"""
import argparse
import hashlib
import json
import os
import pathlib
import re
import sys

RANKS = range(4)
NCCL = {0: "2.28.9", 1: "2.28.9", 2: "2.28.9", 3: "2.28.3"}
MAPPED = {0: ["2.28.9"], 1: ["2.27.5", "2.28.9"], 2: ["2.28.9"], 3: ["2.28.3"]}
IFNAME = {0: "eth0", 1: "eth0", 2: "eth0", 3: "eth1"}
WARNS = {0: 0, 1: 1, 2: 1, 3: 0}  # lines about the process's own setup
SECRET = "hunter2-not-for-records"  # PILOT_TEST_SECRET's value: not NCCL_*, never recorded

failures = []


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok or not detail else f": {detail}"))
    if not ok:
        failures.append(what)
    return ok


def real(path):
    return os.path.realpath(path) if path else path


def ranks_named(text):
    """The rank numbers a text names, singly ("rank 3") or in lists ("ranks 0, 1 and 2",
    "ranks 0-2"); and those named singly."""
    single = {int(n) for n in re.findall(r"\brank (\d+)\b", text)}
    listed = set(single)
    for group in re.findall(r"\branks ((?:\d+(?:-\d+)?)(?:(?:,\s*|\s+and\s+)\d+(?:-\d+)?)*)", text):
        for part in re.split(r",\s*|\s+and\s+", group):
            low, _, high = part.partition("-")
            listed.update(range(int(low), int(high or low) + 1))
    return listed, single


def check_fake_nccl(a, work, lib):
    out = (work / "check.out").read_text()
    check(f"mapped {lib('2.27.5')} version 22705" in out and
          f"mapped {lib('2.28.9')} version 22809" in out and "global ncclGetVersion none" in out,
          "fake NCCL: each copy answers its own version through dladdr; none is global", out)
    for r in RANKS:
        err = (work / f"rank{r}.err").read_text()
        v = NCCL[r]
        tuner = a.tuner if r == 2 else a.net
        profiler = a.profiler if r == 2 else a.net
        want = [f"fake-nccl {v}: {a.conf}: NCCL_IB_TIMEOUT=22",
                f"fake-nccl {v}: {a.conf}: NCCL_SOCKET_IFNAME=eth9 (the environment's value holds)",
                f"fake-nccl {v}: net plugin {a.net}: ncclNetPlugin_v11 init 0, 0 devices",
                f"fake-nccl {v}: tuner {tuner}: ncclTunerPlugin_v5 init 0",
                f"fake-nccl {v}: profiler {profiler}: ncclProfiler_v5 init 0, mask 0x"]
        missing = [w for w in want if w not in err]
        check(not missing, f"fake NCCL rank {r}: conf merged, net v11 / tuner v5 / profiler v5 "
              f"from {'three libraries' if r == 2 else 'the net plugin'}",
              f"missing {missing}")
        caller = f"NCCL {v} (ncclGetVersion in {lib(v)} (the caller of init))"
        check(caller in err, f"fake NCCL rank {r}: the tuner found its caller, {lib(v)}",
              "no INFO line with " + caller)


def check_older_nccl(a, work, lib):
    """The process of NCCL 2.27.5: the older ABIs, in the fake and in the record."""
    err = (work / "nccl-2.27.err").read_text()
    want = [f"net plugin {a.net}: ncclNetPlugin_v10 init 0, 0 devices",
            f"tuner {a.net}: ncclTunerPlugin_v4 init 0",
            f"profiler {a.net}: ncclProfiler_v4 init 0"]
    check(all(f"fake-nccl 2.27.5: {w}" in err for w in want),
          "fake NCCL 2.27.5: net v10 / tuner v4 / profiler v4 from the net plugin", err)
    records, problems = load_records(work / "nccl-2.27")
    record = records.get(0, ({},))[0]
    plugins = sorted((p.get("kind"), p.get("abi")) for p in record.get("plugins", []))
    check(not problems and (record.get("nccl") or {}).get("version") == "2.27.5" and
          real(record["nccl"].get("path")) == real(lib("2.27.5")) and
          plugins == [("net", 10), ("profiler", 4), ("tuner", 4)],
          "record of NCCL 2.27.5: its library, net v10, tuner v4, profiler v4",
          f"{problems} {record.get('nccl')} {plugins}")


def load_records(job):
    """{rank: (record, file)} and the problems met. Each copy of our library appends a whole
    line at its first init of each plugin kind (metrics/src/runtime.cc publishRecord), with the
    plugins that copy serves: the process's record is its last line with every line's plugins."""
    records, problems = {}, []
    for path in sorted(job.glob("nccl_pilot_*.provenance.json")):
        lines = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            try:
                lines.append(json.loads(line))
            except ValueError as e:
                problems.append(f"{path.name}:{number}: {e}")
        if not lines:
            problems.append(f"{path.name}: no record")
            continue
        if not 1 <= len(lines) <= 3 or len({(d.get("node"), d.get("pid")) for d in lines}) != 1:
            problems.append(f"{path.name}: {len(lines)} lines, not 1 to 3 of one process")
        record = dict(lines[-1])
        record["plugins"] = []
        for d in lines:
            record["plugins"] += [p for p in d.get("plugins", []) if p not in record["plugins"]]
        rank = int(record.get("rank") or -1)
        if rank in records:
            problems.append(f"rank {rank} has two records: {records[rank][1].name}, {path.name}")
        records[rank] = (record, path, lines)
    return records, problems


def check_record(a, r, record, path, lines, lib):
    what = f"record rank {r}"
    v = NCCL[r]
    check(record.get("kind") == "provenance" and record.get("format") == 1 and
          record.get("pid") and record.get("node") and record.get("pilot_version") and
          path.name == f"nccl_pilot_{record['node']}_{record['pid']}.provenance.json",
          f"{what}: kind, format, node, pid (in its name), our version", path.name)
    check(record.get("rank_from") == "RANK" and record.get("local_rank") == str(r),
          f"{what}: rank from RANK, local rank {r}",
          f"{record.get('rank_from')!r}, {record.get('local_rank')!r}")
    nccl = record.get("nccl", {})
    check(nccl.get("version") == v and real(nccl.get("path")) == real(lib(v)),
          f"{what}: the calling NCCL is {v}, {lib(v)}", json.dumps(nccl))
    check(all(d.get("nccl") == nccl and d.get("libraries") == record.get("libraries")
              for d in lines), f"{what}: each of its {len(lines)} line(s) says the same of NCCL",
          str([d.get("nccl") for d in lines]))
    libs = sorted((lib_["version"], real(lib_["path"])) for lib_ in record.get("libraries", []))
    check(libs == [(m, real(lib(m))) for m in MAPPED[r]],
          f"{what}: libnccl mapped {', '.join(MAPPED[r])}", str(libs))
    names = {"net": a.net, "tuner": a.tuner if r == 2 else a.net,
             "profiler": a.profiler if r == 2 else a.net}
    plugins = sorted((p.get("kind"), p.get("abi"), real(p.get("path")))
                     for p in record.get("plugins", []))
    want = sorted((kind, {"net": 11}.get(kind, 5), real(p)) for kind, p in names.items())
    check(plugins == want, f"{what}: plugins NCCL loaded (net v11, tuner v5, profiler v5)",
          f"{plugins}, expected {want}")
    settings = {"NCCL_NET_PLUGIN": a.net}
    if r == 2:
        settings.update(NCCL_TUNER_PLUGIN=a.tuner, NCCL_PROFILER_PLUGIN=a.profiler)
    check(record.get("plugin_settings") == settings and record.get("env_plugin") == "",
          f"{what}: plugin settings, no env plugin",
          f"{record.get('plugin_settings')}, env_plugin {record.get('env_plugin')!r}")
    digest = hashlib.sha256(pathlib.Path(a.table).read_bytes()).hexdigest()
    check(record.get("table") == a.table and record.get("table_sha256") == digest,
          f"{what}: the table and its digest",
          f"{record.get('table')} {record.get('table_sha256')}")
    check(record.get("conf_files") == [a.conf], f"{what}: conf files [{a.conf}]",
          str(record.get("conf_files")))
    by_name = {}
    for s in record.get("settings", []):
        by_name.setdefault(s.get("name"), []).append(s)
    check(all(len(v) == 1 for v in by_name.values()) and
          all(str(n).startswith("NCCL_") for n in by_name),
          f"{what}: NCCL_* names only, each once", str(sorted(by_name)))
    one = {n: v[0] for n, v in by_name.items()}
    ib = one.get("NCCL_IB_TIMEOUT", {})
    check(ib.get("value") == "22" and ib.get("source") == a.conf and ib.get("class") == "nccl",
          f"{what}: NCCL_IB_TIMEOUT=22 from {a.conf}", json.dumps(ib))
    ifname = one.get("NCCL_SOCKET_IFNAME", {})
    check(ifname.get("value") == IFNAME[r] and ifname.get("source") == "env",
          f"{what}: NCCL_SOCKET_IFNAME={IFNAME[r]} from the environment (over the file's eth9)",
          json.dumps(ifname))
    proto = one.get("NCCL_PROTO")
    if r == 2:
        check(proto and proto.get("value") == "LL128" and proto.get("class") == "dangerous" and
              proto.get("why"), f"{what}: NCCL_PROTO=LL128 dangerous, with why", json.dumps(proto))
    else:
        check(proto is None, f"{what}: no NCCL_PROTO", json.dumps(proto))


def check_exports(job, r, record, written):
    """The summary holds the record's lines; the textfile the process series with the versions."""
    stem = f"nccl_pilot_{record['node']}_{record['pid']}"
    summary = job / f"{stem}.jsonl"
    lines = []
    if summary.exists():
        for line in summary.read_text().splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                pass
    same = [d for d in lines if d.get("kind") == "provenance" and d in written]
    check(same, f"summary rank {r}: a line of the record in {summary.name}",
          f"{sum(d.get('kind') == 'provenance' for d in lines)} provenance line(s), none equal")
    prom = job / f"{stem}.prom"
    text = prom.read_text() if prom.exists() else ""
    info = [line for line in text.splitlines() if line.startswith("nccl_pilot_process_info{")]
    mapped = [line for line in text.splitlines()
              if line.startswith("nccl_pilot_process_libnccl_mapped{")]
    check(len(info) == 1 and f'nccl_version="{NCCL[r]}"' in info[0] and
          f'libnccl_copies="{len(MAPPED[r])}"' in info[0] and info[0].endswith(" 1") and
          len(mapped) == len(MAPPED[r]),
          f"textfile rank {r}: nccl_pilot_process_info nccl_version {NCCL[r]}, "
          f"{len(MAPPED[r])} libnccl_mapped series", "\n".join(info + mapped) or "none")


def check_warnings(work):
    for r in RANKS:
        warns = [line for line in (work / f"rank{r}.err").read_text().splitlines()
                 if " NCCL WARN " in line]
        topic = {1: "libnccl", 2: "NCCL_PROTO"}.get(r)
        check(len(warns) == WARNS[r] and all(topic in w for w in warns),
              f"warnings rank {r}: {WARNS[r]} WARN line(s)" + (f" naming {topic}" if topic else ""),
              f"{len(warns)}: " + " || ".join(warns))


def verdict_lines(text):
    return [line for line in text.splitlines() if line.startswith(("FAIL", "WARN"))]


def json_verdicts(node):
    """Every object of the JSON with a FAIL or WARN "status", as one string of its values."""
    if isinstance(node, dict):
        if node.get("status") in ("FAIL", "WARN"):
            yield node["status"] + " " + " | ".join(str(v) for v in node.values())
        for value in node.values():
            yield from json_verdicts(value)
    elif isinstance(node, list):
        for value in node:
            yield from json_verdicts(value)


def check_doctor(a, work):
    text = (work / "doctor.txt").read_text()
    err = (work / "doctor.err").read_text()
    check(a.doctor_rc == 1, "doctor --job: exit 1", f"exit {a.doctor_rc}: {err.strip()}")
    lines = verdict_lines(text)
    named = set().union(*(ranks_named(line)[0] for line in text.splitlines()))
    check(named >= set(RANKS), "doctor --job: its lines name all four ranks", f"named {named}")
    odd = set().union(set(), *(ranks_named(line)[1] for line in lines))
    check(odd >= {1, 2, 3} and 0 not in odd,
          "doctor --job: FAIL/WARN lines name ranks 1, 2, 3 and never rank 0 alone",
          f"named alone: {sorted(odd)}")

    def some(verdict, rank, *words):
        found = [line for line in lines if line.startswith(verdict) and
                 rank in ranks_named(line)[1] and all(w in line for w in words)]
        check(found, f"doctor --job: {verdict} naming rank {rank} with {', '.join(words)}",
              "\n".join(lines) or text)

    some("FAIL", 1, "2.27.5")
    some("FAIL", 3, "2.28.3")
    some("WARN", 2, "NCCL_PROTO")
    some("WARN", 3, "NCCL_SOCKET_IFNAME")
    try:
        verdicts = list(json_verdicts(json.loads((work / "doctor.json").read_text())))
    except ValueError as e:
        verdicts = []
        err += f"doctor.json: {e}"
    odd = set().union(set(), *(ranks_named(v)[1] for v in verdicts))
    check(a.doctor_json_rc == 1 and odd >= {1, 2, 3} and 0 not in odd,
          "doctor --job --json: exit 1, FAIL/WARN entries name ranks 1, 2, 3, not rank 0",
          f"exit {a.doctor_json_rc}, named alone {sorted(odd)}; {err.strip()}")
    print("doctor --job said:\n" + text.rstrip())


def main():
    parser = argparse.ArgumentParser()
    for name in ("work", "fakes", "net", "tuner", "profiler", "table", "conf"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--doctor-rc", type=int, required=True)
    parser.add_argument("--doctor-json-rc", type=int, required=True)
    a = parser.parse_args()
    work = pathlib.Path(a.work)
    job = work / "job"

    def lib(version):
        return f"{a.fakes}/nccl-{version}/libnccl.so.2"

    check_fake_nccl(a, work, lib)
    check_older_nccl(a, work, lib)
    records, problems = load_records(job)
    check(sorted(records) == list(RANKS) and not problems,
          "records: one .provenance.json per rank process", f"ranks {sorted(records)}; {problems}")
    for r in RANKS:
        if r in records:
            record, path, lines = records[r]
            check_record(a, r, record, path, lines, lib)
            check_exports(job, r, record, lines)
    leaked = [p.name for p in job.iterdir() if p.is_file() and SECRET in p.read_text()]
    check(not leaked, "records: no value from outside NCCL_* in any file", str(leaked))
    check_warnings(work)
    check_doctor(a, work)
    print(f"{len(failures)} check(s) failed" if failures else "every check passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
