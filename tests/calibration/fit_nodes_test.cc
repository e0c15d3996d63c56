// Across node counts: the node model's leave-one-out error, and rules for node counts between
// measured ones only where both neighbours and the model agree.
#include <gtest/gtest.h>

#include <cmath>

#include "fit_test_support.h"
#include "pilot/calibration/fit.h"
#include "pilot/tuner/table.h"

namespace pilot::calibration {
namespace {

using test::configOf;
using test::flatNoise;
using test::makeRun;
using test::Noise;
using test::SweepSpec;
using test::Truth;

// Latency grows with log2(nodes) (a tree), bandwidth stays: the node model's own family.
Truth treeLike(double alphaUs, double perLevelUs, double gbps) {
  return [=](double size, int nodes) {
    return alphaUs + perLevelUs * std::log2(static_cast<double>(nodes)) + size / (gbps * 1e3);
  };
}

Dataset nodeSweep(const std::vector<int>& nodeCounts, const Truth& ring, uint32_t seed) {
  Noise noise(seed);
  Dataset data;
  for (int nodes : nodeCounts) {
    SweepSpec spec;
    spec.nodes = nodes;
    spec.ranks = 4 * nodes;
    spec.maxSize = 1u << 30;
    for (int r = 0; r < 3; ++r) {
      data.runs.push_back(makeRun(spec, configOf("default", "", ""), treeLike(10, 8, 10), noise,
                                  flatNoise(0.01), r));
      data.runs.push_back(
          makeRun(spec, configOf("ring", "Ring", ""), ring, noise, flatNoise(0.01), r));
    }
  }
  return data;
}

const tuner::Rule* ruleFor(const FitResult& r, int nodes, uint64_t size) {
  for (const FittedRule& f : r.rules) {
    const tuner::Rule& rule = f.rule;
    const bool rpnOk = rule.ranksPerNode.any() || rule.ranksPerNode.contains(4);
    const bool ranksOk = rule.ranks.any() || rule.ranks.contains(static_cast<uint64_t>(4 * nodes));
    if (rule.nodes.contains(static_cast<uint64_t>(nodes)) && rpnOk && ranksOk &&
        rule.size.contains(size)) {
      return &rule;
    }
  }
  return nullptr;
}

TEST(FitNodes, ModelPredictsHeldOutNodeCounts) {
  const FitResult r = fit(nodeSweep({2, 4, 16, 32}, treeLike(20, 8, 13), 1), FitOptions{});
  ASSERT_EQ(r.nodeModels.size(), 2u);
  for (const NodeModelReport& m : r.nodeModels) {
    EXPECT_EQ(m.nodeCounts, (std::vector<int>{2, 4, 16, 32}));
    EXPECT_EQ(m.heldOut.size(), 4u);
    EXPECT_EQ(m.scale, NodeScale::Log2);
    // 1% noise; the truth is in the model's family, so held-out counts come out within noise.
    EXPECT_LT(m.medianRelError, 0.02) << m.label;
  }
}

TEST(FitNodes, RingLikeLatencyIsFittedLinearInNodes) {
  // One step per rank: AllGather on a ring. log2(n) cannot follow it, n can.
  const Truth ringLatency = [](double size, int nodes) { return 5 + 7.5 * 4 * nodes + size / 2e4; };
  Noise noise(5);
  Dataset data;
  for (int nodes : {2, 8, 128, 512}) {
    SweepSpec spec;
    spec.collective = "allgather";
    spec.nodes = nodes;
    spec.ranks = 4 * nodes;
    for (int r = 0; r < 2; ++r) {
      data.runs.push_back(
          makeRun(spec, configOf("default", "", ""), ringLatency, noise, flatNoise(0.01), r));
    }
  }
  const FitResult r = fit(data, FitOptions{});
  ASSERT_EQ(r.nodeModels.size(), 1u);
  EXPECT_EQ(r.nodeModels[0].scale, NodeScale::Linear);
  EXPECT_LT(r.nodeModels[0].medianRelError, 0.05);
}

TEST(FitNodes, RulesCoverUnmeasuredNodeCountsBetweenAgreeingNeighbours) {
  // Ring: more latency, 30% more bandwidth at every node count: faster from about 1 MB.
  const FitResult r = fit(nodeSweep({2, 4, 16, 32}, treeLike(20, 8, 13), 2), FitOptions{});
  ASSERT_EQ(r.nodeRanges.size(), 3u);  // 3, 5..15, 17..31
  for (int nodes : {2, 3, 8, 16, 20, 31, 32}) {
    SCOPED_TRACE(nodes);
    const tuner::Rule* big = ruleFor(r, nodes, 256u << 20);
    ASSERT_NE(big, nullptr);
    EXPECT_EQ(big->algorithms, tuner::bit(tuner::Algorithm::Ring));
    EXPECT_EQ(ruleFor(r, nodes, 4096), nullptr);  // small sizes stay NCCL's
  }
  // Outside the measured node counts NCCL decides.
  EXPECT_EQ(ruleFor(r, 1, 256u << 20), nullptr);
  EXPECT_EQ(ruleFor(r, 64, 256u << 20), nullptr);
  const tuner::ParsedTable parsed = tuner::parseTable(tableText(r), "nodes.table");
  EXPECT_TRUE(parsed.diagnostics.empty());
  EXPECT_EQ(parsed.table.rules.size(), r.rules.size());
}

TEST(FitNodes, NoRuleWhereTheNeighboursDisagree) {
  // Ring wins up to 4 nodes and loses from 16 on: nothing is claimed for 5..15.
  const Truth ring = [](double size, int nodes) {
    const double gbps = nodes <= 4 ? 13 : 8;
    return 20 + 8 * std::log2(static_cast<double>(nodes)) + size / (gbps * 1e3);
  };
  const FitResult r = fit(nodeSweep({2, 4, 16, 32}, ring, 3), FitOptions{});
  EXPECT_NE(ruleFor(r, 3, 256u << 20), nullptr);
  EXPECT_NE(ruleFor(r, 4, 256u << 20), nullptr);
  for (int nodes : {5, 8, 15, 16, 24, 32}) EXPECT_EQ(ruleFor(r, nodes, 256u << 20), nullptr);
}

}  // namespace
}  // namespace pilot::calibration
