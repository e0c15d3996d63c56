"""The checks of tests/gpu/check.py fail where they must.

Starts from a real recorded run (recorded/h200-nccl2.28.9-4ranks, all checks pass), changes one
piece of evidence the way a broken library or NCCL would, and asserts that exactly the check
covering it fails. The metrics, hang and provenance phases, which that recording predates, are
built here (synthesize_metrics_phase, synthesize_hang_phase, synthesize_provenance_phase: files
the built library and nccl-pilot write on the fake NCCL, not recordings). PILOT_BUILD names the build tree whose nccl-pilot computes the
expectations and whose fake-NCCL tools build those phases.

Usage: PILOT_BUILD=build python3 -m unittest tests/gpu/check_test.py
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = pathlib.Path(__file__).resolve().parent
RECORDED = HERE / "recorded"
BUILD = pathlib.Path(os.environ.get("PILOT_BUILD", "build")).resolve()
sys.path.insert(0, str(HERE))
import metrics_check  # noqa: E402  (this folder's)


def run(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, check=False)


class RecordedRunCase(unittest.TestCase):
    """Each test gets its own copy of the recorded run, checked as it was recorded."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.good = pathlib.Path(cls.tmp.name) / "good"
        done = run("bash", HERE / "run.sh", "--dry-run", RECORDED / "h200-nccl2.28.9-4ranks",
                   "--build", BUILD, "--out", cls.good, "--python", sys.executable)
        if done.returncode != 0:
            raise AssertionError("the recorded run must pass as recorded:\n" + done.stdout +
                                 done.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.dir = pathlib.Path(self.tmp.name) / self.id().rsplit(".", 1)[-1]
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.copytree(self.good, self.dir)

    def edit(self, relative, old, new, count=0):
        path = self.dir / relative
        text = path.read_text(encoding="utf-8")
        changed, n = re.subn(old, new, text, count=count)
        self.assertGreater(n, 0, f"{old!r} not in {relative}")
        path.write_text(changed, encoding="utf-8")

    def failures(self):
        done = run(sys.executable, HERE / "check.py", self.dir)
        failed = sorted(" ".join(line.split()[1:3]) for line in done.stdout.splitlines()
                        if line.startswith("FAIL "))
        self.assertEqual(done.returncode, 1 if failed else 0, done.stdout + done.stderr)
        return failed, done.stdout


class CheckFailsOnBrokenEvidence(RecordedRunCase):
    def test_the_recorded_run_passes_untouched(self):
        failed, out = self.failures()
        self.assertEqual(failed, [])
        # Recorded before the tuner logged its facts: that check skips (tuned, topo-only).
        self.assertIn("33 passed, 0 failed, 2 skipped", out)

    def test_a_decision_nccl_did_not_take_from_the_table(self):
        self.edit("tuned/rank0.nccl.log", r"AllReduce: 4194304 Bytes -> Algo RING proto LL",
                  "AllReduce: 4194304 Bytes -> Algo RING proto SIMPLE", count=1)
        failed, out = self.failures()
        self.assertEqual(failed, ["tuned decisions"])
        self.assertIn("allreduce 4M: NCCL [('ring', 'll', 1), ('ring', 'simple', 1)]", out)

    def test_a_channel_count_other_than_the_table_s(self):
        self.edit("topo-only/rank0.nccl.log",
                  r"(AllGather: 16384 Bytes -> Algo RING proto SIMPLE) channel\{Lo..Hi\}=\{0..0\}",
                  r"\1 channel{Lo..Hi}={0..1}")
        failed, out = self.failures()
        self.assertEqual(failed, ["topo-only decisions"])
        self.assertIn("allgather 64K", out)

    def test_a_missing_tuning_line(self):
        self.edit("tuned/rank0.nccl.log", r".*ReduceScatter: 1048576 Bytes -> .*\n", "")
        failed, out = self.failures()
        self.assertEqual(failed, ["tuned decisions"])
        self.assertIn("reducescatter 4M: NCCL no TUNING line", out)

    def test_tuned_decisions_equal_to_nccl_s_own(self):
        # If NCCL's untuned choices were the table's, the tuned phase would prove nothing.
        tuned = (self.dir / "tuned/rank0.nccl.log").read_text(encoding="utf-8")
        taken = "".join(l for l in tuned.splitlines(keepends=True) if " Bytes -> Algo " in l)
        self.edit("pilot/rank0.nccl.log", r".* Bytes -> Algo .*\n", "")
        with open(self.dir / "pilot/rank0.nccl.log", "a", encoding="utf-8") as log:
            log.write(taken)
        failed, _ = self.failures()
        self.assertIn("tuned differs", failed)
        self.assertIn("topo-only differs", failed)

    def test_nccl_did_not_load_our_net_plugin(self):
        self.edit("pilot/rank2.nccl.log", r"Using network Pilot", "Using network Socket")
        failed, _ = self.failures()
        self.assertEqual(failed, ["pilot network"])

    def test_a_warn_from_our_library(self):
        with open(self.dir / "tuned/rank3.nccl.log", "a", encoding="utf-8") as log:
            log.write("vm:1:2 [0] NCCL WARN NET/Pilot: send to 127.0.0.1:1: peer closed the "
                      "connection\n")
        failed, out = self.failures()
        self.assertEqual(failed, ["tuned warnings"])
        self.assertIn("1 WARN from us, first: NET/Pilot: send to", out)

    def test_too_few_bytes_through_our_transport(self):
        self.edit("pilot/rank1.nccl.log", r"closed: (\d+) messages, \d+ bytes",
                  r"closed: \1 messages, 1000 bytes")
        failed, _ = self.failures()
        self.assertEqual(failed, ["pilot transport"])

    def test_our_transport_in_topology_only_mode(self):
        with open(self.dir / "topo-only/rank0.nccl.log", "a", encoding="utf-8") as log:
            log.write("vm:1:2 [0] NCCL INFO NET/Pilot: send to 127.0.0.1:1 closed: 1 messages, "
                      "8 bytes over 2 data stream(s)\n")
        failed, _ = self.failures()
        self.assertEqual(failed, ["topo-only transport"])

    def test_nccl_read_another_topology_file(self):
        self.edit("tuned/rank1.nccl.log", r"NCCL_TOPO_FILE set by environment to /proc/self/fd/\d+",
                  "NCCL_TOPO_FILE set by environment to /etc/topo.xml")
        failed, _ = self.failures()
        self.assertEqual(failed, ["tuned topology"])

    def test_nccl_s_topology_lacks_our_synthetic_switch(self):
        self.edit("pilot/nccl-topo-dump.xml", r"ffff:ff:01\.0", "0000:00:01.0")
        failed, out = self.failures()
        self.assertEqual(failed, ["pilot topology"])
        self.assertIn("missing from NCCL's dump ['ffff:ff:01.0']", out)

    def test_a_wrong_result(self):
        self.edit("baseline/rank2.json", r'"wrong": null', '"wrong": "1 wrong element(s)"', count=1)
        failed, _ = self.failures()
        self.assertEqual(failed, ["baseline results"])

    def test_ranks_that_share_a_host(self):
        self.edit("baseline/rank0.nccl.log", r"nNodes 4 localRanks 1", "nNodes 1 localRanks 4")
        failed, _ = self.failures()
        self.assertEqual(failed, ["baseline separate-hosts"])

    def test_a_rank_that_did_not_exit_cleanly(self):
        self.edit("tuned/exit-codes", r"rank 3 0", "rank 3 124")
        failed, out = self.failures()
        self.assertEqual(failed, ["tuned shutdown"])
        self.assertIn("rank 3 exit 124", out)

    def test_the_table_skipped_lines(self):
        self.edit("tuned/rank0.nccl.log", r"\(0 lines skipped\)", "(2 lines skipped)")
        failed, _ = self.failures()
        self.assertEqual(failed, ["tuned tuner"])

    def log_digests(self, digests):
        """The loaded line as this build writes it, with digests[r] on rank r (both phases)."""
        for phase in ("tuned", "topo-only"):
            for r, digest in enumerate(digests):
                self.edit(f"{phase}/rank{r}.nccl.log", r"\(0 lines skipped\)",
                          f"(sha256 {digest}, 0 lines skipped)")

    def test_every_rank_read_the_same_table(self):
        self.log_digests(["0123456789abcdef"] * 4)
        failed, out = self.failures()
        self.assertEqual(failed, [])
        self.assertIn("0 lines skipped, sha256 0123456789abcdef, on every rank", out)

    def test_a_rank_that_read_another_table(self):
        self.log_digests(["0123456789abcdef"] * 3 + ["fedcba9876543210"])
        failed, out = self.failures()
        self.assertEqual(failed, ["topo-only tuner", "tuned tuner"])
        self.assertIn("fedcba9876543210", out)

    def test_a_table_other_than_the_pinned_one(self):
        self.log_digests(["0123456789abcdef"] * 4)
        self.edit("run.json", r'"nccl": "2.28.9",', '"nccl": "2.28.9", "table_sha256": "00000000deadbeef",')
        failed, _ = self.failures()
        self.assertEqual(failed, ["topo-only tuner", "tuned tuner"])

    def log_facts(self, versions):
        """The tuner's facts line on rank r: fabric ethernet and NCCL versions[r] (a version, and
        where it came from)."""
        for phase in ("tuned", "topo-only"):
            for r, (version, source) in enumerate(versions):
                with open(self.dir / phase / f"rank{r}.nccl.log", "a", encoding="utf-8") as log:
                    log.write(f"vm:1:1 [0] NCCL INFO TUNER/Pilot: matching fabric ethernet "
                              f"(NCCL_IB_DISABLE=1: NCCL's IB transport is off), NCCL {version} "
                              f"({source}): fabric= on 0 rules (0 hold), nccl= on 0 rules "
                              "(0 hold)\n")

    def test_the_tuner_read_the_running_nccl_on_every_rank(self):
        self.log_facts([("2.28.9", "ncclGetVersion in /opt/libnccl.so.2 (the caller of init)")] * 4)
        failed, out = self.failures()
        self.assertEqual(failed, [])
        self.assertIn("every rank matched fabric ethernet (NCCL_IB_DISABLE=1", out)
        self.assertIn("35 passed, 0 failed\n", out)  # the 2 facts checks pass, none skips

    def test_a_rank_that_only_inferred_the_version(self):
        good = ("2.28.9", "ncclGetVersion in the global scope")
        self.log_facts([good, ("2.28.0-2.29.99", "no ncclGetVersion ...; tuner ABI v5 implies it"),
                        good, good])
        failed, out = self.failures()
        self.assertEqual(failed, ["topo-only facts", "tuned facts"])
        self.assertIn("rank 1: fabric ethernet, NCCL 2.28.0-2.29.99", out)


RE_TUNING = re.compile(
    r"NCCL INFO (\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")
NCCL_NAMES = {"allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter"}


def synthesize_metrics_phase(root):
    """A "metrics" phase for these tests, built from the recorded "tuned" phase: NCCL's logs of
    that phase plus the lines a profiler load adds, and the files our built profiler writes when
    the fake NCCL (tests/profiler/replay.cc) replays each rank's collectives with NCCL's recorded
    decisions and a kernel time of half the recorded wall time per iteration. Not a GPU recording:
    it shows the checks pass on files the library really writes and fail on broken ones."""
    run_json = root / "run.json"
    run_info = json.loads(run_json.read_text(encoding="utf-8"))
    ranks = run_info["ranks"]
    shutil.copytree(root / "tuned", root / "metrics")
    log0 = (root / "metrics" / "rank0.nccl.log").read_text(encoding="utf-8")
    decisions = {}
    for func, nbytes, algo, proto, lo, hi in RE_TUNING.findall(log0):
        decisions.setdefault((func, int(nbytes)), (algo, proto, int(hi) - int(lo) + 1))
    for rank in range(ranks):
        with open(root / "metrics" / f"rank{rank}.nccl.log", "a", encoding="utf-8") as log:
            log.write("h:1:1 [0] NCCL INFO PROFILER/Plugin: Loaded Pilot (v5)\n"
                      "h:1:1 [0] NCCL INFO PROFILER/Pilot: measuring collectives (files in "
                      "metrics, every 5 s)\n")
        result_path = root / "metrics" / f"rank{rank}.json"
        result = json.loads(result_path.read_text())
        ops = result["ops"]
        lines = [f"comm 0x7e57 world {ranks} {ranks}"]
        for op in ops:
            func = NCCL_NAMES[op["coll"]]
            per_rank = op["bytes"] if op["coll"] == "allreduce" else op["bytes"] // ranks
            algo, proto, channels = decisions[(func, per_rank)]
            us = op["ms_per_iter"] * 1000 / 2
            lines.append(f"coll 0x7e57 {func} {per_rank // 4} ncclFloat32 {algo} {proto} "
                         f"{channels} {op['iters']} {us}")
        # rank.py's point-to-point step (PILOT_GPU_P2P_BYTES=262144): an all-to-all as a group
        # of Send/Recv with every peer, and a ring exchange, each 0.4 ms per iteration.
        iters = ops[0]["iters"]
        result["p2p_ops"] = [
            {"coll": "alltoall", "bytes": 262144, "iters": iters, "wrong": None,
             "ms_per_iter": 0.8},
            {"coll": "sendrecv", "bytes": 524288, "iters": iters, "wrong": None,
             "ms_per_iter": 0.8}]
        # rank.py's churn step (PILOT_GPU_CHURN): a weight-sync group rebuilt 5 times, each
        # broadcasting 1 MiB `iters` times (here all finalized at the replay's end).
        result["churn"] = {"groups": 5, "broadcasts": 5 * iters, "bytes": 1 << 20,
                           "wrong": None}
        result_path.write_text(json.dumps(result, indent=1), encoding="utf-8")
        lines += [f"alltoall 0x7e57 262144 2 {iters} 400",
                  f"p2p 0x7e57 Send 524288 1 2 {iters} 400",
                  f"p2p 0x7e57 Recv 524288 -1 2 {iters} 400"]
        for group in range(5):
            lines += [f"comm 0x5{group:03x} weight_sync {ranks} {ranks}",
                      f"coll 0x5{group:03x} Broadcast {(1 << 20) // 4} ncclFloat32 RING SIMPLE 2 "
                      f"{iters} 100"]
        scenario = root / "metrics" / f"rank{rank}.scenario"
        scenario.write_text("\n".join(lines) + "\n", encoding="utf-8")
        env = dict(os.environ, NCCL_PILOT_METRICS_DIR=str(root / "metrics" / "metrics"),
                   NCCL_PILOT_TUNER_TABLE=str(root / "validation.table"))
        done = subprocess.run([str(BUILD / "bin" / "pilot_profiler_replay"), "--module",
                               str(BUILD / "lib" / "libnccl-profiler-pilot.so"), "--scenario",
                               str(scenario), "--rank", str(rank), "--jitter", "0"],
                              env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise AssertionError("replay failed: " + done.stdout + done.stderr)
    run_info["phases"] += ",metrics"
    run_json.write_text(json.dumps(run_info, indent=1), encoding="utf-8")


class MetricsPhase(RecordedRunCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        synthesize_metrics_phase(cls.good)

    def summary_of(self, rank):
        for path in (self.dir / "metrics" / "metrics").glob("*.jsonl"):
            if f'"kind":"communicator","comm":"0x7e57","comm_name":"world","rank":{rank},' in \
                    path.read_text(encoding="utf-8"):
                return path.relative_to(self.dir)
        raise AssertionError(f"no summary of rank {rank}")

    def test_the_metrics_phase_passes_on_files_the_library_wrote(self):
        failed, out = self.failures()
        self.assertEqual(failed, [])
        for check in ("profiler", "metrics-files", "metrics-count", "metrics-time",
                      "metrics-rule", "metrics-p2p", "metrics-churn"):
            self.assertRegex(out, rf"PASS metrics +{check} ")
        self.assertIn("all 12 (rank, operation) measured once per iteration within its wall "
                      "time; the all-to-all as a group of Send/Recv", out)
        self.assertIn("all 72 (rank, collective, size) measured exactly 3 times", out)
        self.assertIn("72 (rank, collective, size) decisions credited", out)

    def test_nccl_did_not_load_our_profiler(self):
        self.edit("metrics/rank1.nccl.log", r".*PROFILER/Plugin: Loaded Pilot.*\n", "")
        failed, _ = self.failures()
        self.assertEqual(failed, ["metrics profiler"])

    def test_a_collective_missing_from_a_summary(self):
        self.edit(self.summary_of(2), r'\{"kind":"collective"[^\n]*"collective":"AllGather",'
                  r'"message_size":"256-512B"[^\n]*\n', "")
        failed, out = self.failures()
        self.assertIn("metrics metrics-count", failed)
        self.assertIn("rank 2 allgather 1024: 0 measured, 3 run", out)

    def test_a_kernel_longer_than_its_iteration(self):
        self.edit(self.summary_of(0), r'("collective":"ReduceScatter","message_size":"1-2MB"'
                  r'[^\n]*"time_us":\{"sum":)[0-9.e+]+', r"\g<1>1e9", count=1)
        failed, out = self.failures()
        self.assertEqual(failed, ["metrics metrics-time"])
        self.assertIn("rank 0 reducescatter 4194304: kernel", out)

    def test_a_decision_not_credited_to_the_table(self):
        self.edit(self.summary_of(3), r'"decision":"rule 2 \(line 8\)"', '"decision":"NCCL"',
                  count=1)
        failed, out = self.failures()
        self.assertEqual(failed, ["metrics metrics-rule"])
        self.assertIn("['NCCL'], table line ['(line 8)']", out)

    def test_an_all_to_all_not_measured_as_one(self):
        self.edit(self.summary_of(1), r'\{"kind":"collective"[^\n]*"collective":"AlltoAll"'
                  r'[^\n]*\n', "")
        failed, out = self.failures()
        self.assertEqual(failed, ["metrics metrics-p2p"])
        self.assertIn("rank 1 alltoall AlltoAll 262144: 0 measured, 3 run", out)

    def test_a_ring_exchange_with_a_recv_missing(self):
        self.edit(self.summary_of(3), r'\{"kind":"p2p"[^\n]*"p2p_operation":"Recv",'
                  r'"message_size":"512KB-1MB"[^\n]*\n', "")
        failed, out = self.failures()
        self.assertEqual(failed, ["metrics metrics-p2p"])
        self.assertIn("rank 3 sendrecv Recv 524288: 0 measured, 3 run", out)

    def test_a_rebuilt_group_that_lost_broadcasts(self):
        self.edit(self.summary_of(2), r'("collective":"Broadcast","message_size":"1-2MB"'
                  r'[^\n]*?"calls":)\d+', r"\g<1>7", count=1)
        failed, out = self.failures()
        self.assertEqual(failed, ["metrics metrics-churn"])
        self.assertIn("rank 2: 5 finished communicators in 1 record(s) with 7 Broadcasts; "
                      "rank.py made 5 with 15", out)

    def test_a_slot_left_in_use(self):
        prom = (self.dir / self.summary_of(0)).with_suffix(".prom")
        self.edit(prom.relative_to(self.dir), r"(nccl_pilot_profiler_slots_in_use\{[^}]*\}) 0",
                  r"\g<1> 3")
        failed, out = self.failures()
        self.assertEqual(failed, ["metrics metrics-churn"])
        self.assertIn("rank 0: slots in use after the last finalize: 3", out)

    def test_a_rank_that_wrote_no_files(self):
        summary = self.dir / self.summary_of(1)
        summary.with_suffix(".prom").unlink()
        summary.unlink()
        failed, _ = self.failures()
        self.assertIn("metrics metrics-files", failed)
        self.assertIn("metrics metrics-count", failed)


class OlderNcclWording(RecordedRunCase):
    """NCCL 2.21-2.27 print the same facts in other words (read in their sources)."""

    def rewrite_decisions(self, phase, fmt):
        algos = ["TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"]
        protos = ["LL", "LL128", "SIMPLE"]

        def old_line(m):
            func, nbytes = m.group(1), int(m.group(2))
            total = nbytes * (4 if func != "AllReduce" else 1)  # 2.23 logs the tuner's bytes
            return fmt.format(func=func, bytes=total, algo=algos.index(m.group(3)),
                              proto=protos.index(m.group(4)))

        path = self.dir / phase / "rank0.nccl.log"
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo..Hi\}=\{\d+..\d+\}",
                      old_line, text)
        path.write_text(text, encoding="utf-8")

    def test_nccl_2_23_decisions_are_checked_without_channels(self):
        for phase in ("pilot", "tuned", "topo-only"):
            self.rewrite_decisions(phase, "{func}: {bytes} Bytes -> Algo {algo} proto {proto} "
                                   "time 12.500000")
            for r in range(4):
                self.edit(f"{phase}/rank{r}.nccl.log", r"TUNER/Plugin: Using Pilot \(v5\)",
                          "TUNER/Plugin: Using tuner plugin Pilot")
        failed, out = self.failures()
        self.assertEqual(failed, [])
        self.assertIn("are the table's (algorithm, protocol; this NCCL logs no channel count)",
                      out)
        self.assertIn("NCCL uses tuner Pilot (this NCCL logs no ABI version)", out)

    def test_nccl_2_21_decisions_are_skipped_not_passed(self):
        self.rewrite_decisions("tuned", "{bytes} Bytes -> Algo {algo} proto {proto} time 1.0")
        failed, out = self.failures()
        self.assertEqual(failed, [])
        self.assertRegex(out, r"SKIP tuned +decisions +this NCCL \(2.21/2.22\)")
        self.assertIn(", 3 skipped", out)


class ExplorePhase(unittest.TestCase):
    """explore_check on evidence written here: NCCL logs and summaries of two ranks."""

    LINE = ("host:1:1 [0] NCCL INFO AllReduce: {b} Bytes -> Algo {a} proto {p} "
            "channel{{Lo..Hi}}={{0..1}}\n")
    INIT = ("host:1:1 [0] NCCL INFO TUNER/Pilot: communicator 2 ranks on 2 nodes: exploring "
            "within 25% of NCCL's predicted time, the cheap calls first (an alternative is "
            "charged 3x NCCL's cost of it); schedule digest 1a2b3c4d (the budget and table "
            "none: ...)\n")

    def phase(self, root, cells_per_rank, summaries):
        import types
        metrics = root / "metrics"
        metrics.mkdir(parents=True)
        for r, lines in enumerate(summaries):
            (metrics / f"nccl_pilot_h_{r}.jsonl").write_text(
                "".join(json.dumps(l) + "\n" for l in lines), encoding="utf-8")
        logs = [self.INIT + "".join(self.LINE.format(b=b, a=a, p=p) for b, a, p in cells)
                for cells in cells_per_rank]
        ph = types.SimpleNamespace(name="explore", dir=root, ranks=len(logs), logs=logs)
        ph.all_logs = lambda regex: [regex.findall(log) for log in ph.logs]
        return ph

    def verdict(self, cells_per_rank, summaries):
        sys.path.insert(0, str(HERE))
        import check
        import explore_check
        with tempfile.TemporaryDirectory() as tmp:
            report = check.Report()
            explore_check.check_exploration(
                report, self.phase(pathlib.Path(tmp), cells_per_rank, summaries),
                check.RE_DECISION)
        return report.checks[-1]

    @staticmethod
    def summary(calls):
        return [{"kind": "calibration", "collective": "AllReduce", "bytes": 1024, "algo": a,
                 "proto": p, "calls": n} for (a, p), n in calls.items()]

    def test_alike_ranks_that_explored_pass(self):
        cells = [(1024, "RING", "LL"), (1024, "TREE", "LL"), (1024, "RING", "LL")]
        s = self.summary({("RING", "LL"): 2, ("TREE", "LL"): 1})
        self.assertEqual(self.verdict([cells, cells], [s, s])["status"], "PASS")

    def test_ranks_that_decided_apart_fail(self):
        a = [(1024, "RING", "LL"), (1024, "TREE", "LL")]
        b = [(1024, "RING", "LL"), (1024, "RING", "LL")]
        s = self.summary({("RING", "LL"): 1, ("TREE", "LL"): 1})
        v = self.verdict([a, b], [s, s])
        self.assertEqual(v["status"], "FAIL")
        self.assertIn("differ from rank 0's on ranks [1]", v["evidence"])

    def test_no_exploration_or_summaries_that_differ_fail(self):
        same = [(1024, "RING", "LL"), (1024, "RING", "LL")]
        s = self.summary({("RING", "LL"): 2})
        self.assertIn("no (collective, size) ran more than one",
                      self.verdict([same, same], [s, s])["evidence"])
        cells = [(1024, "RING", "LL"), (1024, "TREE", "LL")]
        t = self.summary({("RING", "LL"): 1, ("TREE", "LL"): 1})
        self.assertIn("calibration lines differ",
                      self.verdict([cells, cells], [t, self.summary({("RING", "LL"): 2})])["evidence"])


HANG_STALL_S = 3  # NCCL_PILOT_STALL_S, as run.sh's hang phase
HANG_PROBE_S = 6  # the probe's time into each pause (run.sh: 8 s into the late one, 6 s stopped)
# How long the fake job holds each pause: both probes (each `hang` twice, each watching the
# writers up to 2 s) within it.
HANG_HOLD_S = 16
# hang_rank.py's plan: all-reduces #0-9, the late #10, #11-20, the stopped #21 (then 5 more).
HANG_LATE_SEQ, HANG_STOP_SEQ = 10, 21


def now_ms():
    return int(time.time() * 1000)


def children(pid):
    """[(pid, state)] of the processes whose parent is `pid` (/proc/PID/stat)."""
    kids = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            kids.append((int(stat.parent.name), fields[0]))
    return kids


def poll(what, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"{what.__name__}: not within {seconds} s")


def synthesize_hang_phase(root):
    """A "hang" phase for these tests, not a GPU recording. NCCL's part is the recorded baseline
    phase (NCCL's Socket transport, as the hang phase runs it) with the lines our profiler adds:
    its load lines and each waiting rank's stall WARN, written here in the format of
    metrics/src/runtime.cc. The rest is real: the fake NCCL's hang job (pilot_profiler_hang_job:
    a rank process each, loading the built profiler) stuck both ways with NCCL_PILOT_STALL_S=3 (a
    rank that has not launched AllReduce #10, and one SIGSTOPped in AllReduce #21, its 22nd,
    whose files are the phase's metrics/), the built `nccl-pilot hang` run during each pause as
    run.sh's driver runs it, and driver.log with what was seen when: the stopped process found
    stopped in /proc, the never-launching one's pid from its state file. The ranks' results are
    hang_rank.py's for that plan, every all-reduce exact."""
    run_json = root / "run.json"
    run_info = json.loads(run_json.read_text(encoding="utf-8"))
    ranks, target = run_info["ranks"], 1
    phase = root / "hang"
    phase.mkdir()
    shutil.copy(root / "baseline" / "exit-codes", phase / "exit-codes")
    late_dir = root.parent / f"{root.name}-late-job"
    job, module = BUILD / "bin" / "pilot_profiler_hang_job", BUILD / "lib" / \
        "libnccl-profiler-pilot.so"
    started = {}
    for name, scenario, calls, metrics in (("late", "never-launch", HANG_LATE_SEQ, late_dir),
                                           ("stop", "sigstop", HANG_STOP_SEQ, phase / "metrics")):
        metrics.mkdir(parents=True)
        env = dict(os.environ, NCCL_PILOT_METRICS_DIR=str(metrics),
                   NCCL_PILOT_STALL_S=str(HANG_STALL_S))
        started[name] = (subprocess.Popen(
            [str(job), "--module", str(module), "--scenario", scenario, str(target), "--ranks",
             str(ranks), "--calls", str(calls), "--hold", str(HANG_HOLD_S)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), metrics)
    log = [f"{now_ms()} stall_s {HANG_STALL_S}"]
    stuck = {}
    for name, (process, _) in started.items():
        line = process.stdout.readline()
        if "stuck" not in line:
            raise AssertionError(f"the {name} job never got stuck: {line}"
                                 + process.stdout.read())
        stuck[name] = now_ms()
    process = started["stop"][0]

    def stopped_child():
        return [pid for pid, state in children(process.pid) if state == "T"]

    stopped = poll(stopped_child, 5)[0]
    log.append(f"{stuck['stop']} stop {stopped}")

    def late_rank_pid():
        for path in late_dir.glob("*.state.json"):
            state = json.loads(path.read_text(encoding="utf-8"))
            if any(c["rank"] == target for c in state["comms"]):
                return state["pid"]
        return None

    for name in ("late", "stop"):
        left = stuck[name] + HANG_PROBE_S * 1000 - now_ms()
        time.sleep(max(0, left) / 1000)
        if name == "late":
            log.append(f"{stuck['late']} late {poll(late_rank_pid, 2)}")
        metrics = started[name][1]
        log.append(f"{now_ms()} probe {name} begin")
        done = run(BUILD / "bin" / "nccl-pilot", "hang", metrics, "--json")
        log.append(f"{now_ms()} probe {name} end {done.returncode}")
        (phase / f"hang-{name}.json").write_text(done.stdout, encoding="utf-8")
        (phase / f"hang-{name}.err").write_text(done.stderr, encoding="utf-8")
        text = run(BUILD / "bin" / "nccl-pilot", "hang", metrics)
        (phase / f"hang-{name}.txt").write_text(text.stdout + text.stderr, encoding="utf-8")

    def continued():
        return stopped not in stopped_child()

    poll(continued, HANG_HOLD_S + 10)
    cont = now_ms()
    log.append(f"{cont} cont {stopped}")
    ended = {}
    for name, (process, _) in started.items():
        out = process.communicate(timeout=60)[0]
        if process.returncode != 0:
            raise AssertionError(f"the {name} job failed: {out}")
        ended[name] = now_ms()
    log.sort(key=lambda line: int(line.split()[0]))
    (phase / "driver.log").write_text("\n".join(log) + "\n", encoding="utf-8")

    summaries, _ = metrics_check.read_summaries(phase / "metrics")
    late_s = (ended["late"] - stuck["late"]) / 1000
    waited = {HANG_LATE_SEQ: late_s, HANG_STOP_SEQ: (cont - stuck["stop"]) / 1000}
    for rank in range(ranks):
        result = {"rank": rank, "world": ranks, "pid": summaries[rank]["comms"][0]["pid"],
                  "bytes": 4 << 20,
                  "plan": {"target": target, "late_seq": HANG_LATE_SEQ,
                           "stop_seq": HANG_STOP_SEQ, "late_s": late_s,
                           "all_reduces": HANG_STOP_SEQ + 1},
                  "all_reduces": [{"seq": seq, "wrong": None, "s": waited.get(seq, 0.001)}
                                  for seq in range(HANG_STOP_SEQ + 1)],
                  "errors": [], "finished": True}
        if rank == target:
            result["slept_ms"] = [stuck["late"], ended["late"]]
        (phase / f"rank{rank}.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
        text = (root / "baseline" / f"rank{rank}.nccl.log").read_text(encoding="utf-8")
        text += ("h:1:1 [0] NCCL INFO PROFILER/Plugin: Loaded Pilot (v5)\n"
                 "h:1:1 [0] NCCL INFO PROFILER/Pilot: measuring collectives (files in metrics, "
                 "every 30 s)\n")
        if rank != target:
            for seq in (HANG_LATE_SEQ, HANG_STOP_SEQ):
                text += (f"h:1:1 [0] NCCL WARN PROFILER/Pilot: stall: comm 0x4a4e6 (dp) rank "
                         f"{rank} of {ranks}: AllReduce #{seq} (4M) launched 3 s ago, nothing "
                         "completed on this communicator for 3 s; 2 of 2 kernel channels still "
                         "running (peers that never joined, or the network). Which rank: "
                         "nccl-pilot hang metrics\n")
        (phase / f"rank{rank}.nccl.log").write_text(text, encoding="utf-8")
    run_info["phases"] += ",hang"
    run_json.write_text(json.dumps(run_info, indent=1), encoding="utf-8")


class HangPhase(RecordedRunCase):
    """hang_check on a synthesized hang phase (synthesize_hang_phase: the fake NCCL's job stuck
    both ways and the built nccl-pilot hang run during each pause; NCCL's lines from the recorded
    baseline phase)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        synthesize_hang_phase(cls.good)

    def edit_json(self, relative, change):
        path = self.dir / relative
        obj = json.loads(path.read_text(encoding="utf-8"))
        change(obj)
        path.write_text(json.dumps(obj), encoding="utf-8")

    def edit_event(self, event, change):
        """driver.log's line `event` (its words after the time) with its time changed."""
        path = self.dir / "hang" / "driver.log"
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            ms, rest = line.split(" ", 1)
            if rest.startswith(event):
                lines[i] = f"{change(int(ms))} {rest}"
                break
        else:
            raise AssertionError(f"no {event} in driver.log")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def test_the_hang_phase_passes_on_what_the_library_and_nccl_pilot_wrote(self):
        failed, out = self.failures()
        self.assertEqual(failed, [])
        for check in ("shutdown", "separate-hosts", "network", "profiler", "hang-late",
                      "hang-stopped", "hang-results", "hang-warn", "warnings"):
            self.assertRegex(out, rf"PASS hang +{check} ")
        self.assertRegex(out, r"PASS hang +hang-late +\d+\.\d s into the \d+\.\d s pause "
                         r"nccl-pilot hang exited 1: comm 0x4a4e6 AllReduce #10 stalled "
                         r"\d+\.\d s, not_launched \[1\] \(pid \d+\), stuck \[0, 2, 3\], "
                         r"suspects \[1\]: rank 1 never launched")
        self.assertRegex(out, r"PASS hang +hang-stopped .*AllReduce #21 stalled .*frozen \[1\]")
        self.assertIn("all 22 all-reduces exact on every rank, the two paused ones included",
                      out)
        self.assertIn("each of the 3 waiting ranks logged one stall WARN per pause (6 in all)",
                      out)

    def test_a_stopped_rank_taken_for_one_that_never_launched(self):
        def change(verdict):
            stall = verdict["stalls"][0]
            stall["frozen"], stall["not_launched"] = [], [1]
        self.edit_json("hang/hang-stop.json", change)
        failed, out = self.failures()
        self.assertEqual(failed, ["hang hang-stopped"])
        self.assertIn("not_launched [1], want []; frozen [], want [1]", out)

    def test_a_verdict_that_suspects_everyone(self):
        self.edit_json("hang/hang-late.json",
                       lambda v: v["stalls"][0].update(suspects=[0, 1, 2, 3]))
        failed, out = self.failures()
        self.assertEqual(failed, ["hang hang-late"])
        self.assertIn("suspects [0, 1, 2, 3], want [1]", out)

    def test_a_probe_that_saw_no_stall(self):
        self.edit_json("hang/hang-late.json", lambda v: v.update(stalls=[]))
        self.edit(pathlib.Path("hang/driver.log"), r"probe late end 1", "probe late end 0")
        failed, out = self.failures()
        self.assertEqual(failed, ["hang hang-late"])
        self.assertIn("nccl-pilot hang exited 0, not 1 (stalled); hang-late.json: 0 stalled",
                      out)

    def test_the_wrong_all_reduce(self):
        self.edit_json("hang/hang-stop.json", lambda v: v["stalls"][0].update(seq=20))
        failed, out = self.failures()
        self.assertEqual(failed, ["hang hang-stopped"])
        self.assertIn("seq 20, want 21", out)

    def test_another_process_than_the_stopped_one(self):
        self.edit(pathlib.Path("hang/driver.log"), r"stop (\d+)", r"stop 1\1")
        failed, out = self.failures()
        self.assertEqual(failed, ["hang hang-stopped"])
        self.assertRegex(out, r"rank 1's row is pid (\d+), the target was pid 1\1")

    def test_a_probe_after_the_pause(self):
        log = (self.dir / "hang" / "driver.log").read_text(encoding="utf-8").splitlines()
        probe_end = next(int(line.split()[0]) for line in log if " probe stop end " in line)
        self.edit_event("cont", lambda ms: probe_end - 500)  # continued before the probe ended
        failed, out = self.failures()
        self.assertEqual(failed, ["hang hang-stopped"])
        self.assertRegex(out, r"the probe ran \d+\.\d to \d+\.\d s into a pause of \d+\.\d s "
                         r"\(want from 3 s, the stall threshold, to its end\)")

    def test_a_probe_before_the_stall_threshold(self):
        self.edit_json("hang/rank1.json", lambda r: r.update(
            slept_ms=[r["slept_ms"][0] + 4000, r["slept_ms"][1]]))
        failed, _ = self.failures()
        self.assertEqual(failed, ["hang hang-late"])

    def test_a_driver_that_gave_up(self):
        (self.dir / "hang" / "hang-stop.json").unlink()
        path = self.dir / "hang" / "driver.log"
        lines = [l for l in path.read_text(encoding="utf-8").splitlines()
                 if " probe stop " not in l and " cont " not in l]
        lines.append(f"{lines[-1].split()[0]} gave up: could not stop 4242")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        failed, out = self.failures()
        self.assertEqual(failed, ["hang hang-stopped"])
        self.assertIn("the driver ran no probe of the stop pause; gave up: could not stop", out)

    def test_a_wrong_result_after_the_pause(self):
        self.edit_json("hang/rank2.json",
                       lambda r: r["all_reduces"][21].update(wrong="1 wrong element(s)"))
        failed, out = self.failures()
        self.assertEqual(failed, ["hang hang-results"])
        self.assertIn("rank 2 all-reduce #21: 1 wrong element(s)", out)

    def test_an_all_reduce_the_profiler_did_not_count(self):
        summary = next((self.dir / "hang" / "metrics").glob("*.jsonl"))
        self.edit(summary.relative_to(self.dir), r'("collective":"AllReduce"[^\n]*?"calls":)22',
                  r"\g<1>21")
        failed, out = self.failures()
        self.assertEqual(failed, ["hang hang-results"])
        self.assertRegex(out, r"rank \d: the profiler counted 21 AllReduce of 4194304 bytes, "
                         r"it ran 22")

    def test_a_waiting_rank_that_did_not_warn(self):
        self.edit("hang/rank2.nccl.log",
                  r".*stall: comm \S+ \(dp\) rank 2 of 4: AllReduce #21 .*\n", "")
        failed, out = self.failures()
        self.assertEqual(failed, ["hang hang-warn"])
        self.assertIn("rank 2: 0 stall WARNs of AllReduce #21, want 1", out)

    def test_another_warn_of_ours(self):
        with open(self.dir / "hang" / "rank0.nccl.log", "a", encoding="utf-8") as log:
            log.write("h:1:1 [0] NCCL WARN PROFILER/Pilot: cannot write metrics/x.state.json\n")
        failed, out = self.failures()
        self.assertEqual(failed, ["hang warnings"])
        self.assertIn("1 WARN from us, first: PROFILER/Pilot: cannot write", out)


def synthesize_provenance_phase(root):
    """A "provenance" phase for these tests, not a GPU recording: NCCL's logs are the recorded
    pilot phase's; each rank is a process of the fake NCCL (tests/provenance: a libnccl.so.2 of
    2.28.9, the recorded run's version, copied under site-packages/nvidia/nccl/lib as PyTorch's
    wheel places it) loading the built net, tuner and profiler each from its own library with
    run.sh's settings, so the records and the lines our library logs are real. Each rank's
    result says what rank.py would: its pid, torch's NCCL version and the libnccl it maps."""
    run_json = root / "run.json"
    run_info = json.loads(run_json.read_text(encoding="utf-8"))
    phase = root / "provenance"
    shutil.copytree(root / "pilot", phase)
    wheel = phase / "venv" / "lib" / "site-packages" / "nvidia" / "nccl" / "lib"
    wheel.mkdir(parents=True)
    shutil.copy(BUILD / "tests" / "provenance" / "nccl-2.28.9" / "libnccl.so.2", wheel)
    (phase / "empty-sysfs").mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith("NCCL_") and
            k not in ("RANK", "LOCAL_RANK")}
    # The fake NCCL dlcloses the net plugin at destroy, as NCCL does: its process-lifetime state
    # is then unreachable, which LeakSanitizer reports under the ASan preset
    # (tests/provenance/job_test.sh says the same); these records are what is tested here.
    base["ASAN_OPTIONS"] = ":".join(filter(None, [base.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    lib = BUILD / "lib"
    for rank in range(run_info["ranks"]):
        env = dict(base, NCCL_DEBUG="INFO", NCCL_SOCKET_IFNAME="lo", NCCL_IB_DISABLE="1",
                   NCCL_HOSTID=f"pilot-validation-host-{rank}", NCCL_PILOT_TRANSPORT="none",
                   NCCL_PILOT_METRICS="1", NCCL_PILOT_METRICS_DIR=str(phase / "metrics"),
                   RANK=str(rank), LOCAL_RANK="0", NCCL_PILOT_SYSFS_ROOT=str(phase / "empty-sysfs"),
                   NCCL_PILOT_HWLOC_XML=str(HERE.parent / "topology" / "data" / "hwloc" /
                                            "baremetal-2gpu-2nic-switch.xml"))
        done = run_env(env, BUILD / "bin" / "pilot_provenance_rank", "--nccl",
                       wheel / "libnccl.so.2", "--net", lib / "libnccl-net-pilot.so", "--tuner",
                       lib / "libnccl-tuner-pilot.so", "--profiler",
                       lib / "libnccl-profiler-pilot.so", "--rank", rank, "--nranks",
                       run_info["ranks"])
        pid = re.search(r"done \(pid (\d+)\)", done.stdout)
        if done.returncode != 0 or not pid:
            raise AssertionError("pilot_provenance_rank failed: " + done.stdout + done.stderr)
        with open(phase / f"rank{rank}.nccl.log", "a", encoding="utf-8") as log:
            log.writelines(line + "\n" for line in done.stderr.splitlines() if " NCCL " in line)
        result_path = phase / f"rank{rank}.json"
        result = json.loads(result_path.read_text(encoding="utf-8"))
        result.update(pid=int(pid.group(1)), nccl=run_info["nccl"],
                      libnccl=[str(wheel / "libnccl.so.2")])
        result_path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    run_info["phases"] += ",provenance"
    run_json.write_text(json.dumps(run_info, indent=1), encoding="utf-8")


def run_env(env, *args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, check=False,
                          env=env)


class ProvenancePhase(RecordedRunCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        synthesize_provenance_phase(cls.good)

    def edit_records(self, old, new):
        for path in (self.dir / "provenance" / "metrics").glob("*.provenance.json"):
            self.edit(path.relative_to(self.dir), old, new)

    def edit_results(self, change):
        for path in (self.dir / "provenance").glob("rank*.json"):
            result = json.loads(path.read_text(encoding="utf-8"))
            change(result)
            path.write_text(json.dumps(result), encoding="utf-8")

    def test_the_provenance_phase_passes_on_records_the_library_wrote(self):
        failed, out = self.failures()
        self.assertEqual(failed, [])
        self.assertRegex(out, r"PASS provenance provenance +all 4 records name the libnccl each "
                         r"process maps.*site-packages/nvidia/nccl/lib/libnccl.so.2; net v11, "
                         r"tuner v5, profiler v5")
        self.assertRegex(out, r"PASS provenance own-warn +0 of 4 ranks logged one WARN from us")

    def test_a_record_of_another_version_than_torch_s(self):
        self.edit("provenance/rank2.json", r'"nccl": "2.28.9"', '"nccl": "2.28.3"')
        failed, out = self.failures()
        self.assertEqual(failed, ["provenance provenance"])
        self.assertIn("rank 2: record says NCCL '2.28.9', torch.cuda.nccl.version() '2.28.3'", out)

    def test_a_record_naming_another_libnccl(self):
        self.edit_records(r'("nccl":\{"version":"2.28.9","path":")[^"]*',
                          r"\1/usr/lib/libnccl.so.2")
        failed, out = self.failures()
        self.assertEqual(failed, ["provenance provenance"])
        self.assertIn("rank 0: record's NCCL '/usr/lib/libnccl.so.2' is not the libnccl the "
                      "process maps", out)

    def test_a_library_torch_did_not_bundle(self):
        self.edit_results(lambda r: r.update(libnccl=["/usr/lib/libnccl.so.2"]))
        self.edit_records(r'("path":")[^"]*site-packages/nvidia/nccl/lib/libnccl.so.2',
                          r"\1/usr/lib/libnccl.so.2")
        failed, out = self.failures()
        self.assertEqual(failed, ["provenance provenance"])
        self.assertIn("rank 0: /usr/lib/libnccl.so.2 is not PyTorch's bundled libnccl", out)

    def test_a_rank_without_a_record(self):
        pid = json.loads((self.dir / "provenance" / "rank3.json").read_text())["pid"]
        next((self.dir / "provenance" / "metrics").glob(f"*_{pid}.provenance.json")).unlink()
        failed, out = self.failures()
        self.assertEqual(failed, ["provenance provenance"])
        self.assertIn(f"rank 3: no record of pid {pid}", out)

    def test_a_plugin_the_record_does_not_name(self):
        self.edit_records(r'\{"kind":"tuner","abi":5,"path":"[^"]*"\}', "")
        failed, out = self.failures()
        self.assertEqual(failed, ["provenance provenance"])
        self.assertIn("tuner plugin None is not NCCL_TUNER_PLUGIN's", out)

    def test_nccl_linked_into_libtorch_is_a_skip(self):
        self.edit_results(lambda r: r.update(libnccl=[]))
        failed, out = self.failures()
        self.assertEqual(failed, [])
        self.assertRegex(out, r"SKIP provenance provenance +ranks \[0, 1, 2, 3\] map no libnccl")

    def test_two_warns_of_ours_in_one_process(self):
        with open(self.dir / "provenance" / "rank1.nccl.log", "a", encoding="utf-8") as log:
            log.write("h:1:1 [0] NCCL WARN NET/Pilot: this process: NCCL_PROTO=LL128 ...\n"
                      "h:1:1 [0] NCCL WARN TUNER/Pilot: this process: NCCL_PROTO=LL128 ...\n")
        failed, out = self.failures()
        self.assertEqual(failed, ["provenance own-warn"])
        self.assertIn("more than one WARN from us: rank 1: 2", out)


class RecordedFailure(unittest.TestCase):
    def test_the_double_free_of_nccl_2_28_9_fails_shutdown(self):
        # Recorded before the fix in plugin/net/exports.cc: every rank aborted in topology-only
        # mode when NCCL fell back from our plugin to IB.
        with tempfile.TemporaryDirectory() as tmp:
            done = run("bash", HERE / "run.sh", "--dry-run",
                       RECORDED / "h200-nccl2.28.9-topo-only-double-free", "--build", BUILD,
                       "--out", tmp, "--python", sys.executable)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertRegex(done.stdout, r"FAIL topo-only shutdown +rank 0 exit 134 "
                         r"\('free\(\): double free detected in tcache 2'\)")


if __name__ == "__main__":
    unittest.main()
