"""The checks of the GPU run's "hang" phase (tests/gpu/run.sh, hang_rank.py): live stall
forensics on the real NCCL. Rank 1 (the target) calls one all-reduce 15 s late and is stopped
(SIGSTOP) for 14 s in another while the others wait in it; run.sh's driver runs
`nccl-pilot hang DIR --json` during each pause and logs what it did in driver.log.

  hang-late     the probe of the late all-reduce ran during the pause, past the stall threshold,
                exited 1 and named one stalled communicator, the summaries' own, at that
                all-reduce (AllReduce #seq, NCCL's number), with the target not_launched (the
                process that slept), the others stuck, and the target the only suspect
  hang-stopped  the same of the stopped one: the target frozen (the process the driver stopped)
  hang-results  every all-reduce of every rank exact, the paused ones included, every rank
                finished, and the profiler counted each of them (the summaries' AllReduce calls)
  hang-warn     each rank that waited logged one stall WARN for each pause's all-reduce (its rank
                from init), the target none for the one it never launched
Used by check.py; docs/validation.md explains them.
"""
import json
import re

import metrics_check

# metrics/src/runtime.cc: "stall: comm 0x... (name) rank R of N: AllReduce #S (1M) launched ..."
RE_STALL_WARN = re.compile(
    r"NCCL WARN PROFILER/Pilot: stall: comm (\S+) \((.*?)\) rank (\d+) of (\d+): (\w+) #(\d+) ")
PAUSES = (("late", "not_launched", "hang-late"), ("stop", "frozen", "hang-stopped"))


def read_json(path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def driver_events(phase):
    """{event: (unix_ms, [words])} from driver.log (the last of each), and its gave-up lines."""
    events, gave_up = {}, []
    try:
        text = (phase.dir / "driver.log").read_text(encoding="utf-8")
    except OSError:
        return events, ["no driver.log"]
    for line in text.splitlines():
        words = line.split()
        if len(words) < 2 or not words[0].isdigit():
            continue
        if words[1] == "gave":
            gave_up.append(" ".join(words[1:]))
        elif words[1] == "probe" and len(words) >= 4:
            events[f"probe {words[2]} {words[3]}"] = (int(words[0]), words[4:])
        else:
            events[words[1]] = (int(words[0]), words[2:])
    return events, gave_up


def plan_of(phase):
    """The plan hang_rank.py ran (the same on every rank), or None."""
    plans = [r.get("plan") for r in phase.results if r]
    return plans[0] if plans and all(p == plans[0] for p in plans) else None


def comms_of_summaries(phase):
    """The communicator ids of every rank's summary with the run's rank count."""
    summaries, _ = metrics_check.read_summaries(phase.dir / "metrics")
    return {c["comm"] for s in summaries.values() for c in s["comms"]
            if c.get("nranks") == phase.ranks}


def pause_window(name, events, target_result):
    """(begin_ms, end_ms, pid) of pause `name`: when the target left and came back (the late
    one: its own sleep; the stop: the driver's SIGSTOP and SIGCONT), and its process; None where
    not on record."""
    if name == "late":
        slept = (target_result or {}).get("slept_ms") or []
        late = events.get("late", (None, []))[1]
        return (slept[0] if slept else None, slept[1] if len(slept) > 1 else None,
                late[0] if late else None)
    stop, cont = events.get("stop"), events.get("cont")
    return (stop[0] if stop else None, cont[0] if cont else None,
            stop[1][0] if stop and stop[1] else None)


def judge_probe(phase, name, state, plan, events, comms):
    """(problems, evidence) of the probe of pause `name`: no problems when it named the target
    as `state` during the pause."""
    target = plan["target"]
    seq = plan[f"{name}_seq"]
    others = [r for r in range(phase.ranks) if r != target]
    begin, end, pid = pause_window(name, events,
                                   phase.results[target] if target < phase.ranks else None)
    stall_s = float(events.get("stall_s", (0, ["0"]))[1][0])
    probe_begin, probe_end = events.get(f"probe {name} begin"), events.get(f"probe {name} end")
    if not probe_begin or not probe_end:
        return [f"the driver ran no probe of the {name} pause"], None
    problems = []
    if begin is None or end is None:
        problems.append(f"the {name} pause is not on record")
    elif not begin + stall_s * 1000 <= probe_begin[0] <= probe_end[0] <= end:
        problems.append(f"the probe ran {(probe_begin[0] - begin) / 1000:.1f} to "
                        f"{(probe_end[0] - begin) / 1000:.1f} s into a pause of "
                        f"{(end - begin) / 1000:.1f} s (want from {stall_s:g} s, the stall "
                        "threshold, to its end)")
    rc = probe_end[1][0] if probe_end[1] else "?"
    if rc != "1":
        problems.append(f"nccl-pilot hang exited {rc}, not 1 (stalled)")
    verdict = read_json(phase.dir / f"hang-{name}.json")
    stalls = (verdict or {}).get("stalls")
    if not isinstance(stalls, list) or len(stalls) != 1:
        problems.append(f"hang-{name}.json: {len(stalls) if isinstance(stalls, list) else 'no'} "
                        "stalled communicator(s), want 1")
        return problems, None
    s = stalls[0]
    want = {"op": "AllReduce", "seq": seq, "not_launched": [], "frozen": [], "missing": [],
            "finalized": [], "stuck": others, "suspects": [target]}
    want[state] = [target]
    for key, value in want.items():
        if s.get(key) != value:
            problems.append(f"{key} {s.get(key)}, want {value}")
    if comms and s.get("comm") not in comms:
        problems.append(f"comm {s.get('comm')} is none of the summaries' {sorted(comms)}")
    if not isinstance(s.get("stalled_s"), (int, float)) or s["stalled_s"] < stall_s:
        problems.append(f"stalled_s {s.get('stalled_s')} < the threshold {stall_s:g}")
    if f"rank {target}" not in str(s.get("why")):
        problems.append(f"why does not name rank {target}: {s.get('why')!r}")
    row = next((r for r in s.get("ranks", []) if r.get("rank") == target), {})
    if pid is None or str(row.get("pid")) != str(pid):
        problems.append(f"rank {target}'s row is pid {row.get('pid')}, the target was pid {pid}")
    if problems:
        return problems, None
    return [], (f"{(probe_begin[0] - begin) / 1000:.1f} s into the {(end - begin) / 1000:.1f} s "
                f"pause nccl-pilot hang exited 1: comm {s['comm']} AllReduce #{seq} stalled "
                f"{s['stalled_s']:.1f} s, {state} [{target}] (pid {pid}), stuck {others}, "
                f"suspects [{target}]: {s.get('why')}")


def check_hang(report, phase):
    plan = plan_of(phase)
    events, gave_up = driver_events(phase)
    comms = comms_of_summaries(phase)
    for name, state, check in PAUSES:
        if plan is None:
            report.add(phase.name, check, False,
                       "no rank result with hang_rank.py's plan (or the ranks' plans differ)")
            continue
        problems, evidence = judge_probe(phase, name, state, plan, events, comms)
        problems += [g for g in gave_up if name in g]
        report.add(phase.name, check, not problems, "; ".join(problems) or evidence)
    check_results(report, phase, plan)
    check_warn(report, phase, plan)


def check_results(report, phase, plan):
    wrong, counts, waits = [], [], []
    summaries, _ = metrics_check.read_summaries(phase.dir / "metrics")
    want = (plan or {}).get("all_reduces")
    for rank in range(phase.ranks):
        result = phase.results[rank]
        if not result or not result.get("finished"):
            wrong.append(f"rank {rank} did not finish")
            continue
        ran = result.get("all_reduces", [])
        if [op.get("seq") for op in ran] != list(range(want or 0)):
            wrong.append(f"rank {rank} ran {len(ran)} all-reduces, want {want}")
        wrong += [f"rank {rank} all-reduce #{op['seq']}: {op['wrong']}" for op in ran
                  if op.get("wrong")]
        size = metrics_check.bucket(result.get("bytes", 0))
        calls = sum(c["calls"] for c in summaries.get(rank, {}).get("colls", [])
                    if c.get("collective") == "AllReduce" and c.get("size_bucket_bytes") == size)
        if calls != len(ran):
            counts.append(f"rank {rank}: the profiler counted {calls} AllReduce of "
                          f"{result.get('bytes')} bytes, it ran {len(ran)}")
        if plan and rank != plan["target"]:
            s = {op.get("seq"): op.get("s", 0) for op in ran}
            waits.append(f"{s.get(plan['late_seq'], 0):.1f}/{s.get(plan['stop_seq'], 0):.1f}")
    problems = wrong + counts
    report.add(phase.name, "hang-results", not problems,
               f"all {want} all-reduces exact on every rank, the two paused ones included (the "
               f"other ranks waited {', '.join(waits)} s in the late/stopped one), each counted "
               "by the profiler" if not problems else "; ".join(problems[:4]))


def check_warn(report, phase, plan):
    if plan is None:
        report.add(phase.name, "hang-warn", False, "no plan to check the stall WARNs against")
        return
    problems, seen = [], 0
    for rank in range(phase.ranks):
        lines = RE_STALL_WARN.findall(phase.logs[rank])
        for _, _, logged_rank, _, _, _ in lines:
            if int(logged_rank) != rank:
                problems.append(f"rank {rank}'s log has a stall WARN of rank {logged_rank}")
        for name in ("late", "stop"):
            seq = plan[f"{name}_seq"]
            n = sum(1 for l in lines if l[4] == "AllReduce" and int(l[5]) == seq)
            if rank != plan["target"]:
                seen += n
                if n != 1:
                    problems.append(f"rank {rank}: {n} stall WARNs of AllReduce #{seq}, want 1")
            elif name == "late" and n:
                problems.append(f"rank {rank} (never launched AllReduce #{seq}) warned of it")
    report.add(phase.name, "hang-warn", not problems,
               f"each of the {phase.ranks - 1} waiting ranks logged one stall WARN per pause "
               f"({seen} in all), rank {plan['target']} none of the all-reduce it never launched"
               if not problems else "; ".join(problems[:4]))
