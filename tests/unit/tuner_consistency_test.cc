// What keeps every rank deciding alike: rules keyed on the process's facts (fabric=, nccl=)
// are dropped when the table is compiled, the facts and the table's digest are logged, and a
// table whose digest is not the one the launcher pinned (NCCL_PILOT_TUNER_TABLE_SHA256) leaves
// every decision to NCCL, or fails init in strict mode.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <memory>
#include <string>

#include "pilot/core/sha256.h"
#include "pilot/tuner/process_facts.h"
#include "pilot/tuner/tuner_runtime.h"
#include "test_support.h"

namespace pilot::tuner {
namespace {

using test::contains;
using test::CostTable;
using test::linesAt;
using test::LogLine;

constexpr int kTreeLL = 0 * 3 + 0, kRingLL = 1 * 3 + 0, kRingSimple = 1 * 3 + 2;

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

ProcessFacts facts(std::optional<Fabric> fabric, Range nccl = {}) {
  ProcessFacts f;
  f.fabric = fabric;
  f.fabricWhy = "test";
  f.nccl = nccl;
  f.ncclWhy = "test";
  return f;
}

class ConsistencyTest : public ::testing::Test {
 protected:
  /// A runtime reading `env` (the table path added) and one context with `f`.
  std::unique_ptr<TunerContext> contextFor(const std::string& table, const ProcessFacts& f,
                                           std::map<std::string, std::string> env = {}) {
    env["NCCL_PILOT_TUNER_TABLE"] = dir_.write("t.table", table);
    runtime_ = std::make_unique<TunerRuntime>(test::mapEnv(std::move(env)));
    return another(f);
  }
  std::unique_ptr<TunerContext> another(const ProcessFacts& f) {
    ContextParams params;
    params.nRanks = 16;
    params.nNodes = 2;
    params.facts = f;
    auto ctx = runtime_->createContext(params, std::make_unique<test::RecordingLogger>(sink_));
    EXPECT_TRUE(ctx.ok()) << ctx.error();
    return ctx.ok() ? std::move(ctx.value()) : nullptr;
  }

  static int selectedCell(const TunerContext& ctx) {
    CostTable table(7, 3);
    ctx.getCollInfo(kAllReduce, 4096, 1, table.data(), 7, 3, 0, nullptr);
    for (int c = 0; c < 21; ++c) {
      if (table.raw()[c] == 0.0f) return c;
    }
    return -1;
  }
  bool infoSays(std::initializer_list<std::string_view> needles) const {
    for (const LogLine& l : linesAt(sink_, LogLevel::Info)) {
      bool all = true;
      for (std::string_view n : needles) all = all && contains(l.message, n);
      if (all) return true;
    }
    return false;
  }

  test::TempDir dir_;
  test::LogSink sink_ = test::makeSink();
  std::map<std::string, std::string> env_;
  std::unique_ptr<TunerRuntime> runtime_;
};

const char* const kFabricTable =
    "allreduce fabric=ib algo=ring proto=ll\n"
    "allreduce fabric=roce|ethernet algo=tree proto=ll\n"
    "allreduce algo=ring proto=simple\n";

TEST_F(ConsistencyTest, FabricKeysHoldOnlyOnTheirFabric) {
  EXPECT_EQ(selectedCell(*contextFor(kFabricTable, facts(Fabric::InfiniBand))), kRingLL);
  EXPECT_EQ(selectedCell(*another(facts(Fabric::RoCE))), kTreeLL);
  EXPECT_EQ(selectedCell(*another(facts(Fabric::Ethernet))), kTreeLL);
  // Not known: no fabric= rule applies.
  EXPECT_EQ(selectedCell(*another(facts(std::nullopt))), kRingSimple);
  // One compiled table per (shape, facts).
  EXPECT_EQ(runtime_->cachedShapes(), 4u);
}

const char* const kNcclTable =
    "allreduce nccl=2.28-2.29 algo=ring proto=ll\n"
    "allreduce nccl=2.32.6- algo=tree proto=ll\n"
    "allreduce algo=ring proto=simple\n";

TEST_F(ConsistencyTest, NcclKeysHoldForTheRunningVersion) {
  auto exactly = [](unsigned minor, unsigned patch) {
    return facts(Fabric::InfiniBand, Range::exactly(ncclVersionCode(2, minor, patch)));
  };
  EXPECT_EQ(selectedCell(*contextFor(kNcclTable, exactly(28, 9))), kRingLL);
  EXPECT_EQ(selectedCell(*another(exactly(29, 7))), kRingLL);
  EXPECT_EQ(selectedCell(*another(exactly(30, 7))), kRingSimple);
  EXPECT_EQ(selectedCell(*another(exactly(32, 3))), kRingSimple);
  EXPECT_EQ(selectedCell(*another(exactly(32, 6))), kTreeLL);
  EXPECT_EQ(selectedCell(*another(exactly(33, 1))), kTreeLL);
}

TEST_F(ConsistencyTest, WithoutTheVersionTheAbisReleasesMustAllHold) {
  auto byAbi = [](int abi) { return facts(Fabric::InfiniBand, ncclVersionsOfTunerAbi(abi)); };
  // v5: 2.28 or 2.29, either way inside nccl=2.28-2.29.
  EXPECT_EQ(selectedCell(*contextFor(kNcclTable, byAbi(5))), kRingLL);
  // v6: 2.30.0 .. 2.32.5, inside neither rule's range.
  EXPECT_EQ(selectedCell(*another(byAbi(6))), kRingSimple);
  // v7: 2.32.6 and later.
  EXPECT_EQ(selectedCell(*another(byAbi(7))), kTreeLL);
  // Nothing known: only unkeyed rules.
  EXPECT_EQ(selectedCell(*another(facts(Fabric::InfiniBand))), kRingSimple);
}

TEST(ProcessFacts, TunerAbiReleases) {
  EXPECT_EQ(formatNcclVersions(ncclVersionsOfTunerAbi(2)), "2.21.0-2.21.99");
  EXPECT_EQ(formatNcclVersions(ncclVersionsOfTunerAbi(3)), "2.22.0-2.23.99");
  EXPECT_EQ(formatNcclVersions(ncclVersionsOfTunerAbi(4)), "2.24.0-2.27.99");
  EXPECT_EQ(formatNcclVersions(ncclVersionsOfTunerAbi(5)), "2.28.0-2.29.99");
  EXPECT_EQ(formatNcclVersions(ncclVersionsOfTunerAbi(6)), "2.30.0-2.32.5");
  EXPECT_EQ(formatNcclVersions(ncclVersionsOfTunerAbi(7)), "2.32.6 and later");
  EXPECT_TRUE(ncclVersionsOfTunerAbi(1).any());
  EXPECT_TRUE(ncclVersionsOfTunerAbi(8).any());
  EXPECT_EQ(tunerAbiOf(ncclVersionCode(2, 20, 5)), 0);
  EXPECT_EQ(tunerAbiOf(ncclVersionCode(2, 21, 5)), 2);
  EXPECT_EQ(tunerAbiOf(ncclVersionCode(2, 23, 4)), 3);
  EXPECT_EQ(tunerAbiOf(ncclVersionCode(2, 28, 9)), 5);
  EXPECT_EQ(tunerAbiOf(ncclVersionCode(2, 31, 2)), 6);
  EXPECT_EQ(tunerAbiOf(ncclVersionCode(2, 32, 5)), 6);
  EXPECT_EQ(tunerAbiOf(ncclVersionCode(2, 32, 6)), 7);
  EXPECT_EQ(tunerAbiOf(ncclVersionCode(3, 0, 0)), 7);
  for (int abi = kOldestTunerAbi; abi <= kNewestTunerAbi; ++abi) {
    const Range r = ncclVersionsOfTunerAbi(abi);
    EXPECT_EQ(tunerAbiOf(r.lo), abi);
    EXPECT_EQ(tunerAbiOf(r.hi), abi);
  }
  EXPECT_EQ(formatNcclVersions(Range::exactly(22809)), "2.28.9");
  EXPECT_EQ(formatNcclVersions(Range{}), "any");
}

TEST_F(ConsistencyTest, InitLogsThePathDigestRuleCountAndFacts) {
  auto ctx = contextFor(kFabricTable, facts(Fabric::RoCE, Range::exactly(23206)));
  const std::string digest = sha256Hex(kFabricTable);
  EXPECT_TRUE(infoSays(
      {"loaded 3 rules from", dir_.path() + "/t.table", "sha256 " + digest.substr(0, 16) + ","}))
      << test::dumpLines(sink_);
  EXPECT_TRUE(infoSays({"fabric roce (test)", "NCCL 2.32.6 (test)", "fabric= on 2 rules (1 hold)",
                        "nccl= on 0 rules"}))
      << test::dumpLines(sink_);
  EXPECT_TRUE(infoSays({"2 rules apply", "1 dropped by fabric="})) << test::dumpLines(sink_);
}

TEST_F(ConsistencyTest, PinnedDigestThatMatchesChangesNothing) {
  const std::string digest = sha256Hex(kFabricTable);
  for (const std::string& pinned : {digest.substr(0, 16), digest, upper(digest.substr(0, 8))}) {
    SCOPED_TRACE(pinned);
    sink_->clear();
    auto ctx = contextFor(kFabricTable, facts(Fabric::InfiniBand),
                          {{"NCCL_PILOT_TUNER_TABLE_SHA256", pinned}});
    EXPECT_EQ(selectedCell(*ctx), kRingLL);
    EXPECT_TRUE(linesAt(sink_, LogLevel::Warn).empty()) << test::dumpLines(sink_);
  }
}

TEST_F(ConsistencyTest, AnotherTableLeavesEveryDecisionToNccl) {
  const std::string other = "0123456789abcdef";
  auto ctx = contextFor(kFabricTable, facts(Fabric::InfiniBand),
                        {{"NCCL_PILOT_TUNER_TABLE_SHA256", other}});
  ASSERT_NE(ctx, nullptr);
  EXPECT_FALSE(ctx->active());
  EXPECT_EQ(selectedCell(*ctx), -1);
  const auto warns = linesAt(sink_, LogLevel::Warn);
  ASSERT_EQ(warns.size(), 1u) << test::dumpLines(sink_);
  EXPECT_TRUE(contains(warns[0].message, sha256Hex(kFabricTable).substr(0, 16)));
  EXPECT_TRUE(contains(warns[0].message, "NCCL_PILOT_TUNER_TABLE_SHA256=" + other));
  EXPECT_TRUE(contains(warns[0].message, "NCCL keeps its own decisions"));
  // Later communicators of the process: the same, without another WARN.
  EXPECT_EQ(selectedCell(*another(facts(Fabric::InfiniBand))), -1);
  EXPECT_EQ(linesAt(sink_, LogLevel::Warn).size(), 1u);
}

TEST_F(ConsistencyTest, AnotherTableFailsInitInStrictMode) {
  env_ = {{"NCCL_PILOT_TUNER_TABLE_SHA256", "0123456789abcdef"}, {"NCCL_PILOT_TUNER_STRICT", "1"}};
  env_["NCCL_PILOT_TUNER_TABLE"] = dir_.write("t.table", kFabricTable);
  TunerRuntime runtime(test::mapEnv(env_));
  auto ctx = runtime.createContext(ContextParams{}, nullptr);
  ASSERT_FALSE(ctx.ok());
  EXPECT_TRUE(contains(ctx.error(), sha256Hex(kFabricTable).substr(0, 16))) << ctx.error();
  EXPECT_TRUE(contains(ctx.error(), "0123456789abcdef")) << ctx.error();
  EXPECT_TRUE(contains(ctx.error(), "NCCL_PILOT_TUNER_STRICT=1")) << ctx.error();
}

TEST_F(ConsistencyTest, MalformedPinLeavesEveryDecisionToNccl) {
  for (const char* bad : {"abc", "0123456789abcdeg", "sha256:0123456789abcdef"}) {
    SCOPED_TRACE(bad);
    sink_->clear();
    auto ctx = contextFor(kFabricTable, facts(Fabric::InfiniBand),
                          {{"NCCL_PILOT_TUNER_TABLE_SHA256", bad}});
    EXPECT_EQ(selectedCell(*ctx), -1);
    const auto warns = linesAt(sink_, LogLevel::Warn);
    ASSERT_EQ(warns.size(), 1u) << test::dumpLines(sink_);
    EXPECT_TRUE(contains(warns[0].message, "is not a SHA-256 prefix")) << warns[0].message;
  }
}

TEST_F(ConsistencyTest, TheDigestIsOfTheFileBytes) {
  // A comment changes the digest though not the rules: the file is what ranks must share.
  const std::string text = std::string("# v2\n") + kFabricTable;
  env_["NCCL_PILOT_TUNER_TABLE"] = dir_.write("t.table", text);
  TunerRuntime runtime(test::mapEnv(env_));
  ASSERT_TRUE(
      runtime.createContext(ContextParams{}, std::make_unique<test::RecordingLogger>(sink_)).ok());
  EXPECT_TRUE(infoSays({"sha256 " + sha256Hex(text).substr(0, 16)})) << test::dumpLines(sink_);
  EXPECT_NE(sha256Hex(text), sha256Hex(kFabricTable));
}

}  // namespace
}  // namespace pilot::tuner
