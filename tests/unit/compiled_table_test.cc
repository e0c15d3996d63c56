// CompiledTable: priority, bounds, shape filtering and per-rank sizes, looked up directly and
// through a TunerContext (which adds the per-call pipeops/regbuff conditions).
#include "pilot/tuner/compiled_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "pilot/tuner/tuner_runtime.h"
#include "test_support.h"

namespace pilot::tuner {
namespace {

using test::CostTable;

TuningTable tableOf(const std::string& text) {
  ParsedTable parsed = parseTable(text, "t");
  for (const Diagnostic& d : parsed.diagnostics) {
    ADD_FAILURE() << "line " << d.line << ": " << d.message;
  }
  return parsed.table;
}

CompiledTable compileText(const std::string& text, CommShape shape = CommShape::from(8, 1)) {
  return CompiledTable::compile(tableOf(text), shape);
}

/// The source line of the first rule matching (coll, nBytes), or 0.
int firstLine(const CompiledTable& t, Collective coll, uint64_t nBytes) {
  const Rule* r = t.firstMatch(coll, nBytes, [](const Rule&) { return true; });
  return r ? r->line : 0;
}

std::unique_ptr<TunerContext> contextFor(const std::string& text, CommShape shape) {
  auto compiled =
      std::make_shared<const CompiledTable>(CompiledTable::compile(tableOf(text), shape));
  return std::make_unique<TunerContext>(std::move(compiled), nullptr, false);
}

TEST(CompiledTable, EmptyTableMatchesNothing) {
  CompiledTable t = compileText("");
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.ruleCount(), 0u);
  for (int c = 0; c < kNumCollectives; ++c) {
    for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 20, kUnbounded}) {
      EXPECT_EQ(firstLine(t, static_cast<Collective>(c), n), 0);
    }
  }
  EXPECT_EQ(firstLine(t, static_cast<Collective>(kNumCollectives), 0), 0);
}

TEST(CompiledTable, OneRule) {
  CompiledTable t = compileText("allreduce size=4K..64K algo=ring");
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(t.ruleCount(), 1u);
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 8192), 1);
  EXPECT_EQ(firstLine(t, Collective::AllGather, 8192), 0);
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 1 << 20), 0);
  EXPECT_EQ(t.rule(0).line, 1);
}

TEST(CompiledTable, InclusiveBounds) {
  CompiledTable t = compileText("allreduce size=4K..64K algo=ring");
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 4095), 0);
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 4096), 1);
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 65536), 1);
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 65537), 0);
  EXPECT_EQ(t.boundaries(Collective::AllReduce), (std::vector<uint64_t>{0, 4096, 65537}));

  CompiledTable edges =
      compileText("allreduce size=0 algo=ring\nallreduce size=18446744073709551615 algo=tree");
  EXPECT_EQ(firstLine(edges, Collective::AllReduce, 0), 1);
  EXPECT_EQ(firstLine(edges, Collective::AllReduce, 1), 0);
  EXPECT_EQ(firstLine(edges, Collective::AllReduce, kUnbounded - 1), 0);
  EXPECT_EQ(firstLine(edges, Collective::AllReduce, kUnbounded), 2);
}

TEST(CompiledTable, FirstMatchWinsInFileOrder) {
  CompiledTable t = compileText(
      "allreduce size=1K..1M algo=tree\n"  // 1
      "allreduce size=0..64K algo=ring\n"  // 2: overlaps 1 below 64K, behind it there
      "allreduce algo=nvls\n"              // 3: everything else
      "allreduce size=0..16 algo=pat\n");  // 4: shadowed by 2 and 3
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 0), 2);
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 1023), 2);
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 1024), 1);
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 1 << 20), 1);
  EXPECT_EQ(firstLine(t, Collective::AllReduce, (1 << 20) + 1), 3);

  // The walk goes on in priority order while the visitor declines.
  std::vector<int> seen;
  const Rule* hit = t.firstMatch(Collective::AllReduce, 8, [&](const Rule& r) {
    seen.push_back(r.line);
    return false;
  });
  EXPECT_EQ(hit, nullptr);
  EXPECT_EQ(seen, (std::vector<int>{2, 3, 4}));
  seen.clear();
  hit = t.firstMatch(Collective::AllReduce, 2048, [&](const Rule& r) {
    seen.push_back(r.line);
    return r.line == 3;
  });
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->line, 3);
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
}

TEST(CompiledTable, CollectiveListsAndAny) {
  CompiledTable t = compileText("allgather|reducescatter algo=ring\nany algo=tree");
  EXPECT_EQ(firstLine(t, Collective::AllGather, 10), 1);
  EXPECT_EQ(firstLine(t, Collective::ReduceScatter, 10), 1);
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 10), 2);
  EXPECT_EQ(firstLine(t, Collective::Broadcast, 10), 2);
  EXPECT_EQ(firstLine(t, Collective::Reduce, 10), 2);
}

TEST(CompiledTable, ShapeFiltering) {
  const std::string text =
      "allreduce nodes=2 algo=ring\n"      // 1
      "allreduce ranks=8..16 algo=tree\n"  // 2
      "allreduce rpn=8 algo=nvls\n"        // 3
      "allreduce rpn=* algo=pat\n";        // 4
  EXPECT_EQ(firstLine(compileText(text, CommShape::from(16, 2)), Collective::AllReduce, 1), 1);
  EXPECT_EQ(firstLine(compileText(text, CommShape::from(8, 1)), Collective::AllReduce, 1), 2);
  EXPECT_EQ(firstLine(compileText(text, CommShape::from(32, 4)), Collective::AllReduce, 1), 3);
  EXPECT_EQ(firstLine(compileText(text, CommShape::from(24, 4)), Collective::AllReduce, 1), 4);
  EXPECT_EQ(compileText(text, CommShape::from(24, 4)).ruleCount(), 1u);
  EXPECT_EQ(compileText(text, CommShape::from(16, 2)).ruleCount(), 4u);
}

TEST(CompiledTable, RanksPerNodeUnknownWhenUneven) {
  CommShape uneven = CommShape::from(15, 2);
  EXPECT_FALSE(uneven.ranksPerNode.has_value());
  EXPECT_EQ(CommShape::from(16, 2).ranksPerNode, 8u);
  EXPECT_FALSE(CommShape::from(4, 0).ranksPerNode.has_value());

  const std::string text =
      "allreduce rpn=1.. algo=ring\n"  // any known rpn, but not an unknown one
      "allreduce algo=tree\n";
  EXPECT_EQ(firstLine(compileText(text, uneven), Collective::AllReduce, 1), 2);
  EXPECT_EQ(firstLine(compileText(text, CommShape::from(16, 2)), Collective::AllReduce, 1), 1);

  CommShape unknown = CommShape::from(16, 2);
  unknown.ranksPerNode.reset();
  EXPECT_EQ(firstLine(compileText(text, unknown), Collective::AllReduce, 1), 2);
}

TEST(CompiledTable, PerRankSizesScaleForAllGatherAndReduceScatter) {
  const std::string text =
      "allgather|reducescatter size=0..1M per-rank algo=ring\n"
      "allgather|reducescatter size=2M.. per-rank algo=tree\n"
      "allreduce size=0..1M per-rank algo=ring\n";
  CompiledTable t = compileText(text, CommShape::from(8, 1));
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter}) {
    SCOPED_TRACE(collectiveName(c));
    EXPECT_EQ(firstLine(t, c, 0), 1);
    EXPECT_EQ(firstLine(t, c, (8u << 20) + 7), 1);  // 1M + 7/8 per rank
    EXPECT_EQ(firstLine(t, c, (8u << 20) + 8), 0);
    EXPECT_EQ(firstLine(t, c, (16u << 20) - 1), 0);
    EXPECT_EQ(firstLine(t, c, 16u << 20), 2);
    EXPECT_EQ(firstLine(t, c, kUnbounded), 2);
  }
  // AllReduce sizes are not per-rank, whatever the rule says.
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 1u << 20), 3);
  EXPECT_EQ(firstLine(t, Collective::AllReduce, (1u << 20) + 1), 0);

  // One rank: per-rank == total.
  CompiledTable single = compileText(text, CommShape::from(1, 1));
  EXPECT_EQ(firstLine(single, Collective::AllGather, 1u << 20), 1);
  EXPECT_EQ(firstLine(single, Collective::AllGather, (1u << 20) + 1), 0);
}

TEST(CompiledTable, PerRankLowerBoundIsScaledToo) {
  CompiledTable t = compileText("allgather size=1K..2K per-rank algo=ring", CommShape::from(8, 1));
  EXPECT_EQ(firstLine(t, Collective::AllGather, 8 * 1024 - 1), 0);
  EXPECT_EQ(firstLine(t, Collective::AllGather, 8 * 1024), 1);
  EXPECT_EQ(firstLine(t, Collective::AllGather, 8 * 2048 + 7), 1);
  EXPECT_EQ(firstLine(t, Collective::AllGather, 8 * 2048 + 8), 0);
}

TEST(CompiledTable, PerRankUpperBoundSaturates) {
  // hi * nRanks overflows: every larger total still has a per-rank size <= hi.
  CompiledTable t =
      compileText("allgather size=0..16000000T per-rank algo=ring", CommShape::from(8, 1));
  EXPECT_EQ(firstLine(t, Collective::AllGather, kUnbounded), 1);
}

// nBytes / nRanks can never reach a per-rank lower bound above kUnbounded / nRanks, so such a rule
// must never match. The compiled range saturates lo*nRanks to kUnbounded instead, which makes the
// rule match nBytes == 2^64-1.
TEST(CompiledTable, PerRankLowerBoundBeyondAnyTotalNeverMatches) {
  CompiledTable t =
      compileText("allgather size=3000000T.. per-rank algo=ring", CommShape::from(8, 1));
  EXPECT_EQ(firstLine(t, Collective::AllGather, kUnbounded / 8 * 8), 0);
  EXPECT_EQ(firstLine(t, Collective::AllGather, kUnbounded), 0)
      << "per-rank size " << kUnbounded / 8 << " is below the rule's " << (3000000ull << 40);
}

TEST(CompiledTable, TenThousandRules) {
  std::string text;
  for (int i = 0; i < 10000; ++i) {
    uint64_t lo = static_cast<uint64_t>(i) * 1000;
    text += "allreduce size=" + std::to_string(lo) + ".." + std::to_string(lo + 999) +
            (i % 2 ? " algo=ring\n" : " algo=tree proto=ll\n");
  }
  CompiledTable t = compileText(text);
  EXPECT_EQ(t.ruleCount(), 10000u);
  EXPECT_EQ(t.boundaries(Collective::AllReduce).size(), 10001u);
  for (int i = 0; i < 10000; i += 7) {
    uint64_t lo = static_cast<uint64_t>(i) * 1000;
    EXPECT_EQ(firstLine(t, Collective::AllReduce, lo), i + 1);
    EXPECT_EQ(firstLine(t, Collective::AllReduce, lo + 999), i + 1);
  }
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 10000000), 0);
  EXPECT_EQ(firstLine(t, Collective::AllGather, 0), 0);
}

// ---- the size index ----------------------------------------------------------------------

/// Every edge of `t`'s AllReduce lane, one below it and one above, gives the rule `line(n)`.
void expectEdges(const CompiledTable& t, const std::function<int(uint64_t)>& line) {
  for (uint64_t edge : t.boundaries(Collective::AllReduce)) {
    for (uint64_t n : {edge - 1, edge, edge + 1}) {
      if (edge == 0 && n == kUnbounded) continue;
      ASSERT_EQ(firstLine(t, Collective::AllReduce, n), line(n)) << "at " << n;
    }
  }
}

TEST(CompiledTable, SizeIndexIsTheCoarsestWithoutCrowdedBuckets) {
  // Edges 4K and 64K+1 sit in different octaves: one bucket per octave is enough.
  EXPECT_EQ(compileText("allreduce size=4K..64K algo=ring").indexBits(Collective::AllReduce), 0u);
  // Edges 5K and 6K both inside the octave [4K, 8K): two buckets per octave separate them.
  CompiledTable two =
      compileText("allreduce size=4K..5119 algo=ring\nallreduce size=6K.. algo=tree");
  EXPECT_EQ(two.indexBits(Collective::AllReduce), 1u);
  EXPECT_EQ(firstLine(two, Collective::AllReduce, 5119), 1);
  EXPECT_EQ(firstLine(two, Collective::AllReduce, 5120), 0);
  EXPECT_EQ(firstLine(two, Collective::AllReduce, 6143), 0);
  EXPECT_EQ(firstLine(two, Collective::AllReduce, 6144), 2);
  EXPECT_EQ(two.indexBits(Collective::AllGather), 0u) << "a lane without rules has no index";
}

TEST(CompiledTable, DenseLogSpacedBandsNeedNoSearch) {
  // 32 bands per octave from 8 B (the shape of a fitted table): buckets of 1/64 octave hold at
  // most one edge each.
  std::string text;
  uint64_t lo = 0;
  std::vector<uint64_t> starts;
  for (int j = 0; j < 1000; ++j) {
    starts.push_back(lo);
    const uint64_t next =
        std::max<uint64_t>(lo + 1, static_cast<uint64_t>(std::pow(2.0, 3.0 + j / 32.0)));
    text += "allreduce size=" + std::to_string(lo) + ".." + std::to_string(next - 1) +
            (j % 2 ? " algo=ring proto=simple\n" : " algo=tree proto=ll\n");
    lo = next;
  }
  CompiledTable t = compileText(text);
  EXPECT_LE(t.indexBits(Collective::AllReduce), 6u);
  expectEdges(t, [&](uint64_t n) {
    if (n >= lo) return 0;
    return static_cast<int>(std::upper_bound(starts.begin(), starts.end(), n) - starts.begin());
  });
}

TEST(CompiledTable, EdgesCloserThanTheFinestBucketAreSearched) {
  // 1 MiB bands up to 1000 MiB: near 1 GiB a bucket of the finest index (1/256 octave, 2 MiB)
  // holds two edges. And four one-byte bands at 1 TiB, 2^63 and the very top.
  std::string text;
  for (uint64_t k = 0; k < 1000; ++k) {
    text += "allreduce size=" + std::to_string(k << 20) + ".." +
            std::to_string(((k + 1) << 20) - 1) + " algo=ring\n";
  }
  const uint64_t tera = uint64_t{1} << 40, top = uint64_t{1} << 63;
  for (uint64_t base : {tera, top, kUnbounded - 3}) {
    for (uint64_t i = 0; i < 4; ++i) {
      text += "allreduce size=" + std::to_string(base + i) + " algo=tree\n";
    }
  }
  CompiledTable t = compileText(text);
  EXPECT_EQ(t.indexBits(Collective::AllReduce), CompiledTable::kMaxIndexBits);
  expectEdges(t, [&](uint64_t n) -> int {
    if (n < (uint64_t{1000} << 20)) return static_cast<int>(n >> 20) + 1;
    for (int b = 0; b < 3; ++b) {
      const uint64_t base = b == 0 ? tera : b == 1 ? top : kUnbounded - 3;
      if (n >= base && n - base < 4) return 1001 + 4 * b + static_cast<int>(n - base);
    }
    return 0;
  });
}

TEST(CompiledTable, ChannelsOnlyRuleShadowsEverythingBehindIt) {
  auto ctx = contextFor("allreduce size=..1M channels=4\nallreduce algo=tree proto=ll",
                        CommShape::from(8, 1));
  CostTable table(7, 3), before = table;
  int nChannels = 0;
  ctx->getCollInfo(4, 4096, 1, table.data(), 7, 3, 0, &nChannels);
  EXPECT_EQ(nChannels, 4);
  EXPECT_EQ(table.raw(), before.raw());
  // Above 1M only the second rule matches.
  nChannels = 0;
  ctx->getCollInfo(4, 2u << 20, 1, table.data(), 7, 3, 0, &nChannels);
  EXPECT_EQ(nChannels, 0);
  EXPECT_EQ(table.at(kTree, kLL), 0.0f);
}

// ---- per-call conditions through the runtime context --------------------------------------

class ConditionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = contextFor(
        "allreduce pipeops=2..4 algo=tree proto=ll\n"  // 1
        "allreduce pipeops=0 algo=tree proto=ll128\n"  // 2
        "allreduce regbuff=1 algo=ring proto=ll128\n"  // 3
        "allreduce regbuff=0 algo=ring proto=ll\n"     // 4
        "allreduce algo=ring proto=simple\n",          // 5
        CommShape::from(8, 1));
  }

  /// The one cell the call set to 0.0, as algo*3+proto; -1 if none.
  int selected(int numPipeOps, int regBuff) {
    CostTable table(7, 3);
    ctx_->getCollInfo(4, 4096, numPipeOps, table.data(), 7, 3, regBuff, nullptr);
    int cell = -1;
    for (int a = 0; a < 7; ++a) {
      for (int p = 0; p < 3; ++p) {
        if (table.at(a, p) == 0.0f) {
          EXPECT_EQ(cell, -1) << "two cells selected";
          cell = a * 3 + p;
        }
      }
    }
    return cell;
  }

  std::unique_ptr<TunerContext> ctx_;
};

TEST_F(ConditionsTest, PipeOps) {
  EXPECT_EQ(selected(2, 0), kTree * 3 + kLL);
  EXPECT_EQ(selected(4, 0), kTree * 3 + kLL);
  EXPECT_EQ(selected(5, 0), kRing * 3 + kLL);  // falls to the regbuff=0 rule
  EXPECT_EQ(selected(0, 0), kTree * 3 + kLL128);
  EXPECT_EQ(selected(-3, 0), kTree * 3 + kLL128);  // negative counts as 0
}

TEST_F(ConditionsTest, RegBuff) {
  EXPECT_EQ(selected(1, 1), kRing * 3 + kLL128);
  EXPECT_EQ(selected(1, 0), kRing * 3 + kLL);
  // v3 does not pass regBuff (-1): rules with regbuff= never match.
  EXPECT_EQ(selected(1, -1), kRing * 3 + kSimple);
}

// explore= lines (written by `nccl-pilot fit`) mark cells for exploration and decide nothing.
TEST(CompiledTable, ExploreMarksDecideNothingAndExcludeSlowAndKnownCells) {
  const std::string text =
      "allreduce size=4M..128M nodes=2 algo=ring proto=ll explore=slow\n"
      "allreduce size=1M..8M nodes=2 algo=tree proto=simple explore=known\n"
      "allreduce size=1M..8M nodes=2 algo=tree proto=ll explore=first\n"
      "allreduce size=0..64K nodes=4 algo=tree proto=ll explore=slow\n"
      "allreduce size=0..1K nodes=2 algo=tree proto=ll\n";
  const CompiledTable t = compileText(text, CommShape::from(2, 2));
  EXPECT_EQ(t.ruleCount(), 1u) << "marks are no rules";
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 8 << 20), 0) << "a mark never decides";
  EXPECT_EQ(firstLine(t, Collective::AllReduce, 512), 5);
  ASSERT_EQ(t.marks().size(), 3u) << "the nodes=4 mark is for another shape";
  const int ringLL = kRing * 3 + kLL, treeSimple = kTree * 3 + kSimple;
  EXPECT_EQ(t.exploreHints(Collective::AllReduce, 16 << 20).exclude, 1u << ringLL);
  EXPECT_EQ(t.exploreHints(Collective::AllReduce, 4 << 20).exclude,
            (1u << ringLL) | (1u << treeSimple))
      << "first marks exclude nothing";
  EXPECT_EQ(t.exploreHints(Collective::AllReduce, 1 << 19).exclude, 0u);
  EXPECT_EQ(t.exploreHints(Collective::AllGather, 16 << 20).exclude, 0u);
  // A restricting mark names every cell of its algorithms x protocols.
  const CompiledTable r =
      compileText("allgather size=1M.. algo=ring explore=known\n", CommShape::from(4, 4));
  EXPECT_EQ(r.exploreHints(Collective::AllGather, 2 << 20).exclude, 7u << (kRing * 3));
  // A context with only marks keeps NCCL's decisions.
  auto ctx =
      contextFor("allreduce size=4M.. algo=ring proto=ll explore=slow\n", CommShape::from(2, 2));
  CostTable costs(7, 3);
  const std::vector<float> before = costs.raw();
  int channels = 0;
  ctx->getCollInfo(4, 8 << 20, 1, costs.data(), 7, 3, 0, &channels);
  EXPECT_EQ(costs.raw(), before);
  EXPECT_EQ(channels, 0);
}

}  // namespace
}  // namespace pilot::tuner
