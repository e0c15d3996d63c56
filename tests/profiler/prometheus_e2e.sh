#!/usr/bin/env bash
# A real node_exporter (textfile collector) and a real Prometheus server, started here, scrape
# what the library wrote (NCCL_PILOT_METRICS_DIR) and what it serves (NCCL_PILOT_METRICS_PORT)
# while the fake NCCL replays a scenario; queries must bring the library's figures back.
# Last, every Grafana dashboard panel's query and every rule of examples/prometheus/rules.yml
# (which this Prometheus loads) must work against it and return data (dashboard_check.py).
# With NCCL_PILOT, `nccl-pilot hang --prometheus` on this Prometheus must give the stalled
# communicator the verdict `nccl-pilot hang` gives from the ranks' state files.
# Exits 77 (skip) with one line when a binary is missing, unless CI=true.
# Usage: prometheus_e2e.sh REPLAY PROFILER_MODULE [NCCL_PILOT]
set -euo pipefail

[[ $# -eq 2 || $# -eq 3 ]] || { echo "usage: $0 REPLAY PROFILER_MODULE [NCCL_PILOT]" >&2; exit 2; }
replay=$1
module=$2
pilot_cli=${3:-}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

skip() {
  if [[ ${CI:-} == true ]]; then
    echo "FAIL: $1 (CI needs it: tools/install-deps.sh)"
    exit 1
  fi
  echo "SKIP: $1"
  exit 77
}
for tool in prometheus prometheus-node-exporter python3; do
  command -v "$tool" >/dev/null || skip "$tool not installed (Debian packages prometheus, prometheus-node-exporter)"
done

work=$(mktemp -d /tmp/pilot-prom-e2e-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Nine free ports, distinct: each socket stays bound until all are picked (one at a time, the
# kernel may hand out a port it just gave back).
free_ports() {
  python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))' "$1"
}
read -ra ports <<<"$(free_ports 9)"
lib_port=${ports[0]}
exporter_port=${ports[1]}
prometheus_port=${ports[2]}
rank_ports=("${ports[@]:3:4}")
stuck_ports=("${ports[@]:7:2}")
mkdir -p "$work/textfile"

cat >"$work/scenario" <<'SCENARIO'
comm 0xe2e dp 4 1
coll 0xe2e AllReduce 262144 ncclFloat32 RING SIMPLE 4 5 250
coll 0xe2e AllGather 65536 ncclBfloat16 RING LL128 2 3 40
comm 0x99 pp 4 1
p2p 0x99 Send 1048576 1 2 4 49.9
p2p 0x99 Recv 1048576 -1 2 4 49.9
comm 0xa2a ep 4 1
alltoall 0xa2a 65536 1 3 200
SCENARIO
NCCL_PILOT_METRICS_DIR="$work/textfile" NCCL_PILOT_METRICS_INTERVAL_S=1 \
  NCCL_PILOT_METRICS_PORT="$lib_port" SLURM_JOB_ID=e2e \
  "$replay" --module "$module" --scenario "$work/scenario" --rank 0 --repeat-for 150 --jitter 0 \
  >"$work/replay.log" 2>&1 &
pids+=($!)

# Four ranks of one communicator, each its own process serving HTTP: rank 2 arrives late at every
# collective (its kernels are the shortest), and the all-reduces run at 70% of the calibrated
# table's time (examples/monitoring/demo.table, nodes=2): the rules' joins across ranks and the
# dashboard's straggler and drift panels get data.
cat >"$work/ranks.scenario" <<'SCENARIO'
comm 0xda7a dp 4 2
coll 0xda7a AllReduce 4194304 ncclFloat32 RING SIMPLE 8 5 1000,1000,850,1000
coll 0xda7a AllGather 65536 ncclFloat32 RING SIMPLE 4 5 52,52,44,52
SCENARIO
for rank in 0 1 2 3; do
  env -u LOCAL_RANK -u SLURM_LOCALID -u OMPI_COMM_WORLD_LOCAL_RANK -u MPI_LOCALRANKID \
    NCCL_PILOT_METRICS=1 NCCL_PILOT_METRICS_INTERVAL_S=1 NCCL_PILOT_METRICS_PORT="${rank_ports[rank]}" \
    NCCL_PILOT_TUNER_TABLE="$src/examples/monitoring/demo.table" SLURM_JOB_ID=e2e \
    "$replay" --module "$module" --scenario "$work/ranks.scenario" --rank "$rank" \
    --repeat-for 150 >"$work/rank-$rank.log" 2>&1 &
  pids+=($!)
done

# A stalled communicator of two rank processes: both complete 40 all-reduces, then rank 0
# launches the 41st, whose kernels start and never stop, while rank 1 never launches it. With a
# stall threshold of 2 s, rank 0 says it is stalled (the series and NcclPilotCommStalled) and
# rank 1 is the rank behind (NcclPilotRankBehind): both alerts pending (they fire after a
# minute).
cat >"$work/stuck.scenario" <<'SCENARIO'
comm 0x5a11 stuck 2 1
coll 0x5a11 AllReduce 262144 ncclFloat32 RING SIMPLE 4 40 100
stall 0x5a11 AllReduce 262144 ncclFloat32 RING SIMPLE 4 0
SCENARIO
for rank in 0 1; do
  env -u LOCAL_RANK -u SLURM_LOCALID -u OMPI_COMM_WORLD_LOCAL_RANK -u MPI_LOCALRANKID \
    NCCL_PILOT_METRICS=1 NCCL_PILOT_METRICS_INTERVAL_S=1 NCCL_PILOT_STALL_S=2 \
    NCCL_PILOT_METRICS_PORT="${stuck_ports[rank]}" NCCL_PILOT_METRICS_DIR="$work/stuck-metrics" \
    SLURM_JOB_ID=e2e \
    "$replay" --module "$module" --scenario "$work/stuck.scenario" --rank "$rank" \
    --hold 150 >"$work/stuck-$rank.log" 2>&1 &
  pids+=($!)
done

# The library's own textfile, once it holds the collectives (written every second).
prom=""
for _ in $(seq 1 100); do
  prom=$(find "$work/textfile" -name "*.prom" | head -n 1)
  if [[ -n $prom ]] && grep -q '^nccl_collective_exec_time_microseconds{' "$prom"; then break; fi
  sleep 0.1
done
[[ -n $prom ]] || { echo "FAIL: the library wrote no textfile"; cat "$work/replay.log"; exit 1; }
cp "$prom" "$work/expected.prom"
if command -v promtool >/dev/null; then
  # Exit 3 = lint problems; the only ones allowed are on Inspector's own metric names.
  lint=$(promtool check metrics <"$work/expected.prom" 2>&1) && code=0 || code=$?
  if [[ $code -ne 0 && ($code -ne 3 || $(grep -Ecv '^nccl_(collective|p2p)_exec_time_microseconds use base unit' <<<"$lint") -ne 0) ]]; then
    echo "FAIL: promtool check metrics (exit $code): $lint"
    exit 1
  fi
fi

prometheus-node-exporter --web.listen-address="127.0.0.1:$exporter_port" \
  --collector.disable-defaults --collector.textfile \
  --collector.textfile.directory="$work/textfile" >"$work/node-exporter.log" 2>&1 &
pids+=($!)
rank_targets=$(printf '"127.0.0.1:%s",' "${rank_ports[@]}" "${stuck_ports[@]}")
cat >"$work/prometheus.yml" <<CONFIG
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["$src/examples/prometheus/rules.yml"]
scrape_configs:
  - job_name: node
    static_configs: [{targets: ["127.0.0.1:$exporter_port"]}]
  - job_name: pilot
    static_configs: [{targets: ["127.0.0.1:$lib_port"]}]
  - job_name: ranks
    static_configs: [{targets: [${rank_targets%,}]}]
CONFIG
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prometheus_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)

python3 - "$prometheus_port" "$prom" <<'CHECK'
import json, sys, time, urllib.parse, urllib.request

port, textfile = sys.argv[1], sys.argv[2]

def read_textfile():
    out = {}
    for line in open(textfile, encoding="utf-8"):  # replaced whole by a rename
        if line.startswith("#") or not line.strip():
            continue
        series, value = line.rsplit(" ", 1)
        out[series] = float(value)
    return out

def query(q):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            body = json.load(r)
    except OSError:
        return None
    return body["data"]["result"] if body.get("status") == "success" else None

def wait_for(q, deadline=45):
    end = time.time() + deadline
    while time.time() < end:
        result = query(q)
        if result:
            return result
        time.sleep(0.5)
    return None

def file_value(expected, name, **labels):
    hits = [v for s, v in expected.items()
            if s.startswith(name + "{") and all(f'{k}="{v}"' in s for k, v in labels.items())]
    assert len(hits) == 1, f"{name} {labels}: {len(hits)} series in the textfile"
    return hits[0]

failures = 0
def check(what, q, want, deadline=45):
    # Asked again until it matches: the library snapshots a key's counters field by field
    # (metrics/aggregate.h), so an export racing a completion may count a call's time and not
    # yet the call, for one interval; the next export is whole again.
    global failures
    end = time.time() + deadline
    got, ok = None, False
    while not ok and time.time() < end:
        result = wait_for(q, max(1, end - time.time()))
        got = float(result[0]["value"][1]) if result and len(result) == 1 else None
        ok = got is not None and abs(got - want) <= 1e-9 * max(1.0, abs(want))
        if not ok:
            time.sleep(0.5)
    print(("ok  " if ok else "FAIL"), what, f"query {q!r}: {got} (the library wrote {want})")
    failures += 0 if ok else 1

# Every replayed all-reduce takes 250 us and every all-gather 40 us (no jitter), so each
# interval's figures are the same: the file's, and what the timestamps imply. Send/Recv of 1 MiB
# take 49.9 us (bus factor 1). (what, the textfile's series and labels, the implied value):
IMPLIED = [
    ("all-reduce time", ("nccl_collective_exec_time_microseconds", {"collective": "AllReduce"}),
     250.0),
    ("all-gather bus bandwidth", ("nccl_bus_bandwidth_gbs", {"collective": "AllGather"}),
     131072 * 3 / 40000),
    ("Send time", ("nccl_p2p_exec_time_microseconds", {"p2p_operation": "Send",
                                                       "comm_name": "pp"}), 49.9),
    ("Recv bus bandwidth", ("nccl_p2p_bus_bandwidth_gbs", {"p2p_operation": "Recv",
                                                          "comm_name": "pp"}), 1048576 / 49900),
]

def implied(deadline=15):
    """The textfile's values of IMPLIED, once a textfile has them all as the GPU timestamps
    imply (read again until then: an export racing a completion may be off for one interval,
    as in check); FAIL lines for the last one read when none did."""
    global failures
    end = time.time() + deadline
    while True:
        expected = read_textfile()
        got = [file_value(expected, name, **labels) for _, (name, labels), _ in IMPLIED]
        wrong = [(what, g, want) for (what, _, want), g in zip(IMPLIED, got)
                 if abs(g - want) > 1e-9 * want]
        if not wrong or time.time() >= end:
            break
        time.sleep(0.3)
    for what, g, want in wrong:
        print(f"FAIL the textfile's {what} is {g}, the GPU timestamps imply {want}")
        failures += 1
    return got

exec_ar, bus_ag, exec_send, bus_recv = implied()
check("node_exporter textfile: Inspector's exec time",
      'nccl_collective_exec_time_microseconds{job="node",collective="AllReduce",'
      'slurm_job_id="e2e",message_size="1-2MB",algo_proto="RING_SIMPLE"}', exec_ar)
check("node_exporter textfile: Inspector's bus bandwidth",
      'nccl_bus_bandwidth_gbs{job="node",collective="AllGather"}', bus_ag)
check("HTTP endpoint: our histogram's sum over count",
      'nccl_pilot_collective_time_seconds_sum{job="pilot",collective="AllReduce",comm="0xe2e"}'
      ' / nccl_pilot_collective_time_seconds_count', 250e-6)
check("HTTP endpoint: our histogram through histogram_quantile",
      'histogram_quantile(0.99, nccl_pilot_collective_time_seconds_bucket{job="pilot",'
      'collective="AllGather"}) > 3.2e-05', 0.99 * (6.4e-05 - 3.2e-05) + 3.2e-05)
# Send/Recv, and a 4-rank all-to-all over Send/Recv whose operations span 200 us.
check("node_exporter textfile: Inspector's P2P exec time",
      'nccl_p2p_exec_time_microseconds{job="node",p2p_operation="Send",comm_name="pp",'
      'message_size="1-2MB"}', exec_send)
check("node_exporter textfile: Inspector's P2P bus bandwidth",
      'nccl_p2p_bus_bandwidth_gbs{job="node",p2p_operation="Recv",comm_name="pp"}', bus_recv)
check("HTTP endpoint: our P2P histogram's sum over count",
      'nccl_pilot_p2p_time_seconds_sum{job="pilot",p2p_operation="Recv",comm="0x99"}'
      ' / nccl_pilot_p2p_time_seconds_count', 49.9e-6)
check("HTTP endpoint: the grouped all-to-all's span",
      'nccl_pilot_collective_time_seconds_sum{job="pilot",collective="AlltoAll",'
      'algo_proto="P2P"} / nccl_pilot_collective_time_seconds_count', 200e-6)
check("HTTP endpoint: distinct peers sent to",
      'nccl_pilot_p2p_peers{job="pilot",comm="0xa2a",p2p_operation="Send"}', 3)
check("node_exporter read the file without error", 'node_textfile_scrape_error{job="node"}', 0)
sys.exit(1 if failures else 0)
CHECK

# Every dashboard panel's query and every rule against this Prometheus; and the rules' join of
# the four ranks above names rank 2 as the late arriver (15% ahead of the median) and the
# all-reduces' drift: their alerts are pending (they fire after 30 minutes). Of the stalled
# communicator, rank 0 is stalled and rank 1 behind by one all-reduce (pending too).
python3 "$src/tests/profiler/dashboard_check.py" --prometheus "http://127.0.0.1:$prometheus_port" \
  --dashboard "$src/examples/grafana/nccl-pilot-dashboard.json" \
  --rules "$src/examples/prometheus/rules.yml" --timeout 60 \
  --expect 'comm_collective_size:nccl_pilot_comm_late_arriver:lead_ratio{comm="0xda7a",rank="2"} > 0.1' \
  --expect 'ALERTS{alertname="NcclPilotLateArriver",comm="0xda7a",rank="2"}' \
  --expect 'ALERTS{alertname="NcclPilotDrift",comm="0xda7a",collective="AllReduce"}' \
  --expect 'nccl_pilot_comm_stalled{comm="0x5a11",rank="0"} == 1' \
  --expect 'ALERTS{alertname="NcclPilotCommStalled",comm="0x5a11",rank="0"}' \
  --expect 'ALERTS{alertname="NcclPilotRankBehind",comm="0x5a11",rank="1"}'

# The stalled communicator's verdict from Prometheus's series and from the state files: the
# same operation, kind and suspects (rank 1 never launched AllReduce #40).
if [[ -n $pilot_cli ]]; then
  rc=0
  "$pilot_cli" hang "$work/stuck-metrics" --json >"$work/hang-files.json" 2>"$work/hang-files.err" || rc=$?
  [[ $rc -eq 1 ]] || { echo "FAIL: hang on the state files exited $rc"; cat "$work/hang-files.err"; exit 1; }
  rc=0
  "$pilot_cli" hang --prometheus "http://127.0.0.1:$prometheus_port" --job ranks --json \
    >"$work/hang-prom.json" 2>"$work/hang-prom.err" || rc=$?
  [[ $rc -eq 1 ]] || { echo "FAIL: hang --prometheus exited $rc"; cat "$work/hang-prom.json" "$work/hang-prom.err"; exit 1; }
  python3 - "$work/hang-files.json" "$work/hang-prom.json" <<'SAME'
import json, sys
def stall(path):
    stalls = [s for s in json.load(open(path))["stalls"] if s["comm"] == "0x5a11"]
    if len(stalls) != 1:
        sys.exit(f"FAIL: {path} has {len(stalls)} stalls of comm 0x5a11")
    s = stalls[0]
    return {k: s[k] for k in ("op", "seq", "kind", "suspects", "not_launched", "stuck")}
files, prom = stall(sys.argv[1]), stall(sys.argv[2])
if files != prom or files["suspects"] != [1] or files["kind"] != "not_launched":
    sys.exit(f"FAIL: hang --prometheus says {prom}, the state files {files}")
print(f"ok   hang --prometheus agrees with the state files: {prom}")
SAME
fi
