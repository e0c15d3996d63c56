// The exploration schedule (tuner/exploration.h) on its own: the share of calls, the bound,
// the turns the candidates take, the key table's limit, the digest and the setting.
#include "pilot/tuner/exploration.h"

#include "pilot/tuner/graph_capture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace pilot::tuner {
namespace {

EnvLookup envWith(const char* value) {
  return [value](const char* name) -> std::optional<std::string> {
    if (value != nullptr && std::string(name) == setting::kTunerExplore) return value;
    return std::nullopt;
  };
}

TEST(ExploreSettings, ReadsAFractionAndRejectsEverythingElse) {
  EXPECT_FALSE(readExploreSettings(envWith(nullptr)).value().on());
  EXPECT_FALSE(readExploreSettings(envWith("0")).value().on());
  EXPECT_DOUBLE_EQ(readExploreSettings(envWith("0.05")).value().fraction, 0.05);
  EXPECT_DOUBLE_EQ(readExploreSettings(envWith("0.25")).value().fraction, 0.25);
  for (const char* bad : {"0.26", "1", "-0.01", "5%", "nan", "0.05x"}) {
    auto r = readExploreSettings(envWith(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().find("NCCL_PILOT_TUNER_EXPLORE="), std::string::npos) << r.error();
  }
}

/// No decision to leave out (the candidates are then every usable cell within the bound).
int noDecision() {
  return -1;
}

ExploreSettings at(double fraction) {
  ExploreSettings s;
  s.fraction = fraction;
  return s;
}

/// 7 x 3 cells; -1 = NCCL ignores the cell.
std::vector<float> costTable() {
  std::vector<float> costs(21, -1.0f);
  costs[0 * 3 + 0] = 10;     // the cheapest (NCCL's pick)
  costs[0 * 3 + 2] = 19;     // within 2x
  costs[1 * 3 + 0] = 20;     // at the bound
  costs[1 * 3 + 1] = 20.5f;  // past it
  costs[1 * 3 + 2] = 12;
  return costs;
}

TEST(Explorer, TheFractionOfEachSizesCallsExploresInProportion) {
  for (double fraction : {0.01, 0.05, 0.1, 0.25, 1.0 / 7}) {
    Explorer e(at(fraction), 0x1234);
    std::map<uint64_t, int> explored;
    constexpr int kCalls = 20000;
    for (int i = 0; i < kCalls; ++i) {
      for (uint64_t size : {8ull, 65536ull, 1ull << 30}) explored[size] += e.due() ? 1 : 0;
    }
    int total = 0;
    for (const auto& [size, n] : explored) {
      SCOPED_TRACE(testing::Message() << "fraction " << fraction << " size " << size);
      // Gaps of 1 .. 2/f - 1 calls: each size in proportion, within a few standard deviations
      // of a binomial draw.
      const double expected = fraction * kCalls;
      EXPECT_NEAR(n, expected, 4 * std::sqrt(expected) + 1);
      total += n;
    }
    EXPECT_NEAR(total, fraction * 3 * kCalls, 0.03 * fraction * 3 * kCalls);
  }
}

TEST(Explorer, ATinyFractionExploresRarelyAndNeverOverflowsItsGap) {
  Explorer e(at(1e-12), 3);
  int explored = 0;
  for (int i = 0; i < 100000; ++i) explored += e.due() ? 1 : 0;
  EXPECT_LE(explored, 1);
}

TEST(Explorer, TheSameInputsGiveTheSameScheduleAndSizesDoNotExploreInTheSameStep) {
  Explorer a(at(0.05), 7), b(at(0.05), 7), other(at(0.05), 8);
  const std::vector<float> costs = costTable();
  std::set<int> firstStep;  // the step in which each size first explores
  std::set<uint64_t> seen;
  int differ = 0;
  for (int step = 0; step < 200; ++step) {
    for (uint64_t size = 1024; size <= (1u << 24); size *= 2) {
      const bool ea = a.due(), eb = b.due();
      ASSERT_EQ(ea, eb);
      differ += ea != other.due() ? 1 : 0;
      if (!ea) continue;
      ASSERT_EQ(a.cellFor(4, size, costs.data(), 21, noDecision),
                b.cellFor(4, size, costs.data(), 21, noDecision));
      if (seen.insert(size).second) firstStep.insert(step);
    }
  }
  EXPECT_EQ(seen.size(), 15u) << "every size explores in 200 steps at 0.05";
  EXPECT_GT(firstStep.size(), 3u) << "every size explored in the same training step";
  EXPECT_GT(differ, 0) << "another communicator id, another schedule";
}

TEST(Explorer, CandidatesAreUsableCellsWithinTheBound) {
  const std::vector<float> costs = costTable();
  EXPECT_EQ(Explorer::candidates(costs.data(), 21, 2.0f, -1),
            (1u << 0) | (1u << 2) | (1u << 3) | (1u << 5));
  EXPECT_EQ(Explorer::candidates(costs.data(), 21, 1.5f, -1), (1u << 0) | (1u << 5));
  // The decision's cell is no candidate (NCCL's pick, or the table's choice).
  EXPECT_EQ(Explorer::candidates(costs.data(), 21, 2.0f, 0), (1u << 2) | (1u << 3) | (1u << 5));
  EXPECT_EQ(Explorer::candidates(costs.data(), 21, 2.0f, 5), (1u << 0) | (1u << 2) | (1u << 3));
  std::vector<float> none(21, -1.0f);
  EXPECT_EQ(Explorer::candidates(none.data(), 21, 2.0f, -1), 0u);
  EXPECT_EQ(Explorer::candidates(costs.data(), kMaxExploreCells + 1, 2.0f, -1), 0u);
}

TEST(Explorer, APairsExplorationsTakeTurnsOverItsCandidates) {
  Explorer e(at(0.05), 1);
  const std::vector<float> costs = costTable();
  std::vector<int> turns;
  for (int i = 0; i < 12; ++i) turns.push_back(e.cellFor(4, 4096, costs.data(), 21, noDecision));
  // Four candidates, each once in every four turns, in cell order from a start of the pair's.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(turns[i], turns[i + 4]);
    EXPECT_EQ(turns[i], turns[i + 8]);
  }
  EXPECT_EQ(std::set<int>(turns.begin(), turns.end()), (std::set<int>{0, 2, 3, 5}));
  // The candidates are the pair's first table's: NCCL passes the same one every time.
  std::vector<float> changed = costs;
  changed[2] = 100;
  std::set<int> later;
  for (int i = 0; i < 8; ++i) later.insert(e.cellFor(4, 4096, changed.data(), 21, noDecision));
  EXPECT_EQ(later, (std::set<int>{0, 2, 3, 5}));
  // Nothing usable: no cell.
  std::vector<float> none(21, -1.0f);
  EXPECT_EQ(e.cellFor(4, 8192, none.data(), 21, noDecision), -1);
  EXPECT_EQ(e.explorations(), 20u);
}

TEST(Explorer, PairsPastTheTurnTableStillExploreTakingTheCommunicatorsTurn) {
  Explorer e(at(0.25), 1);
  const std::vector<float> costs = costTable();
  std::set<int> cells;
  for (uint64_t size = 1; size <= 8 * Explorer::kKeys; ++size) {
    const int c = e.cellFor(0, size * 4, costs.data(), 21, noDecision);
    ASSERT_GE(c, 0);
    cells.insert(c);
  }
  EXPECT_EQ(cells, (std::set<int>{0, 2, 3, 5}));
  EXPECT_EQ(e.explorations(), 8u * Explorer::kKeys);
}

TEST(Explorer, CheapestCellIsNcclsFirstMinimum) {
  const float costs[] = {-1, 5, 3, 3, -1};
  EXPECT_EQ(cheapestCell(costs, 5), 2);
  const float none[] = {-1, -1};
  EXPECT_EQ(cheapestCell(none, 2), -1);
}

TEST(Explorer, ACommunicatorThatCapturedAGraphStopsExploringOthersGoOn) {
  constexpr uint64_t kCaptured = 0xfeed0001, kEager = 0xfeed0002;
  Explorer captured(at(0.25), kCaptured), eager(at(0.25), kEager);
  auto explorations = [](Explorer& e) {
    int n = 0;
    for (int i = 0; i < 100; ++i) n += e.due() ? 1 : 0;
    return n;
  };
  const int before = explorations(captured);
  EXPECT_GT(before, 10);
  EXPECT_LT(before, 40);
  EXPECT_FALSE(graphCaptured(kCaptured));
  noteGraphCapture(kCaptured);
  noteGraphCapture(kCaptured);  // noted once
  EXPECT_TRUE(graphCaptured(kCaptured));
  EXPECT_FALSE(graphCaptured(kEager));
  EXPECT_EQ(explorations(captured), 0);
  EXPECT_GT(explorations(eager), 10);
}

TEST(ExploreDigest, ChangesWithEveryInputOfTheSchedule) {
  const std::string base = exploreDigest(at(0.05), "abc");
  EXPECT_EQ(base.size(), 8u);
  EXPECT_EQ(exploreDigest(at(0.05), "abc"), base);
  EXPECT_NE(exploreDigest(at(0.06), "abc"), base);
  EXPECT_NE(exploreDigest(at(0.05), "abd"), base);
  ExploreSettings wider = at(0.05);
  wider.costBound = 3;
  EXPECT_NE(exploreDigest(wider, "abc"), base);
}

}  // namespace
}  // namespace pilot::tuner
