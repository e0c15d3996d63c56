// `nccl-pilot fit`, `evaluate` and `report` on a metrics directory as the profiler leaves it:
// one .jsonl per rank, .prom files beside them.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "metrics_test_support.h"
#include "pilot/tuner/table.h"
#include "text_file.h"

namespace {

using pilot::calibration::test::calibrationLine;
using pilot::calibration::test::CallNoise;
using pilot::calibration::test::LineSpec;

const std::string kSyntheticSweep =
    std::string(PILOT_SOURCE_DIR) + "/tests/calibration/data/synthetic-2n-allreduce.txt";

using testsupport::slurp;

class FitMetricsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pilot-fit-metrics-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    metrics_ = dir_ + "/metrics";
    std::filesystem::create_directories(metrics_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// One job on two ranks, one file each: ring/simple 380 calls per size and rank at 100 us,
  /// tree/simple `treeCalls` at 70 us, at 256K, 512K and 1M.
  void writeJob(size_t treeCalls) {
    CallNoise noise(5);
    for (int rank = 0; rank < 2; ++rank) {
      const std::string host = "host" + std::to_string(rank + 1);
      std::ofstream f(metrics_ + "/nccl_pilot_" + host + "_" + std::to_string(100 + rank) +
                      ".jsonl");
      f << "{\"kind\":\"process\",\"node\":\"" << host << "\"}\n";
      for (uint64_t size : {256u << 10, 512u << 10, 1u << 20}) {
        LineSpec base, tree;
        base.rank = tree.rank = rank;
        base.node = tree.node = host;
        base.pid = tree.pid = 100 + rank;
        base.bytes = tree.bytes = size;
        tree.algo = "TREE";
        f << calibrationLine(base, noise.calls(100.0, 380, 0.12, 0.01)) << "\n";
        if (treeCalls > 0) f << calibrationLine(tree, noise.calls(70.0, treeCalls, 0.12)) << "\n";
      }
      std::ofstream(metrics_ + "/nccl_pilot_" + host + ".prom") << "# TYPE x gauge\nx 1\n";
    }
  }

  int run(std::vector<std::string> args) {
    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    args.insert(args.begin(), PILOT_NCCL_PILOT_BIN);
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("SOURCE_DATE_EPOCH", "1796918400", 1);
      setenv("PATH", "/nonexistent", 1);
      if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    out_ = slurp(out);
    err_ = slurp(err);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  }

  std::string dir_, metrics_, out_, err_;
};

TEST_F(FitMetricsCli, FitEvaluateAndReportReadAMetricsDirectory) {
  writeJob(10);
  // A copy taken while rank 1's profiler was writing: a truncated last line.
  std::ofstream(metrics_ + "/nccl_pilot_host2_101.jsonl", std::ios::app) << "{\"kind\":\"calib";
  const std::string table = dir_ + "/job.table", json = dir_ + "/job.json";
  ASSERT_EQ(run({"fit", metrics_, "-o", table, "--json", json}), 0) << err_;
  EXPECT_NE(err_.find("nccl_pilot_host2_101.jsonl:8: truncated last line"), std::string::npos)
      << err_;
  EXPECT_NE(err_.find("2 .prom file(s) ignored"), std::string::npos) << err_;
  const pilot::tuner::ParsedTable parsed = pilot::tuner::loadTableFile(table);
  EXPECT_TRUE(parsed.diagnostics.empty());
  // One rule, then what the job measured of each cell for the next exploring job.
  ASSERT_GE(parsed.table.rules.size(), 2u);
  EXPECT_FALSE(parsed.table.rules[0].isMark());
  EXPECT_NE(pilot::tuner::formatRule(parsed.table.rules[0]).find("algo=tree proto=simple"),
            std::string::npos);
  for (size_t i = 1; i < parsed.table.rules.size(); ++i) {
    EXPECT_TRUE(parsed.table.rules[i].isMark()) << pilot::tuner::formatRule(parsed.table.rules[i]);
  }
  const std::string text = slurp(table);
  EXPECT_NE(text.find("#   evidence: per-call samples, ranks and jobs pooled"), std::string::npos)
      << text;
  EXPECT_NE(text.find("fabric=ethernet nccl=2.28 expect=256K:"), std::string::npos) << text;
  const nlohmann::json j = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(j["bands"][0]["evidence"]["kind"], "per-call samples");

  ASSERT_EQ(run({"evaluate", "--table", table, metrics_}), 0) << err_;
  EXPECT_NE(out_.find("share of the default-to-fastest gap captured: "), std::string::npos) << out_;

  const std::string html = dir_ + "/job.html";
  ASSERT_EQ(run({"report", metrics_, "-o", html, "--no-gnuplot"}), 0) << err_;
  EXPECT_NE(slurp(html).find("tree/simple"), std::string::npos);
}

TEST_F(FitMetricsCli, WithoutExplorationTheTableIsNcclsDefaultAndSaysWhy) {
  writeJob(0);
  const std::string table = dir_ + "/job.table";
  ASSERT_EQ(run({"fit", metrics_ + "/nccl_pilot_host1_100.jsonl", "-o", table}), 0) << err_;
  const std::string text = slurp(table);
  EXPECT_NE(text.find("too little evidence: only the job's own choice ran"), std::string::npos)
      << text;
  EXPECT_EQ(pilot::tuner::loadTableFile(table).table.rules.size(), 0u);
}

TEST_F(FitMetricsCli, MixedInputsEvaluateAndEmptyDirectoriesAreRefusedClearly) {
  writeJob(10);
  EXPECT_EQ(run({"fit", metrics_, kSyntheticSweep, "-o", dir_ + "/x.table"}), 2);
  EXPECT_NE(err_.find("mix profiler metrics"), std::string::npos) << err_;
  EXPECT_EQ(run({"fit", metrics_, "--evaluate"}), 2);
  EXPECT_NE(err_.find("profiler metrics have none to split"), std::string::npos) << err_;
  const std::string empty = dir_ + "/empty";
  std::filesystem::create_directories(empty);
  EXPECT_EQ(run({"fit", empty, "-o", dir_ + "/x.table"}), 1);
  EXPECT_NE(err_.find("an empty directory"), std::string::npos) << err_;
  std::ofstream(dir_ + "/foreign.jsonl") << "{\"event\":\"x\"}\n";
  EXPECT_EQ(run({"fit", dir_ + "/foreign.jsonl", "-o", dir_ + "/x.table"}), 1);
  EXPECT_NE(err_.find("not a nccl-pilot metrics summary"), std::string::npos) << err_;
  EXPECT_NE(err_.find("no calibration line"), std::string::npos) << err_;
}

TEST_F(FitMetricsCli, HelpNamesMetricsInputs) {
  ASSERT_EQ(run({"fit", "--help"}), 0);
  EXPECT_NE(out_.find(".jsonl"), std::string::npos) << out_;
}

}  // namespace
