// `nccl-pilot fit` and `nccl-pilot report` as a user runs them on the real l40s sweep.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "pilot/tuner/table.h"
#include "published_fixture.h"
#include "text_file.h"

namespace {

const std::string kL40s = testsupport::sharedFixture("nccl-tests/l40s-1n4gpu-allreduce-forced.txt");
const std::string kSynthetic =
    std::string(PILOT_SOURCE_DIR) + "/tests/calibration/data/synthetic-2n-allreduce.txt";

using testsupport::slurp;

class FitCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pilot-fit-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& f : made_) unlink(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string path(const std::string& name) {
    made_.push_back(dir_ + "/" + name);
    return made_.back();
  }
  /// Runs nccl-pilot; stdout and stderr land in out_ and err_.
  int run(std::vector<std::string> args) {
    const std::string out = path("stdout"), err = path("stderr");
    args.insert(args.begin(), PILOT_NCCL_PILOT_BIN);
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("SOURCE_DATE_EPOCH", "1796918400", 1);  // 2026-12-10T16:00:00Z
      setenv("PATH", "/nonexistent", 1);             // no gnuplot, whatever the machine has
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
  std::vector<std::string> labels() {
    return {"--label", "iteration_*=default", "--label", "ring=NCCL_ALGO=Ring",
            "--label", "tree=NCCL_ALGO=Tree", "--label", "auto_*=NCCL_PROTO=*"};
  }

  std::string dir_, out_, err_;
  std::vector<std::string> made_;
};

TEST_F(FitCli, FitWritesATableAndJsonAndEvaluates) {
  PILOT_REQUIRE_FIXTURE(kL40s);
  const std::string table = path("l40s.table"), json = path("l40s.json");
  std::vector<std::string> args = {"fit", kL40s, "-o", table, "--json", json, "--evaluate"};
  for (const std::string& l : labels()) args.push_back(l);
  ASSERT_EQ(run(args), 0) << err_;
  const pilot::tuner::ParsedTable parsed = pilot::tuner::loadTableFile(table);
  EXPECT_TRUE(parsed.diagnostics.empty());
  std::map<std::string, std::string> prov(parsed.table.provenance.begin(),
                                          parsed.table.provenance.end());
  EXPECT_EQ(prov["date"], "2026-12-10T16:00:00Z");
  EXPECT_EQ(prov["nccl"], "2.29.2");
  EXPECT_EQ(prov["inputs"], kL40s);
  EXPECT_NE(out_.find("wrote " + table + ": 0 rules"), std::string::npos) << out_;
  EXPECT_NE(out_.find("criterion met"), std::string::npos) << out_;
  const auto j = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(j["decisions"].size(), 25u);
  EXPECT_EQ(j["rules"], 0);
  EXPECT_TRUE(j["evaluation"]["meets_criterion"].get<bool>());
}

TEST_F(FitCli, ASweepWithACrossoverGetsRulesThatBeatTheDefault) {
  // Synthetic (documented in the file): NCCL's default keeps LL too long and misses Tree.
  const std::string input =
      std::string(PILOT_SOURCE_DIR) + "/tests/calibration/data/synthetic-2n-allreduce.txt";
  const std::string table = path("synthetic.table"), json = path("synthetic.json");
  ASSERT_EQ(run({"fit", input, "-o", table, "--json", json, "--evaluate", "--label",
                 "iteration_*=default", "--label", "proto_simple*=NCCL_PROTO=Simple", "--label",
                 "proto_ll128=NCCL_PROTO=LL128", "--label", "algo_tree=NCCL_ALGO=Tree"}),
            0)
      << err_;
  const pilot::tuner::ParsedTable parsed = pilot::tuner::loadTableFile(table);
  EXPECT_TRUE(parsed.diagnostics.empty());
  ASSERT_EQ(parsed.table.rules.size(), 2u);
  // The expected table. Cliff-safe edges: LL128 is 20% slower than the default's Simple at 1M
  // and Tree 5x slower at 2M, so the bands end and start at the last and first winning sizes
  // (not at the midpoints 704K and 2816K). expect= holds the measured times inside each band,
  // nccl= the version the runs report.
  EXPECT_EQ(pilot::tuner::formatRule(parsed.table.rules[0]),
            "allreduce size=88K..512K proto=ll128 nodes=2 ranks=16 nccl=2.28 "
            "expect=128K:27.8|256K:36.44|512K:55.06");
  EXPECT_EQ(pilot::tuner::formatRule(parsed.table.rules[1]),
            "allreduce size=4M.. algo=tree nodes=2 ranks=16 nccl=2.28 "
            "expect=4M:177.73|8M:330.82|16M:669.16|32M:1298.88|64M:2632.65|128M:5152.78|"
            "256M:10143.27|512M:20265.33|1G:40737.55");
  const std::string text = slurp(table);
  EXPECT_NE(text.find("#   evidence: noise measured: the default ran 3 times"), std::string::npos)
      << text;
  EXPECT_NE(text.find("edge at the measured size below (the neighbour loses beyond the bar)"),
            std::string::npos);
  const auto j = nlohmann::json::parse(slurp(json));
  const auto& e = j["evaluation"];
  EXPECT_TRUE(e["meets_criterion"].get<bool>());
  EXPECT_NEAR(e["oracle_fraction"].get<double>(), 0.9941, 0.0005);
  EXPECT_NEAR(e["default_oracle_fraction"].get<double>(), 0.8807, 0.0005);
  EXPECT_EQ(e["slower_sizes"], 0);
}

TEST_F(FitCli, EvaluateAndHoldoutScoreATableOnAnotherSweep) {
  // The table fitted on the repeated sweep, scored on a single-run sweep of the same truth.
  const std::string single =
      std::string(PILOT_SOURCE_DIR) + "/tests/calibration/data/synthetic-2n-allreduce-single.txt";
  const std::vector<std::string> synthetic = {
      "--label", "iteration_*=default",          "--label", "proto_simple*=NCCL_PROTO=Simple",
      "--label", "proto_ll128=NCCL_PROTO=LL128", "--label", "algo_tree=NCCL_ALGO=Tree"};
  const std::string table = path("fitted.table"), json = path("fit.json");
  std::vector<std::string> args = {"fit",       kSynthetic, "-o",     table,
                                   "--holdout", single,     "--json", json};
  args.insert(args.end(), synthetic.begin(), synthetic.end());
  ASSERT_EQ(run(args), 0) << err_;
  EXPECT_NE(out_.find("in-sample    held-out"), std::string::npos) << out_;
  const auto fitted = nlohmann::json::parse(slurp(json));
  const auto& held = fitted["holdout"]["held_out"];
  EXPECT_EQ(held["sizes_scored"], 28);
  EXPECT_EQ(held["slower_sizes"], 0);
  EXPECT_GT(held["gap_captured"].get<double>(), 0.9);
  EXPECT_GT(fitted["holdout"]["in_sample"]["gap_captured"].get<double>(), 0.9);

  const std::string scores = path("scores.json");
  args = {"evaluate", "--table", table, single, "--json", scores};
  args.insert(args.end(), synthetic.begin(), synthetic.end());
  ASSERT_EQ(run(args), 0) << err_;
  EXPECT_NE(out_.find("share of the default-to-fastest gap captured: "), std::string::npos) << out_;
  EXPECT_NE(out_.find("sizes slower than the default beyond noise: 0"), std::string::npos);
  const auto j = nlohmann::json::parse(slurp(scores));
  EXPECT_EQ(j["sizes"].size(), 28u);
  EXPECT_DOUBLE_EQ(j["gap_captured"].get<double>(), held["gap_captured"].get<double>());
  for (const auto& s : j["sizes"]) {
    if (s["size"] == 4194304) {
      EXPECT_EQ(s["chosen"], "algo_tree");
      EXPECT_EQ(s["rule_line"].is_number(), true);
    }
    if (s["size"] == 2097152) {
      EXPECT_EQ(s["chosen"], "default");  // beside the cliff
    }
  }

  const std::string html = path("held.html");
  args = {"report", kSynthetic, "--holdout", single, "-o", html};
  args.insert(args.end(), synthetic.begin(), synthetic.end());
  ASSERT_EQ(run(args), 0) << err_;
  EXPECT_NE(slurp(html).find("Held-out scores"), std::string::npos);
  EXPECT_NE(out_.find("held-out"), std::string::npos) << out_;

  // Usage: evaluate needs a table; --holdout scores a written table; keys are checked.
  EXPECT_EQ(run({"evaluate", single}), 2);
  EXPECT_EQ(run({"fit", kSynthetic, "--evaluate", "--holdout", single}), 2);
  EXPECT_NE(err_.find("--holdout"), std::string::npos) << err_;
  EXPECT_EQ(run({"fit", kSynthetic, "-o", path("k.table"), "--nccl", "2.x"}), 2);
  EXPECT_NE(err_.find("--nccl 2.x"), std::string::npos) << err_;
  EXPECT_EQ(run({"evaluate", "--table", path("missing.table"), single}), 1);
}

TEST_F(FitCli, KeysComeFromTheLogsAndFlagsOverride) {
  const std::string single =
      std::string(PILOT_SOURCE_DIR) + "/tests/calibration/data/synthetic-2n-allreduce-single.txt";
  const std::string logs = path("logs.table"), flags = path("flags.table");
  std::vector<std::string> args = {"fit",     single,
                                   "-o",      logs,
                                   "--label", "iteration_*=default",
                                   "--label", "proto_ll128=NCCL_PROTO=LL128",
                                   "--label", "algo_tree=NCCL_ALGO=Tree",
                                   "--label", "proto_simple=NCCL_PROTO=Simple"};
  ASSERT_EQ(run(args), 0) << err_;
  // fit's output says what the rules rest on and which keys they carry.
  EXPECT_NE(out_.find("  evidence: noise estimated: the default ran 1 time(s)"), std::string::npos)
      << out_;
  EXPECT_NE(out_.find("  keys: nccl=2.28 (the runs report NCCL 2.28.3); fabric=ib (NCCL logged "
                      "'Using network IB')"),
            std::string::npos)
      << out_;
  pilot::tuner::ParsedTable parsed = pilot::tuner::loadTableFile(logs);
  ASSERT_FALSE(parsed.table.rules.empty());
  // The file logs NCCL 2.28.3 and "Using network IB" over devices with an IB link layer.
  for (const auto& r : parsed.table.rules) {
    const std::string line = pilot::tuner::formatRule(r);
    EXPECT_NE(line.find(" fabric=ib nccl=2.28 "), std::string::npos) << line;
  }
  args[3] = flags;
  args.insert(args.end(), {"--nccl", "2.28-2.29", "--fabric", "any"});
  ASSERT_EQ(run(args), 0) << err_;
  parsed = pilot::tuner::loadTableFile(flags);
  ASSERT_FALSE(parsed.table.rules.empty());
  for (const auto& r : parsed.table.rules) {
    const std::string line = pilot::tuner::formatRule(r);
    EXPECT_EQ(line.find("fabric="), std::string::npos) << line;
    EXPECT_NE(line.find(" nccl=2.28-2.29 "), std::string::npos) << line;
  }
  EXPECT_NE(slurp(flags).find("no fabric= key (--fabric any)"), std::string::npos);
}

TEST_F(FitCli, ReportWritesAPageAndASummary) {
  PILOT_REQUIRE_FIXTURE(kL40s);
  const std::string html = path("report.html");
  std::vector<std::string> args = {"report", kL40s, "-o", html};
  for (const std::string& l : labels()) args.push_back(l);
  ASSERT_EQ(run(args), 0) << err_;
  const std::string page = slurp(html);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(out_.find("allreduce nodes=1 ranks=4: default x3"), std::string::npos) << out_;
  EXPECT_NE(out_.find("wrote " + html), std::string::npos);
}

TEST_F(FitCli, UsageErrors) {
  EXPECT_EQ(run({"fit", kSynthetic}), 2);  // neither -o nor --evaluate
  EXPECT_NE(err_.find("-o TABLE is required"), std::string::npos) << err_;
  EXPECT_EQ(run({"fit", kSynthetic, "-o", path("x.table"), "--label", "nonsense"}), 2);
  EXPECT_NE(err_.find("--label nonsense"), std::string::npos) << err_;
  EXPECT_EQ(run({"fit", kSynthetic, "-o", path("y.table"), "--margin", "2"}), 2);
  // Unlabelled logs are not assumed to be NCCL's default: every run is excluded.
  EXPECT_EQ(run({"fit", kSynthetic, "-o", path("z.table")}), 1);
  EXPECT_NE(err_.find("no usable run"), std::string::npos) << err_;
}

}  // namespace
