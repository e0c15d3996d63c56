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

namespace {

const std::string kL40s = testsupport::sharedFixture("nccl-tests/l40s-1n4gpu-allreduce-forced.txt");
const std::string kSynthetic =
    std::string(PILOT_SOURCE_DIR) + "/tests/calibration/data/synthetic-2n-allreduce.txt";

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

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
  EXPECT_EQ(pilot::tuner::formatRule(parsed.table.rules[0]),
            "allreduce size=88K..704K proto=ll128 nodes=2 ranks=16");
  EXPECT_EQ(pilot::tuner::formatRule(parsed.table.rules[1]),
            "allreduce size=2816K.. algo=tree nodes=2 ranks=16");
  const auto j = nlohmann::json::parse(slurp(json));
  const auto& e = j["evaluation"];
  EXPECT_TRUE(e["meets_criterion"].get<bool>());
  EXPECT_NEAR(e["oracle_fraction"].get<double>(), 0.9941, 0.0005);
  EXPECT_NEAR(e["default_oracle_fraction"].get<double>(), 0.8807, 0.0005);
  EXPECT_EQ(e["slower_sizes"], 0);
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
