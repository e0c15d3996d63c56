// `nccl-pilot sweep` end to end, as a user runs it: plan, run, Ctrl-C in the middle of a run
// (state saved, the run marked interrupted), run again (completed runs skipped), show.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "pilot/calibration/sweep_run.h"
#include "sweep_test_support.h"

namespace pilot::calibration {
namespace {

struct Cli {
  pid_t pid = -1;
  std::string out, err;  // files
};

/// Starts nccl-pilot with `args`, extra environment, stdout/stderr to files in `dir`.
Cli start(const test::ScratchDir& dir, const std::string& name, std::vector<std::string> args,
          const std::vector<std::pair<std::string, std::string>>& env = {}) {
  Cli cli;
  cli.out = dir / (name + ".out");
  cli.err = dir / (name + ".err");
  args.insert(args.begin(), PILOT_NCCL_PILOT_BIN);
  cli.pid = fork();
  if (cli.pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    if (!freopen(cli.out.c_str(), "w", stdout) || !freopen(cli.err.c_str(), "w", stderr))
      _exit(126);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return cli;
}

int wait(const Cli& cli) {
  int status = 0;
  waitpid(cli.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int runCli(const test::ScratchDir& dir, const std::string& name, std::vector<std::string> args,
           std::string* out = nullptr, std::string* err = nullptr) {
  const Cli cli = start(dir, name, std::move(args));
  const int rc = wait(cli);
  if (out) *out = test::readText(cli.out);
  if (err) *err = test::readText(cli.err);
  return rc;
}

TEST(SweepCli, PlanInterruptResumeShow) {
  test::ScratchDir dir;
  const std::string plan = dir / "plan";
  std::string out, err;
  ASSERT_EQ(runCli(dir, "plan",
                   {"sweep",
                    "plan",
                    "-o",
                    plan,
                    "--collectives",
                    "allreduce",
                    "--configs",
                    "default,NCCL_PROTO=LL",
                    "--repeats",
                    "2",
                    "--default-repeats",
                    "2",
                    "--gpus-per-node",
                    "2",
                    "--min",
                    "8",
                    "--max",
                    "64K",
                    "--step-factor",
                    "8",
                    "--tests-dir",
                    PILOT_FAKE_NCCL_TESTS_DIR},
                   &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("planned 4 runs"), std::string::npos) << out;
  EXPECT_NE(out.find("the default x2, forced x2"), std::string::npos) << out;
  // Fewer default repeats than the budget: the plan says what that costs.
  EXPECT_NE(out.find("evidence: the default runs 2 times"), std::string::npos) << out;
  EXPECT_NE(out.find("with -J"), std::string::npos) << out;

  // The second run (default r0, then LL r0) hangs; Ctrl-C while it runs.
  const Cli running =
      start(dir, "run1", {"sweep", "run", plan}, {{"FAKE_NCCL_TESTS_HANG_IF", "NCCL_PROTO=LL"}});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool hung = false;
  while (!hung && std::chrono::steady_clock::now() < deadline) {
    auto state = readState(plan);
    hung = state.ok() && state->runs.count("0002-allreduce-n1-ll-r0") &&
           state->runs.at("0002-allreduce-n1-ll-r0").status == RunStatus::Running;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(hung) << test::readText(running.err);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it print its header
  kill(running.pid, SIGINT);
  EXPECT_EQ(wait(running), 130) << test::readText(running.err);
  const std::string stopped = test::readText(running.err);
  EXPECT_NE(stopped.find("stopping"), std::string::npos) << stopped;
  EXPECT_NE(stopped.find("continues where it left off"), std::string::npos) << stopped;
  auto state = readState(plan);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->runs.at("0001-allreduce-n1-default-r0").status, RunStatus::Done);
  EXPECT_EQ(state->runs.at("0002-allreduce-n1-ll-r0").status, RunStatus::Interrupted);
  EXPECT_EQ(state->runs.count("0003-allreduce-n1-default-r1"), 0u);

  // Again, without the hang: the finished run is skipped, the rest run.
  ASSERT_EQ(runCli(dir, "run2", {"sweep", "run", plan}, &out, &err), 0) << err;
  EXPECT_NE(err.find("1 run(s) already done; resuming"), std::string::npos) << err;
  EXPECT_NE(err.find("4 planned: 3 done now, 1 done before, 0 failed"), std::string::npos) << err;
  EXPECT_EQ(readState(plan)->runs.at("0001-allreduce-n1-default-r0").attempts, 1);
  EXPECT_EQ(readState(plan)->runs.at("0002-allreduce-n1-ll-r0").attempts, 2);

  ASSERT_EQ(runCli(dir, "show", {"sweep", "show", plan}, &out, &err), 0) << err;
  EXPECT_NE(out.find("4 run(s), 4 usable, 0 excluded"), std::string::npos) << out;
  EXPECT_NE(out.find("ll              manifest    1"), std::string::npos) << out;
}

TEST(SweepCli, ShowFixtureWithLabels) {
  PILOT_REQUIRE_FIXTURE(test::fixture("l40s-1n4gpu-allreduce-forced.txt"));
  test::ScratchDir dir;
  std::string out, err;
  ASSERT_EQ(runCli(dir, "show",
                   {"sweep", "show", test::fixture("l40s-1n4gpu-allreduce-forced.txt"), "--label",
                    "auto_*=NCCL_PROTO=*", "--label", "ring=NCCL_ALGO=Ring", "--label",
                    "tree=NCCL_ALGO=Tree", "--label", "iteration_*=default", "--json"},
                   &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("\"spec\": \"NCCL_PROTO=LL128\""), std::string::npos) << out;
  // Unlabelled input: reported, excluded, exit 1.
  EXPECT_EQ(
      runCli(dir, "bare", {"sweep", "show", test::fixture("a3mega-2n-allreduce.txt")}, &out, &err),
      1);
  EXPECT_NE(err.find("--label '*=default'"), std::string::npos) << err;
}

TEST(SweepCli, UsageErrors) {
  test::ScratchDir dir;
  std::string out, err;
  EXPECT_EQ(runCli(dir, "a", {"sweep", "plan", "-o", dir / "p"}, &out, &err), 2);
  EXPECT_EQ(runCli(dir, "b",
                   {"sweep", "plan", "-o", dir / "p", "--gpus-per-node", "8", "--configs",
                    "NCCL_NTHREADS=64"},
                   &out, &err),
            2);
  EXPECT_NE(err.find("NCCL_NTHREADS"), std::string::npos) << err;
  EXPECT_EQ(
      runCli(dir, "c", {"sweep", "plan", "-o", dir / "p", "--gpus-per-node", "8", "--nodes", "2"},
             &out, &err),
      2);  // local launcher, 2 nodes
  EXPECT_EQ(runCli(dir, "d", {"sweep", "show", dir / "p", "--label", "nonsense"}, &out, &err), 2);
  EXPECT_EQ(runCli(dir, "e", {"sweep", "run", dir / "none"}, &out, &err), 1);
  EXPECT_NE(err.find("manifest.json"), std::string::npos) << err;
}

}  // namespace
}  // namespace pilot::calibration
