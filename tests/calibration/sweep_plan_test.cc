// sweep plan: run layout, per-launcher commands, manifest round trip, commands.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "pilot/calibration/labels.h"
#include "pilot/calibration/sweep_plan.h"
#include "sweep_test_support.h"

namespace pilot::calibration {
namespace {

PlanOptions briefExample(Launcher launcher) {
  // The example: 2 collectives x 5 configurations x 2 node counts x 3 repeats.
  PlanOptions o;
  o.collectives = {"allreduce", "allgather"};
  o.configs = *parseConfigList(
      "default,NCCL_ALGO=Ring,NCCL_PROTO=LL,NCCL_ALGO=Tree+NCCL_PROTO=Simple,"
      "NCCL_MIN_NCHANNELS=4+NCCL_MAX_NCHANNELS=4");
  o.repeats = 3;
  o.nodes = {2, 4};
  o.gpusPerNode = 8;
  o.minBytes = 8;
  o.maxBytes = uint64_t{16} << 30;
  o.launcher = launcher;
  o.testsDir = "/opt/nccl-tests/build";
  return o;
}

std::string joinArgv(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

TEST(SweepPlan, LayoutAndIds) {
  auto plan = makePlan(briefExample(Launcher::Srun));
  ASSERT_TRUE(plan.ok()) << plan.error();
  // Tree is not an AllGather algorithm: 2 x 3 x (5 + 4) = 54 runs.
  EXPECT_EQ(plan->runs.size(), 54u);
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_NE(plan->notes[0].find("allgather x tree+simple"), std::string::npos) << plan->notes[0];
  const PlannedRun& first = plan->runs.front();
  EXPECT_EQ(first.id, "0001-allreduce-n2-default-r0");
  EXPECT_EQ(first.ranks, 16);
  EXPECT_EQ(plan->runs[1].id, "0002-allreduce-n2-ring-r0");
  EXPECT_EQ(plan->runs.back().id, "0054-allgather-n4-ch4-r2");
  // Repeats outermost: every configuration's repeat 0 comes before any repeat 1.
  const auto firstRepeat1 = std::find_if(plan->runs.begin(), plan->runs.end(),
                                         [](const PlannedRun& r) { return r.repeat == 1; });
  EXPECT_EQ(firstRepeat1 - plan->runs.begin(), 18);
  std::set<std::string> ids;
  for (const PlannedRun& r : plan->runs) {
    EXPECT_TRUE(ids.insert(r.id).second) << r.id;
    EXPECT_EQ(r.log, "runs/" + r.id + ".log");
    EXPECT_EQ(r.json, "runs/" + r.id + ".json");
  }
}

TEST(SweepPlan, SrunCommand) {
  auto plan = makePlan(briefExample(Launcher::Srun));
  ASSERT_TRUE(plan.ok());
  const PlannedRun& tree = plan->runs[3];  // allreduce n2 tree+simple r0
  EXPECT_EQ(tree.config.label, "tree+simple");
  EXPECT_EQ(joinArgv(runArgv(tree, true)),
            "srun --nodes=2 --ntasks-per-node=8 /opt/nccl-tests/build/all_reduce_perf -b 8 -e "
            "17179869184 -f 2 -g 1 -c 1 -n 20 -w 5 -J runs/0004-allreduce-n2-tree+simple-r0.json");
  ASSERT_EQ(tree.env.size(), 2u);
  EXPECT_EQ(tree.env[0], (std::pair<std::string, std::string>("NCCL_ALGO", "Tree")));
  EXPECT_EQ(tree.env[1], (std::pair<std::string, std::string>("NCCL_PROTO", "Simple")));
  EXPECT_EQ(shellCommand(tree, false),
            "NCCL_PILOT_SWEEP_RUN=0004-allreduce-n2-tree+simple-r0 NCCL_ALGO=Tree "
            "NCCL_PROTO=Simple srun --nodes=2 --ntasks-per-node=8 "
            "/opt/nccl-tests/build/all_reduce_perf -b 8 -e 17179869184 -f 2 -g 1 -c 1 -n 20 -w 5 "
            "> runs/0004-allreduce-n2-tree+simple-r0.log 2>&1");
}

TEST(SweepPlan, MpirunCommand) {
  PlanOptions o = briefExample(Launcher::Mpirun);
  o.env = {{"NCCL_IB_HCA", "mlx5_0,mlx5_1"}};
  auto npernode = makePlan(o);
  ASSERT_TRUE(npernode.ok()) << npernode.error();
  EXPECT_EQ(joinArgv(runArgv(npernode->runs[2], false)),
            "mpirun -np 16 -npernode 8 -x NCCL_IB_HCA=mlx5_0,mlx5_1 -x NCCL_PROTO=LL "
            "/opt/nccl-tests/build/all_reduce_perf -b 8 -e 17179869184 -f 2 -g 1 -c 1 -n 20 -w 5");
  o.hosts = {"a", "b", "c", "d"};
  auto hosts = makePlan(o);
  ASSERT_TRUE(hosts.ok());
  const PlannedRun& n4 = hosts->runs[9];  // first 4-node run
  EXPECT_EQ(n4.nodes, 4);
  EXPECT_EQ(joinArgv(n4.launcherArgv),
            "mpirun -np 32 -H a:8,b:8,c:8,d:8 -x NCCL_IB_HCA=mlx5_0,mlx5_1");
  o.hosts = {"a"};
  EXPECT_FALSE(makePlan(o).ok());  // 2 nodes, 1 host
}

TEST(SweepPlan, LocalCommand) {
  PlanOptions o;
  o.gpusPerNode = 4;
  o.collectives = {"allreduce"};
  o.configs = {*parseConfigSpec("default")};
  o.repeats = o.defaultRepeats = 1;
  o.maxBytes = 1 << 20;
  auto plan = makePlan(o);
  ASSERT_TRUE(plan.ok()) << plan.error();
  ASSERT_EQ(plan->runs.size(), 1u);
  EXPECT_EQ(joinArgv(runArgv(plan->runs[0], false)),
            "all_reduce_perf -b 8 -e 1048576 -f 2 -g 4 -c 1 -n 20 -w 5");
  EXPECT_EQ(plan->runs[0].ranks, 4);
  o.nodes = {2};
  EXPECT_FALSE(makePlan(o).ok());  // local is one node
}

TEST(SweepPlan, BadOptions) {
  PlanOptions o = briefExample(Launcher::Srun);
  o.gpusPerNode = 0;
  EXPECT_FALSE(makePlan(o).ok());
  o = briefExample(Launcher::Srun);
  o.collectives = {"alltoall"};
  EXPECT_FALSE(makePlan(o).ok());
  o = briefExample(Launcher::Srun);
  o.env = {{"NCCL_ALGO", "Ring"}};
  EXPECT_FALSE(makePlan(o).ok());  // forcing belongs in the configurations
  o = briefExample(Launcher::Srun);
  o.minBytes = 1 << 20;
  o.maxBytes = 8;
  EXPECT_FALSE(makePlan(o).ok());
}

TEST(SweepPlan, ManifestRoundTrip) {
  PlanOptions o = briefExample(Launcher::Mpirun);
  o.hosts = {"a", "b", "c", "d"};
  o.launcherArgs = {"--bind-to", "numa"};
  o.testArgs = {"-d", "bfloat16"};
  o.env = {{"NCCL_DEBUG", "INFO"}};
  o.jsonOutput = true;
  o.setup = "IB, GDR on";
  auto plan = makePlan(o);
  ASSERT_TRUE(plan.ok());
  auto back = parseManifest(formatManifest(*plan));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(formatManifest(*back), formatManifest(*plan));
  ASSERT_EQ(back->runs.size(), plan->runs.size());
  EXPECT_EQ(back->runs[3].config.label, "tree+simple");
  EXPECT_EQ(back->runs[3].config.algo, "Tree");
  EXPECT_EQ(back->options.setup, "IB, GDR on");
}

TEST(SweepPlan, ManifestErrors) {
  EXPECT_FALSE(parseManifest("not json").ok());
  EXPECT_FALSE(parseManifest("{\"format\": \"something else\"}").ok());
  auto plan = makePlan(briefExample(Launcher::Srun));
  std::string text = formatManifest(*plan);
  std::string escaped = text;
  escaped.replace(escaped.find("\"log\": \"runs/"), 13, "\"log\": \"../../");
  EXPECT_FALSE(parseManifest(escaped).ok());
  std::string newer = text;
  newer.replace(newer.find("\"version\": 1"), 12, "\"version\": 9");
  EXPECT_FALSE(parseManifest(newer).ok());
}

// Numbers no int holds (UBSan under tests/fuzz/sweep_manifest_fuzz): an error naming the field.
TEST(SweepPlan, ManifestNumbersPastTheirRangeAreErrors) {
  const std::string text = formatManifest(*makePlan(briefExample(Launcher::Srun)));
  for (const auto& [from, to] :
       std::map<std::string, std::string>{{"\"version\": 1", "\"version\": 1e300"},
                                          {"\"repeats\": 3", "\"repeats\": -1e300"},
                                          {"\"ranks\": 16", "\"ranks\": 4e9"}}) {
    std::string bad = text;
    ASSERT_NE(bad.find(from), std::string::npos) << from;
    bad.replace(bad.find(from), from.size(), to);
    auto plan = parseManifest(bad);
    ASSERT_FALSE(plan.ok()) << to;
    EXPECT_NE(plan.error().find("is out of range"), std::string::npos) << plan.error();
  }
}

TEST(SweepPlan, WritePlanFiles) {
  test::ScratchDir dir;
  PlanOptions o = briefExample(Launcher::Srun);
  o.jsonOutput = true;
  auto plan = makePlan(o);
  ASSERT_TRUE(plan.ok());
  const std::string out = dir / "plan";
  ASSERT_TRUE(writePlan(*plan, out, false).ok());
  EXPECT_TRUE(std::filesystem::is_directory(out + "/runs"));
  auto back = readPlan(out);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->runs.size(), 54u);
  const std::string commands = test::readText(out + "/commands.sh");
  EXPECT_EQ(commands.rfind("#!/bin/sh\n", 0), 0u);
  EXPECT_NE(commands.find("unset NCCL_ALGO NCCL_PROTO NCCL_MIN_NCHANNELS NCCL_MAX_NCHANNELS"),
            std::string::npos);
  EXPECT_NE(commands.find("rm -f runs/0001-allreduce-n2-default-r0.json\n"), std::string::npos);
  EXPECT_NE(commands.find("-J runs/0054-allgather-n4-ch4-r2.json > "), std::string::npos);
  EXPECT_NE(commands.find("NCCL_MIN_NCHANNELS=4 NCCL_MAX_NCHANNELS=4 srun"), std::string::npos);
  EXPECT_NE(std::filesystem::status(out + "/commands.sh").permissions() &
                std::filesystem::perms::owner_exec,
            std::filesystem::perms::none);
  EXPECT_FALSE(writePlan(*plan, out, false).ok());  // a plan is never replaced by accident
  EXPECT_TRUE(writePlan(*plan, out, true).ok());
}

TEST(SweepPlan, TheDefaultBudgetMeasuresTheNoise) {
  // By default the default runs 3 times and each forced configuration twice.
  PlanOptions o;
  o.gpusPerNode = 4;
  o.collectives = {"allreduce"};
  o.configs = *parseConfigList("default,NCCL_ALGO=Ring,NCCL_PROTO=LL");
  auto plan = makePlan(o);
  ASSERT_TRUE(plan.ok()) << plan.error();
  std::map<std::string, int> runs;
  for (const PlannedRun& r : plan->runs) ++runs[r.config.label];
  EXPECT_EQ(runs, (std::map<std::string, int>{{"default", 3}, {"ring", 2}, {"ll", 2}}));
  EXPECT_EQ(plan->runs.back().id, "0007-allreduce-n1-default-r2");  // repeats still outermost
  EXPECT_TRUE(budgetNotes(o).empty());
  // The manifest keeps both counts; an older one without default_repeats ran the default as
  // often as the rest.
  std::string text = formatManifest(*plan);
  auto back = parseManifest(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->options.defaultRepeats, 3);
  EXPECT_EQ(back->options.repeats, 2);
  text.erase(text.find("  \"default_repeats\": 3,\n"),
             std::string("  \"default_repeats\": 3,\n").size());
  back = parseManifest(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->options.defaultRepeats, 2);
}

TEST(SweepPlan, ASmallerBudgetSaysWhatItCosts) {
  PlanOptions o;
  o.defaultRepeats = 1;
  o.repeats = 1;
  std::vector<std::string> notes = budgetNotes(o);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("estimates it from the data"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("3 adjacent winning sizes"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("forced configurations run once"), std::string::npos) << notes[1];
  o.defaultRepeats = 2;
  o.repeats = 2;
  notes = budgetNotes(o);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("about 4% of sweeps"), std::string::npos) << notes[0];
  o.defaultRepeats = 0;
  o.gpusPerNode = 4;
  EXPECT_FALSE(makePlan(o).ok());
}

TEST(SweepPlan, ShellQuoting) {
  EXPECT_EQ(shellQuote("plain-word_1.2"), "plain-word_1.2");
  EXPECT_EQ(shellQuote("two words"), "'two words'");
  EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(shellQuote(""), "''");
  EXPECT_EQ(shellQuote("$HOME"), "'$HOME'");
}

}  // namespace
}  // namespace pilot::calibration
