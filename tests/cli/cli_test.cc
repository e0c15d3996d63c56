// `nccl-pilot version` and `explain` on the built library: the releases served up to 2.32 and
// the ABI each takes, explain acting as 2.31 / 2.32 (through tuner v6 / v7), the table's
// fabric= and nccl= keys under --fabric and --nccl, and --digest.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pilot/core/sha256.h"
#include "pilot/tuner/exploration.h"

namespace {

struct Outcome {
  int status = -1;
  std::string out;
};

/// Runs nccl-pilot with `args` (shell words); stderr goes along when `withStderr`.
Outcome cli(const std::string& args, bool withStderr = false) {
  const std::string command =
      std::string(PILOT_CLI) + " " + args + (withStderr ? " 2>&1" : " 2>/dev/null");
  Outcome o;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return o;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) o.out.append(buf, n);
  const int status = pclose(pipe);
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return o;
}

std::string writeTable(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir && *dir ? dir : "/tmp") + "/pilot-cli-test-" + name;
  std::ofstream(path) << text;
  return path;
}

const char* const kTable =
    "allreduce fabric=ib size=..1M algo=ring proto=ll\n"
    "allreduce fabric=roce|ethernet size=..1M algo=tree proto=ll\n"
    "allreduce nccl=2.32.6- size=1048577.. algo=ring proto=simple\n"
    "allreduce nccl=-2.31 size=1048577.. algo=tree proto=simple\n";

/// explain --json for kTable on 16 ranks / 2 nodes, 8 B .. 16M.
nlohmann::json explain(const std::string& extra) {
  static const std::string table = writeTable("keys.table", kTable);
  Outcome o = cli("explain --table " + table +
                  " --coll allreduce --nodes 2 --ranks 16 --max 16M --json " + extra);
  EXPECT_EQ(o.status, 0) << o.out;
  return nlohmann::json::parse(o.out, nullptr, false);
}

/// "Ring/LL@1" per range: the selected cell (or the decision) and the deciding lines.
std::vector<std::string> summary(const nlohmann::json& j) {
  std::vector<std::string> out;
  for (const auto& r : j["ranges"]) {
    std::string s = r["decision"] == "select"
                        ? r["algorithm"].get<std::string>() + "/" + r["protocol"].get<std::string>()
                        : r["decision"].get<std::string>();
    for (int line : r["lines"]) s += "@" + std::to_string(line);
    out.push_back(s);
  }
  return out;
}

using Lines = std::vector<std::string>;

TEST(Cli, VersionListsTheReleasesThrough232) {
  Outcome o = cli("version");
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("tuner ABI:    v2 v3 v4 v5 v6 v7"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("NCCL 2.31           tuner v6"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("NCCL 2.32.0-2.32.5  tuner v6"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("NCCL 2.32.6+        tuner v7"), std::string::npos) << o.out;

  Outcome js = cli("version --json");
  ASSERT_EQ(js.status, 0);
  auto j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["tuner_abi"], nlohmann::json({2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(j["nccl"].back()["nccl"], "2.32.6+");
  EXPECT_EQ(j["nccl"].back()["tuner_abi"], 7);
  EXPECT_EQ(j["profiler_abi"], nlohmann::json({4, 5, 6}));
  EXPECT_EQ(j["nccl"].back()["profiler_abi"], 6);
  EXPECT_TRUE(j["nccl"].front()["profiler_abi"].is_null());
}

TEST(Cli, ExplainActsAs231And232ThroughTheirAbis) {
  auto v232 = explain("--nccl 2.32 --fabric ib");
  EXPECT_EQ(v232["nccl"], "2.32.7");
  EXPECT_EQ(v232["abi"], 7);
  EXPECT_EQ(explain("--nccl 2.32.3 --fabric ib")["abi"], 6);
  auto v231 = explain("--nccl 2.31 --fabric ib");
  EXPECT_EQ(v231["nccl"], "2.31.2");
  EXPECT_EQ(v231["abi"], 6);
}

TEST(Cli, ExplainFabricKeys) {
  EXPECT_EQ(summary(explain("--nccl 2.32.6 --fabric ib")), (Lines{"Ring/LL@1", "Ring/Simple@3"}));
  EXPECT_EQ(summary(explain("--nccl 2.32.6 --fabric roce")), (Lines{"Tree/LL@2", "Ring/Simple@3"}));
  EXPECT_EQ(explain("--nccl 2.32.6 --fabric ethernet")["fabric"], "ethernet");
  EXPECT_EQ(summary(explain("--nccl 2.32.6 --fabric ethernet")),
            (Lines{"Tree/LL@2", "Ring/Simple@3"}));
  Outcome bad =
      cli("explain --table /dev/null --coll allreduce --nodes 1 --ranks 8 --fabric opa", true);
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--fabric 'opa' is not a fabric"), std::string::npos) << bad.out;
}

TEST(Cli, ExplainNcclKeys) {
  EXPECT_EQ(summary(explain("--fabric ib --nccl 2.30.7")), (Lines{"Ring/LL@1", "Tree/Simple@4"}));
  EXPECT_EQ(summary(explain("--fabric ib --nccl 2.32.3")), (Lines{"Ring/LL@1", "default"}));
  EXPECT_EQ(summary(explain("--fabric ib --nccl 2.32.7")), (Lines{"Ring/LL@1", "Ring/Simple@3"}));
}

TEST(Cli, ExplainSaysWhichRulesTheKeysDrop) {
  static const std::string table = writeTable("keys-note.table", kTable);
  Outcome o = cli("explain --table " + table +
                      " --coll allreduce --nodes 2 --ranks 16 --nccl 2.32.3 --fabric roce",
                  true);
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("1 rule(s) for this shape hold on another fabric only (fabric=), 2 for "
                       "other NCCL releases only (nccl=)"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("fabric: roce"), std::string::npos) << o.out;
}

TEST(Cli, DigestIsTheValueALauncherExports) {
  const std::string table = writeTable("digest.table", kTable);
  Outcome o = cli("explain --table " + table + " --digest");
  ASSERT_EQ(o.status, 0);
  EXPECT_EQ(o.out, pilot::sha256Hex(kTable).substr(0, 16) + "\n");
  EXPECT_EQ(cli("explain --table /nonexistent/t --digest").status, 1);
  Outcome missing = cli("explain --table " + table, true);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("--coll is required"), std::string::npos) << missing.out;
}

TEST(Cli, ScheduleDigestIsWhatTheTunerComparesWithTheExploreDigestPin) {
  const std::string table = writeTable("explore.table", kTable);
  Outcome o = cli("explain --table " + table + " --digest --explore 0.05");
  ASSERT_EQ(o.status, 0) << o.out;
  pilot::tuner::ExploreSettings s;
  s.fraction = 0.05;
  EXPECT_EQ(o.out, pilot::tuner::exploreDigest(s, pilot::sha256Hex(kTable)) + "\n");
  EXPECT_NE(cli("explain --table " + table + " --digest --explore 0.1").out, o.out);
  EXPECT_EQ(cli("explain --table " + table + " --digest --explore 0.5", true).status, 2);
  EXPECT_EQ(cli("explain --table " + table + " --digest --explore 0", true).status, 2);
}

}  // namespace
