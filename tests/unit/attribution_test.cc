// attributeDecision: the rule the profiler credits for what NCCL ran is the rule getCollInfo
// applied. Cases by hand, then a randomized comparison with the tuner itself (its TRACE line
// names the rule it applied) over random tables and cost tables.
#include "pilot/tuner/attribution.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "pilot/tuner/tuner_runtime.h"
#include "test_support.h"

namespace pilot::tuner {
namespace {

CompiledTable compileOnTwoNodes(const std::string& text, CommShape shape = CommShape::from(16, 2)) {
  ParsedTable parsed = parseTable(text, "t");
  for (const Diagnostic& d : parsed.diagnostics) ADD_FAILURE() << d.line << ": " << d.message;
  return CompiledTable::compile(parsed.table, shape);
}

int creditedLine(const CompiledTable& t, Collective c, uint64_t bytes, Algorithm a, Protocol p,
                 int channels = 0) {
  const Rule* r = attributeDecision(t, RanDecision{c, bytes, a, p, channels});
  return r ? r->line : 0;
}

TEST(Attribution, TheRuleWhoseChoiceNcclRanIsCredited) {
  CompiledTable t = compileOnTwoNodes(
      "allreduce size=0..64K algo=tree proto=ll\n"
      "allreduce size=0..8M proto=ll128\n"
      "allreduce size=8M.. algo=ring proto=simple channels=8\n");
  EXPECT_EQ(creditedLine(t, Collective::AllReduce, 4096, Algorithm::Tree, Protocol::LL), 1);
  // Tree/LL was not usable: the tuner went on to line 2, which NCCL's Ring/LL128 satisfies.
  EXPECT_EQ(creditedLine(t, Collective::AllReduce, 4096, Algorithm::Ring, Protocol::LL128), 2);
  // Nothing admits Ring/Simple at 4K: NCCL decided.
  EXPECT_EQ(creditedLine(t, Collective::AllReduce, 4096, Algorithm::Ring, Protocol::Simple), 0);
  EXPECT_EQ(creditedLine(t, Collective::AllReduce, 16 << 20, Algorithm::Ring, Protocol::Simple, 8),
            3);
  // NCCL may run on fewer channels than the rule allows, never more.
  EXPECT_EQ(creditedLine(t, Collective::AllReduce, 16 << 20, Algorithm::Ring, Protocol::Simple, 4),
            3);
  EXPECT_EQ(creditedLine(t, Collective::AllReduce, 16 << 20, Algorithm::Ring, Protocol::Simple, 16),
            0);
  EXPECT_EQ(creditedLine(t, Collective::AllGather, 4096, Algorithm::Ring, Protocol::LL), 0);
}

TEST(Attribution, AChunkOnlyRuleLeavesTheChoiceToNccl) {
  CompiledTable t = compileOnTwoNodes(
      "allgather size=0.. chunk=512K\n"
      "allgather size=0.. algo=ring proto=simple\n");
  EXPECT_EQ(creditedLine(t, Collective::AllGather, 1 << 20, Algorithm::Ring, Protocol::Simple), 0);
}

TEST(Attribution, AChannelsOnlyRuleIsCreditedWhenNcclKeptWithinIt) {
  CompiledTable t = compileOnTwoNodes("reducescatter size=0.. channels=4\n");
  EXPECT_EQ(creditedLine(t, Collective::ReduceScatter, 1 << 20, Algorithm::Ring, Protocol::LL, 4),
            1);
  EXPECT_EQ(creditedLine(t, Collective::ReduceScatter, 1 << 20, Algorithm::Ring, Protocol::LL, 8),
            0);
}

TEST(Attribution, PerRankRulesSeeTheTotalNcclPasses) {
  CompiledTable t = compileOnTwoNodes("allgather size=0..64K per-rank algo=ring proto=ll128\n");
  EXPECT_EQ(creditedLine(t, Collective::AllGather, 16 * 65536, Algorithm::Ring, Protocol::LL128),
            1);
  EXPECT_EQ(creditedLine(t, Collective::AllGather, 16 * 65537, Algorithm::Ring, Protocol::LL128),
            0);
}

// ---- against the tuner -------------------------------------------------------------------

/// The line getCollInfo applied, from its TRACE line ("... line N applied ..."), or 0.
int appliedLine(const test::LogSink& sink) {
  for (const test::LogLine& l : *sink) {
    const size_t at = l.message.find(": line ");
    if (at != std::string::npos) return std::stoi(l.message.substr(at + 7));
  }
  return 0;
}

std::string randomRule(std::mt19937& rng, int index) {
  static const char* const kAlgos[] = {"tree", "ring", "nvls", "pat", "collnet_direct"};
  static const char* const kProtos[] = {"ll", "ll128", "simple"};
  const uint64_t lo = uint64_t{1} << (rng() % 24);
  const uint64_t hi = lo << (1 + rng() % 8);
  std::string line = (rng() % 2 ? "allreduce" : "allgather");
  line += " size=" + std::to_string(lo) + ".." + std::to_string(hi);
  switch (rng() % 5) {
    case 0:
      line += std::string(" algo=") + kAlgos[rng() % 5];
      break;
    case 1:
      line += std::string(" proto=") + kProtos[rng() % 3];
      break;
    case 2:
      line += std::string(" algo=ring|tree proto=") + kProtos[rng() % 3];
      break;
    default:
      line += std::string(" algo=") + kAlgos[rng() % 5] + " proto=" + kProtos[rng() % 3];
  }
  if (rng() % 3 == 0) line += " channels=" + std::to_string(1 + rng() % 32);
  if (index % 7 == 6) line += " chunk=1M";
  return line + "\n";
}

TEST(Attribution, CreditsTheRuleTheTunerAppliedOnRandomTables) {
  std::mt19937 rng(14);
  int credited = 0, checked = 0;
  for (int round = 0; round < 200; ++round) {
    std::string text;
    for (int i = 0; i < 12; ++i) text += randomRule(rng, i);
    const CommShape shape = CommShape::from(16, 2);
    auto compiled = std::make_shared<const CompiledTable>(compileOnTwoNodes(text, shape));
    for (int call = 0; call < 50; ++call) {
      const int coll = rng() % 2 ? static_cast<int>(Collective::AllReduce)
                                 : static_cast<int>(Collective::AllGather);
      const uint64_t bytes = (uint64_t{1} << (rng() % 32)) + rng() % 4096;
      test::CostTable cost(kNumAlgorithms, kNumProtocols);
      for (int a = 0; a < kNumAlgorithms; ++a) {
        for (int p = 0; p < kNumProtocols; ++p) {
          cost.at(a, p) = rng() % 3 == 0 ? kIgnoreCost : 10.0f + static_cast<float>(rng() % 100);
        }
      }
      auto sink = test::makeSink();
      TunerContext ctx(compiled, std::make_unique<test::RecordingLogger>(sink), /*trace=*/true);
      int channels = 0;
      ctx.getCollInfo(coll, bytes, 1, cost.data(), kNumAlgorithms, kNumProtocols, 0, &channels);
      // NCCL's selection: the cheapest usable cell, on the tuner's channel count or its own.
      int bestA = -1, bestP = -1;
      for (int a = 0; a < kNumAlgorithms; ++a) {
        for (int p = 0; p < kNumProtocols; ++p) {
          if (cost.at(a, p) < 0) continue;
          if (bestA < 0 || cost.at(a, p) < cost.at(bestA, bestP)) bestA = a, bestP = p;
        }
      }
      if (bestA < 0) continue;  // NCCL would fail the collective: nothing ran
      const RanDecision ran{static_cast<Collective>(coll), bytes, static_cast<Algorithm>(bestA),
                            static_cast<Protocol>(bestP), channels > 0 ? channels : 24};
      const Rule* r = attributeDecision(*compiled, ran);
      ++checked;
      credited += r != nullptr;
      ASSERT_EQ(r ? r->line : 0, appliedLine(sink))
          << "table:\n"
          << text << "call " << coll << " " << bytes << " ran " << bestA << "/" << bestP;
    }
  }
  EXPECT_GT(checked, 5000);
  EXPECT_GT(credited, checked / 5);  // the comparison covers credited rules, not only "NCCL"
}

}  // namespace
}  // namespace pilot::tuner
