// sweep run against the fake nccl-tests (tests/calibration/fake-nccl-tests): plan -> run ->
// parse back, resuming, failures, timeouts, -J detection, the srun/mpirun commands (through
// fake launchers), dry runs and the directory lock.
#include <gtest/gtest.h>
#include <sys/file.h>

#include <fcntl.h>

#include <sstream>

#include "pilot/calibration/dataset_loader.h"
#include "pilot/calibration/labels.h"
#include "pilot/calibration/sweep_plan.h"
#include "pilot/calibration/sweep_run.h"
#include "sweep_test_support.h"

namespace pilot::calibration {
namespace {

using test::joined;
using test::mentions;
using test::rows;

/// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

PlanOptions smallPlan() {
  PlanOptions o;
  o.collectives = {"allreduce", "allgather"};
  o.configs = *parseConfigList("default,NCCL_ALGO=Ring,NCCL_PROTO=LL128");
  o.repeats = o.defaultRepeats = 2;
  o.gpusPerNode = 4;
  o.minBytes = 8;
  o.maxBytes = 1 << 20;
  o.stepFactor = 4;
  o.testsDir = PILOT_FAKE_NCCL_TESTS_DIR;
  return o;
}

/// Writes the plan into DIR/plan (with -J as the fake binary says) and returns the path.
std::string writeSmallPlan(const test::ScratchDir& dir, PlanOptions o = smallPlan()) {
  auto plan = makePlan(o);
  EXPECT_TRUE(plan.ok()) << plan.error();
  auto json = probeJsonSupport(findTestBinary(o.testsDir, "all_reduce_perf"));
  plan->options.jsonOutput = json.value_or(false);
  const std::string path = dir / "plan";
  EXPECT_TRUE(writePlan(*plan, path, false).ok());
  return path;
}

RunSummary run(const std::string& plan, RunOptions o = RunOptions()) {
  std::ostringstream log;
  o.out = &log;
  o.killGraceSeconds = 1;
  auto summary = runSweep(plan, o);
  EXPECT_TRUE(summary.ok()) << summary.error();
  return summary.ok() ? *summary : RunSummary();
}

TEST(SweepRun, FakeBinariesTakeJson) {
  EXPECT_EQ(probeJsonSupport(std::string(PILOT_FAKE_NCCL_TESTS_DIR) + "/all_reduce_perf"), true);
  ScopedEnv noJson("FAKE_NCCL_TESTS_NO_JSON", "1");
  EXPECT_EQ(probeJsonSupport(std::string(PILOT_FAKE_NCCL_TESTS_DIR) + "/all_reduce_perf"), false);
  EXPECT_FALSE(probeJsonSupport("/nonexistent/all_reduce_perf").has_value());
  EXPECT_EQ(findTestBinary(PILOT_FAKE_NCCL_TESTS_DIR, "no_such_perf"), "");
}

TEST(SweepRun, PlanRunAndParseBack) {
  test::ScratchDir dir;
  const std::string plan = writeSmallPlan(dir);
  const RunSummary s = run(plan);
  EXPECT_EQ(s.planned, 12);  // (allreduce + allgather) x 3 configurations x 2 repeats
  EXPECT_EQ(s.done, 12);
  EXPECT_EQ(s.failed, 0);
  EXPECT_FALSE(s.stopped);

  auto state = readState(plan);
  ASSERT_TRUE(state.ok());
  ASSERT_EQ(state->runs.size(), 12u);
  for (const auto& [id, r] : state->runs) {
    EXPECT_EQ(r.status, RunStatus::Done) << id << ": " << r.message;
    EXPECT_EQ(r.exitCode, 0);
    EXPECT_TRUE(r.json) << id;
    EXPECT_EQ(r.attempts, 1);
  }

  const Dataset data = loadDataset({plan}, LoadOptions());
  EXPECT_TRUE(data.problems.empty()) << joined(data.problems);
  ASSERT_EQ(data.runs.size(), 12u);
  std::map<std::string, int> perConfig;
  for (const calibration::Run& r : data.runs) {
    SCOPED_TRACE(r.source);
    EXPECT_FALSE(r.failed) << joined(r.problems);
    EXPECT_TRUE(r.problems.empty()) << joined(r.problems);
    EXPECT_EQ(r.configSource, "manifest");
    EXPECT_EQ(r.nodes, 1);
    EXPECT_EQ(r.ranks, 4);
    EXPECT_EQ(rows(r), 9u);                                // 8, 32, ..., 512K by 4
    EXPECT_NE(r.source.find(".json"), std::string::npos);  // JSON preferred over the log
    EXPECT_EQ(r.repeat, perConfig[r.collective + "/" + r.config.label]++);
  }
  EXPECT_EQ(perConfig["allreduce/default"], 2);
  EXPECT_EQ(perConfig["allreduce/ring"], 2);
  EXPECT_EQ(perConfig["allreduce/ll128"], 2);
  EXPECT_EQ(perConfig["allgather/default"], 2);
  EXPECT_EQ(perConfig["allgather/ring"], 2);
  EXPECT_EQ(perConfig["allgather/ll128"], 2);
  // Forcing changes the times (the fake's model), and repeats differ a little (its noise).
  const calibration::Run& def = data.runs[0];
  const calibration::Run& ll128 = data.runs[2];
  ASSERT_EQ(ll128.config.proto, "LL128");
  EXPECT_NE(def.samples[16].timeUs, ll128.samples[16].timeUs);
  const calibration::Run& def1 = data.runs[6];
  ASSERT_EQ(def1.config.label, "default");
  ASSERT_EQ(def1.repeat, 1);
  EXPECT_NE(def.samples[0].timeUs, def1.samples[0].timeUs);
  EXPECT_NEAR(def.samples[0].timeUs, def1.samples[0].timeUs, 0.1 * def.samples[0].timeUs);
}

// A count no int holds (UBSan under tests/fuzz/sweep_manifest_fuzz): an error naming the file.
TEST(SweepRun, StateCountsPastTheirRangeAreErrors) {
  test::ScratchDir dir;
  std::ofstream(dir / "state.json")
      << R"({"runs": {"0001": {"status": "done", "exit_code": 1e300}}})";
  auto state = readState(dir.path());
  ASSERT_FALSE(state.ok());
  EXPECT_NE(state.error().find("state.json: run 0001: \"exit_code\" is out of range"),
            std::string::npos)
      << state.error();
}

TEST(SweepRun, ResumesSkippingCompletedRuns) {
  test::ScratchDir dir;
  const std::string plan = writeSmallPlan(dir);
  EXPECT_EQ(run(plan).done, 12);
  // Nothing to do the second time.
  RunSummary again = run(plan);
  EXPECT_EQ(again.skipped, 12);
  EXPECT_EQ(again.done, 0);
  // A lost log, a log cut short, and a run left "running" by a crash, or never recorded, are
  // run again; the rest are not.
  auto state = readState(plan);
  ASSERT_TRUE(state.ok());
  auto first = readPlan(plan)->runs;
  std::filesystem::remove(plan + "/" + first[0].log);
  const std::string cut = test::readText(plan + "/" + first[4].log);
  test::writeText(plan + "/" + first[4].log, cut.substr(0, cut.size() / 2));
  state->runs[first[1].id].status = RunStatus::Running;
  state->runs.erase(first[2].id);
  ASSERT_TRUE(writeState(plan, *state).ok());
  RunSummary resumed = run(plan);
  EXPECT_EQ(resumed.skipped, 8);
  EXPECT_EQ(resumed.done, 4);
  EXPECT_EQ(readState(plan)->runs.at(first[4].id).attempts, 2);
  EXPECT_EQ(readState(plan)->runs.at(first[1].id).attempts, 2);
  EXPECT_EQ(readState(plan)->runs.at(first[3].id).attempts, 1);
}

TEST(SweepRun, FailuresAreRecordedAndRetriedOnlyWhenAsked) {
  test::ScratchDir dir;
  const std::string plan = writeSmallPlan(dir);
  {
    ScopedEnv fail("FAKE_NCCL_TESTS_FAIL_IF", "NCCL_PROTO=LL128");
    const RunSummary s = run(plan);
    EXPECT_EQ(s.done, 8);
    EXPECT_EQ(s.failed, 4);
  }
  auto state = readState(plan);
  ASSERT_TRUE(state.ok());
  int failed = 0;
  for (const auto& [id, r] : state->runs) {
    if (id.find("ll128") == std::string::npos) continue;
    ++failed;
    EXPECT_EQ(r.status, RunStatus::Failed);
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_EQ(r.message.rfind("exit code 1: no results; the output says 'line ", 0), 0u)
        << r.message;
    EXPECT_NE(r.message.find("Test NCCL failure"), std::string::npos) << r.message;
    ASSERT_FALSE(r.tail.empty());
    EXPECT_TRUE(mentions(r.tail, "Test NCCL failure")) << joined(r.tail);
  }
  EXPECT_EQ(failed, 4);
  // The loader reports them, never uses them.
  const Dataset data = loadDataset({plan}, LoadOptions());
  int excluded = 0;
  for (const calibration::Run& r : data.runs) {
    if (r.config.label != "ll128") continue;
    EXPECT_TRUE(r.failed);
    EXPECT_EQ(r.repeat, -1);
    EXPECT_TRUE(mentions(r.problems, "sweep run recorded a failure: exit code 1: "));
    ++excluded;
  }
  EXPECT_EQ(excluded, 4);
  // Not retried unless asked.
  RunSummary again = run(plan);
  EXPECT_EQ(again.done, 0);
  EXPECT_EQ(again.failed, 4);
  RunOptions retry;
  retry.retryFailed = true;
  RunSummary retried = run(plan, retry);
  EXPECT_EQ(retried.done, 4);
  EXPECT_EQ(retried.failed, 0);
  EXPECT_EQ(readState(plan)->runs.at("0003-allreduce-n1-ll128-r0").attempts, 2);
}

TEST(SweepRun, WrongResultsWithExitZeroFail) {
  test::ScratchDir dir;
  PlanOptions o = smallPlan();
  o.collectives = {"allreduce"};
  o.configs = {*parseConfigSpec("default")};
  o.repeats = o.defaultRepeats = 1;
  const std::string plan = writeSmallPlan(dir, o);
  ScopedEnv wrong("FAKE_NCCL_TESTS_WRONG", "1");
  EXPECT_EQ(run(plan).failed, 1);
  const RunRecord r = readState(plan)->runs.begin()->second;
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.message.find("exit code 0, but"), std::string::npos) << r.message;
}

TEST(SweepRun, ForcedAlgorithmNcclLacksFails) {
  test::ScratchDir dir;
  PlanOptions o = smallPlan();
  o.collectives = {"allgather"};
  // A list (not one name) passes the plan's check; NCCL (here the fake) refuses it.
  o.configs = {*parseConfigSpec("NCCL_ALGO=Tree,CollnetChain")};
  o.repeats = o.defaultRepeats = 1;
  const std::string plan = writeSmallPlan(dir, o);
  EXPECT_EQ(run(plan).failed, 1);
  const RunRecord r = readState(plan)->runs.begin()->second;
  EXPECT_TRUE(mentions(r.tail, "no algorithm/protocol available")) << joined(r.tail);
}

TEST(SweepRun, WithoutJsonSupportTheLogsAreUsed) {
  test::ScratchDir dir;
  ScopedEnv noJson("FAKE_NCCL_TESTS_NO_JSON", "1");
  PlanOptions o = smallPlan();
  o.repeats = o.defaultRepeats = 1;
  const std::string plan = writeSmallPlan(dir, o);
  EXPECT_FALSE(readPlan(plan)->options.jsonOutput);
  EXPECT_EQ(run(plan).done, 6);
  const Dataset data = loadDataset({plan}, LoadOptions());
  ASSERT_EQ(data.runs.size(), 6u);
  for (const calibration::Run& r : data.runs) {
    EXPECT_FALSE(r.failed) << joined(r.problems);
    EXPECT_NE(r.source.find(".log"), std::string::npos);
    EXPECT_EQ(rows(r), 9u);
  }
}

TEST(SweepRun, StaleJsonIsRemovedBeforeARun) {
  test::ScratchDir dir;
  PlanOptions o = smallPlan();
  o.collectives = {"allreduce"};
  o.configs = {*parseConfigSpec("default")};
  o.repeats = o.defaultRepeats = 1;
  const std::string plan = writeSmallPlan(dir, o);
  const PlannedRun first = readPlan(plan)->runs[0];
  // Left from an earlier attempt: nccl-tests would write PATH.1 beside it and leave it be.
  test::writeText(plan + "/" + first.json, "{\"stale\": true}");
  test::writeText(plan + "/" + first.json + ".1", "{}");
  EXPECT_EQ(run(plan).done, 1);
  EXPECT_FALSE(std::filesystem::exists(plan + "/" + first.json + ".1"));
  const Dataset data = loadDataset({plan}, LoadOptions());
  ASSERT_EQ(data.runs.size(), 1u);
  EXPECT_EQ(rows(data.runs[0]), 9u);
}

TEST(SweepRun, TimeoutStopsAHungRun) {
  test::ScratchDir dir;
  PlanOptions o = smallPlan();
  o.collectives = {"allreduce"};
  o.configs = *parseConfigList("default,NCCL_ALGO=Ring");
  o.repeats = o.defaultRepeats = 1;
  const std::string plan = writeSmallPlan(dir, o);
  ScopedEnv hang("FAKE_NCCL_TESTS_HANG_IF", "NCCL_ALGO=Ring");
  RunOptions opts;
  opts.timeoutSeconds = 0.5;
  const RunSummary s = run(plan, opts);
  EXPECT_EQ(s.done, 1);
  EXPECT_EQ(s.failed, 1);
  const RunRecord r = readState(plan)->runs.at("0002-allreduce-n1-ring-r0");
  EXPECT_EQ(r.status, RunStatus::Failed);
  EXPECT_EQ(r.message, "timed out after 0.5 s");
  EXPECT_LT(r.seconds, 5);
}

TEST(SweepRun, SrunAndMpirunCommandsThroughFakeLaunchers) {
  const std::string path = std::string(PILOT_FAKE_LAUNCHERS_DIR) + ":" + getenv("PATH");
  ScopedEnv withLaunchers("PATH", path);
  for (Launcher launcher : {Launcher::Srun, Launcher::Mpirun}) {
    SCOPED_TRACE(launcherName(launcher));
    test::ScratchDir dir;
    PlanOptions o = smallPlan();
    o.launcher = launcher;
    o.collectives = {"allreduce"};
    o.configs = *parseConfigList("default,NCCL_PROTO=LL");
    o.repeats = o.defaultRepeats = 1;
    o.nodes = {1, 2};
    o.gpusPerNode = 2;
    const std::string plan = writeSmallPlan(dir, o);
    EXPECT_EQ(run(plan).done, 4);
    const Dataset data = loadDataset({plan}, LoadOptions());
    ASSERT_EQ(data.runs.size(), 4u);
    for (const calibration::Run& r : data.runs) {
      EXPECT_FALSE(r.failed) << joined(r.problems);
      EXPECT_TRUE(r.problems.empty()) << joined(r.problems);  // shapes agree with the plan
      EXPECT_EQ(r.ranks, 2 * r.nodes);
    }
    EXPECT_EQ(data.runs[2].nodes, 2);
    EXPECT_EQ(data.runs[3].config.proto, "LL");
  }
}

TEST(SweepRun, DryRunRunsNothing) {
  test::ScratchDir dir;
  const std::string plan = writeSmallPlan(dir);
  std::ostringstream out;
  RunOptions o;
  o.dryRun = true;
  o.out = &out;
  auto s = runSweep(plan, o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->done, 0);
  EXPECT_FALSE(std::filesystem::exists(plan + "/state.json"));
  EXPECT_NE(out.str().find("NCCL_PILOT_SWEEP_RUN=0001-allreduce-n1-default-r0 "), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("/all_reduce_perf -b 8 -e 1048576 -f 4 -g 4"), std::string::npos);
  EXPECT_NE(out.str().find("-J runs/0001-allreduce-n1-default-r0.json"), std::string::npos);
}

TEST(SweepRun, OneRunnerPerDirectory) {
  test::ScratchDir dir;
  const std::string plan = writeSmallPlan(dir);
  const int fd = open((plan + "/.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
  RunOptions o;
  std::ostringstream out;
  o.out = &out;
  auto s = runSweep(plan, o);
  close(fd);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("another"), std::string::npos);
}

TEST(SweepRun, MissingBinaryIsAnError) {
  test::ScratchDir dir;
  PlanOptions o = smallPlan();
  o.testsDir = dir.path();
  auto plan = makePlan(o);
  ASSERT_TRUE(writePlan(*plan, dir / "plan", false).ok());
  std::ostringstream out;
  RunOptions opts;
  opts.out = &out;
  auto s = runSweep(dir / "plan", opts);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("all_reduce_perf not found"), std::string::npos) << s.error();
  // --tests-dir at run time points elsewhere.
  opts.testsDir = PILOT_FAKE_NCCL_TESTS_DIR;
  auto fixed = runSweep(dir / "plan", opts);
  ASSERT_TRUE(fixed.ok()) << fixed.error();
  EXPECT_EQ(fixed->done, 12);
}

}  // namespace
}  // namespace pilot::calibration
