#!/usr/bin/env python3
"""Every query of the Grafana dashboard, and every rule of the Prometheus rules, against a real
Prometheus that scrapes what the library wrote (prometheus_e2e.sh runs it last).

- Each panel target's expr, with the dashboard's variables as "All" (.*) and Grafana's own
  ($__rate_interval and the like) as fixed durations, runs as an instant query and, unless the
  target is instant only, as a range query over the last minute. It must not error and must
  return data (a value that is a number, not NaN).
- Each template variable's label_values() query must return values.
- Each rule of the rules file must be loaded by Prometheus and evaluate without error; each
  recording rule's series must have data.

When something returns no data, the series it reads that Prometheus does not have are named
(through the recording rules, down to the library's series). Until the deadline, what has no
data yet is asked again (scrapes and rule evaluations take a few seconds to arrive); an error is
a failure at once.

Usage: dashboard_check.py --prometheus URL --dashboard JSON --rules YAML [--timeout S]
                          [--expect QUERY ...]
       dashboard_check.py --as-rules FILE --dashboard JSON --rules YAML
--expect adds a query that must return data too: what the scenario should make the rules say
(e.g. 'ALERTS{alertname="NcclPilotCommStalled",rank="3"}': pending or firing).
--as-rules needs no Prometheus: it writes every query as a recording rule, for `promtool check
rules` to parse (tests/prometheus does), and fails on a recorded series the rules do not record.
Exit 0 when all is well, 1 when a check failed (one FAIL line each), 2 on bad arguments.
Standard library only.
"""

import argparse
import json
import math
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

# Grafana's built-in variables, as fixed values a query can run with.
BUILTINS = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__interval_ms": "15000",
    "__range": "5m",
    "__range_s": "300",
    "__range_ms": "300000",
}
# The library's per-communicator state series (issue 30), named apart when missing.
STATE_SERIES = "nccl_pilot_comm_"
METRIC = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


class QueryError(Exception):
    """Prometheus answered the query with an error (a bad query, or a bad series)."""


class Prometheus:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def get(self, path, params):
        url = f"{self.url}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:  # 400/422: the query is wrong; the body says why
            try:
                body = json.load(e)
            except ValueError:
                raise QueryError(f"HTTP {e.code}") from None
        if body.get("status") != "success":
            raise QueryError(f"{body.get('errorType', '?')}: {body.get('error', '?')}")
        return body["data"]

    def instant(self, expr):
        return self.get("/api/v1/query", {"query": expr})["result"]

    def range(self, expr, seconds=60, step=5):
        end = time.time()
        return self.get("/api/v1/query_range", {"query": expr, "start": f"{end - seconds:.3f}",
                                                "end": f"{end:.3f}", "step": str(step)})["result"]

    def has_series(self, name):
        return bool(self.instant(f'count({{__name__="{name}"}})'))


def has_numbers(result):
    """Some sample of an instant or range result is a number (Grafana draws nothing for NaN)."""
    for series in result:
        values = series.get("values") or ([series["value"]] if "value" in series else [])
        for _, v in values:
            if not math.isnan(float(v)):
                return True
    return False


def substitute(expr, variables):
    """The expr as Grafana sends it with every variable at `variables` (or a built-in)."""
    def value(name, whole):
        if name in variables:
            return variables[name]
        if name in BUILTINS:
            return BUILTINS[name]
        raise ValueError(f"unknown variable {whole}")

    # ${name}, ${name:format}, [[name]], $name (\w+ takes the whole name: $comm_name is never
    # $comm followed by _name).
    expr = re.sub(r"\$\{(\w+)(?::\w+)?\}", lambda m: value(m.group(1), m.group(0)), expr)
    expr = re.sub(r"\[\[(\w+)\]\]", lambda m: value(m.group(1), m.group(0)), expr)
    return re.sub(r"\$(\w+)", lambda m: value(m.group(1), m.group(0)), expr)


def metric_names(expr):
    """The series names an expr reads: ours (nccl_*), and recorded ones (with a colon)."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values are not names
    bare = re.sub(r"\[[^\]]*\]", "", bare)  # nor are ranges
    names = []
    for m in METRIC.finditer(bare):
        name = m.group(0)
        if (name.startswith("nccl_") or ":" in name) and name not in names:
            names.append(name)
    return names


def read_rules(path):
    """{name: (kind, expr)} of every rule in the file. A line reader for the layout our rules
    file keeps ('- record: NAME' or '- alert: NAME', then 'expr: |' and its indented lines):
    the standard library has no YAML parser."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    rules, current, collecting, indent = {}, None, False, 0
    for line in lines:
        m = re.match(r"\s*- (record|alert):\s*(\S+)\s*$", line)
        if m:
            current, collecting = m.group(2), False
            rules[current] = [m.group(1), ""]
            continue
        if current is None:
            continue
        m = re.match(r"(\s*)expr:\s*(.*)$", line)
        if m:
            if m.group(2) not in ("|", ">", "|-", ">-"):
                rules[current][1] = m.group(2)
                current = None
            else:
                collecting, indent = True, len(m.group(1))
            continue
        if collecting:
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                collecting, current = False, None
            else:
                rules[current][1] += line.strip() + " "
    return {name: (kind, expr.strip()) for name, (kind, expr) in rules.items()}


def walk_panels(panels, row=""):
    for p in panels:
        if p.get("type") == "row":
            yield from walk_panels(p.get("panels", []), p.get("title", ""))
            row = p.get("title", "")
            continue
        yield row, p


class Check:
    """One thing to ask Prometheus until it answers with data: run() returns None when done,
    else why not yet; QueryError means failed for good."""

    def __init__(self, what, run, reads):
        self.what, self.run, self.reads = what, run, reads
        self.last = "not run"


def missing_series(prom, names, rules, seen=None):
    """Of the series these names read, through the recording rules, the ones Prometheus lacks:
    ([(series, why)], [recording rules that have no data because of them])."""
    seen = set() if seen is None else seen
    leaves, recorded = [], []
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        try:
            present = prom.has_series(name)
        except (QueryError, OSError):
            present = False
        if present:
            continue
        if name in rules and rules[name][0] == "record":
            below, through = missing_series(prom, metric_names(rules[name][1]), rules, seen)
            if below:
                leaves += below
                recorded += through + [name]
            else:
                leaves.append((name, "its rule's inputs are there but do not join, or it has "
                               "not been evaluated yet"))
        elif name.startswith(STATE_SERIES):
            leaves.append((name, "the library's per-communicator state series: not written"))
        elif name.startswith("nccl_"):
            leaves.append((name, "not written by the library in this run"))
        else:
            leaves.append((name, "no such series, and no rule of the file records it"))
    return leaves, recorded


def dashboard_queries(dashboard):
    """[(what, expr, kind, key)] of the dashboard with its variables at "All": kind "panel" (a
    target drawn over time: instant and range), "instant" (a table's instant-only target),
    "variable" (expr is (selector, label) of its label_values), "annotation"; key names it as
    a series name would (panel_ID_REFID, variable_NAME, annotation_N)."""
    variables = {var["name"]: var.get("allValue") or ".*"
                 for var in dashboard.get("templating", {}).get("list", [])
                 if var.get("type") != "datasource"}
    queries = []
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        q = var.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        m = re.fullmatch(r"\s*label_values\(\s*(.+?)\s*,\s*(\w+)\s*\)\s*", q)
        if not m:
            raise ValueError(f"variable ${var['name']}: not a label_values(selector, label) "
                             f"query: {q!r}")
        queries.append((f"variable ${var['name']} ({q})",
                        (substitute(m.group(1), variables), m.group(2)), "variable",
                        f"variable_{var['name']}"))
    for row, panel in walk_panels(dashboard.get("panels", [])):
        where = f'panel "{panel.get("title", "?")}"' + (f" ({row})" if row else "")
        for t in panel.get("targets", []):
            if t.get("hide") or "expr" not in t:
                continue
            what = f"{where} target {t.get('refId', '?')}"
            try:
                expr = substitute(t["expr"], variables)
            except ValueError as e:
                raise ValueError(f"{what}: {e}") from None
            instant_only = t.get("instant") and not t.get("range")
            queries.append((what, expr, "instant" if instant_only else "panel",
                            f"panel_{panel.get('id', 'x')}_{t.get('refId', 'x')}"))
    for i, a in enumerate(dashboard.get("annotations", {}).get("list", [])):
        if "expr" in a:
            queries.append((f'annotation "{a.get("name", "?")}"',
                            substitute(a["expr"], variables), "annotation", f"annotation_{i}"))
    return queries


def write_as_rules(queries, path):
    """Every query as a recording rule, for `promtool check rules` to parse offline."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("groups:\n  - name: dashboard_queries\n    rules:\n")
        for what, expr, kind, key in queries:
            if kind == "variable":
                expr = expr[0]
            record = "dashboard:" + re.sub(r"[^A-Za-z0-9_]", "_", key)
            f.write(f"      # {what}\n      - record: {record}\n"
                    f"        expr: {json.dumps(expr)}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prometheus", help="base URL, e.g. http://127.0.0.1:9090")
    ap.add_argument("--dashboard", required=True)
    ap.add_argument("--rules", required=True)
    ap.add_argument("--timeout", type=float, default=60, help="seconds to wait for data")
    ap.add_argument("--expect", action="append", default=[], metavar="QUERY",
                    help="a query that must return data as well (repeatable)")
    ap.add_argument("--as-rules", metavar="FILE",
                    help="no Prometheus: write every dashboard query as a recording rule to FILE "
                         "(for promtool check rules), and check that each series a query reads "
                         "is the library's (nccl_*) or recorded by the rules file")
    args = ap.parse_args()
    if not args.prometheus and not args.as_rules:
        ap.error("--prometheus or --as-rules is needed")

    try:
        with open(args.dashboard, encoding="utf-8") as f:
            dashboard = json.load(f)
        rules = read_rules(args.rules)
        queries = dashboard_queries(dashboard)
    except (OSError, ValueError) as e:
        print(f"FAIL: {e}")
        return 2
    if not rules:
        print(f"FAIL: {args.rules}: no rules found")
        return 2

    if args.as_rules:
        write_as_rules(queries, args.as_rules)
        unknown = 0
        for what, expr, kind, _ in queries:
            for name in metric_names(expr[0] if kind == "variable" else expr):
                if ":" in name and not (name in rules and rules[name][0] == "record"):
                    print(f"FAIL {what}: reads {name}, which {args.rules} does not record")
                    unknown += 1
        print(f"{len(queries)} queries written to {args.as_rules}")
        return 1 if unknown else 0

    prom = Prometheus(args.prometheus)

    def series_check(what, expr, kind):
        def run():
            result = prom.instant(expr) if kind == "instant" else prom.range(expr)
            return None if has_numbers(result) else "no data"
        return Check(what, run, metric_names(expr))

    def runs(expr):
        prom.instant(expr)  # raises QueryError when Prometheus refuses it
        return None

    checks, panels = [], 0
    for what, expr, kind, _ in queries:
        if kind == "variable":
            def values(selector=expr[0], label=expr[1]):
                found = prom.get(f"/api/v1/label/{label}/values", {"match[]": selector})
                return None if found else "no values"
            checks.append(Check(what, values, metric_names(expr[0])))
        elif kind == "annotation":
            # Only that it runs: it shows firing alerts, and a healthy job has none.
            checks.append(Check(what, lambda expr=expr: runs(expr), []))
        else:
            panels += 1
            checks.append(series_check(f"{what} instant", expr, "instant"))
            if kind == "panel":
                checks.append(series_check(f"{what} range", expr, "range"))

    # The rules: loaded, healthy, and the recorded series there.
    def loaded_rules():
        out = {}
        for group in prom.get("/api/v1/rules", {})["groups"]:
            for r in group["rules"]:
                out[r["name"]] = r
        return out

    for name, (kind, expr) in rules.items():
        def run(name=name, kind=kind):
            r = loaded_rules().get(name)
            if r is None:
                raise QueryError(f"Prometheus did not load it (rule_files: {args.rules}?)")
            if r.get("health") == "err":
                raise QueryError(f"evaluation error: {r.get('lastError')}")
            if r.get("health") != "ok":
                return f"not evaluated yet (health {r.get('health')})"
            if kind == "record" and not has_numbers(prom.instant(name)):
                return "no data"
            return None
        checks.append(Check(f"{kind} rule {name}", run, [name] if kind == "record" else []))
    for expr in args.expect:
        checks.append(series_check(f"expected {expr}", expr, "instant"))

    deadline = time.time() + args.timeout
    pending, failed = list(checks), []
    while pending:
        waiting = []
        for c in pending:
            try:
                c.last = c.run()
            except QueryError as e:
                failed.append((c, str(e)))
                continue
            except OSError as e:  # Prometheus not up yet
                c.last = f"Prometheus unreachable: {e}"
            if c.last is None:
                print(f"ok   {c.what}")
            else:
                waiting.append(c)
        pending = waiting
        if pending and time.time() >= deadline:
            break
        if pending:
            time.sleep(1)
    absent = {}
    for c in pending:
        leaves, recorded = missing_series(prom, c.reads, rules) if c.reads else ([], [])
        absent.update(leaves)
        why = f"{c.last} after {args.timeout:.0f} s"
        if leaves:
            why += "; missing: " + ", ".join(name for name, _ in leaves)
        if recorded:
            why += " (so no " + ", ".join(recorded) + ")"
        failed.append((c, why))
    for c, why in failed:
        print(f"FAIL {c.what}: {why}")
    for name, why in sorted(absent.items()):
        print(f"MISSING {name}: {why}")
    print(f"{len(checks) - len(failed)} of {len(checks)} checks passed "
          f"({panels} panel queries, {len(rules)} rules)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
