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

/// No decision to leave out (the candidates are then every usable cell).
int noDecision() {
  return -1;
}

/// The decision is NCCL's pick (cell 0 of costTable()).
int ncclPick() {
  return 0;
}

/// No `explore=` marks.
ExploreHints noMarks() {
  return {};
}

ExploreSettings at(double fraction) {
  ExploreSettings s;
  s.fraction = fraction;
  return s;
}

/// 7 x 3 cells, NCCL's predicted µs for one size scaled by `scale`; -1 = NCCL ignores the cell.
std::vector<float> costTable(float scale = 1) {
  std::vector<float> costs(21, -1.0f);
  costs[0 * 3 + 0] = 10 * scale;     // the cheapest (NCCL's pick)
  costs[0 * 3 + 2] = 19 * scale;     // Tree/Simple
  costs[1 * 3 + 0] = 20 * scale;     // Ring/LL
  costs[1 * 3 + 1] = 20.5f * scale;  // Ring/LL128
  costs[1 * 3 + 2] = 12 * scale;     // Ring/Simple
  return costs;
}

/// A job: `steps` iterations each calling every size of `scales` once (a training step) with
/// NCCL's table costTable(scale); what ran, per size.
struct Job {
  std::vector<int> calls, explored;
  std::vector<std::set<int>> tried;
  double ncclUs = 0;     ///< NCCL's predicted time of its own picks
  double chargedUs = 0;  ///< each exploration at kMargin x NCCL's cost of it, less the pick's
};

Job runJob(Explorer& e, const std::vector<float>& scales, int steps) {
  Job j;
  j.calls.assign(scales.size(), 0);
  j.explored.assign(scales.size(), 0);
  j.tried.resize(scales.size());
  for (int step = 0; step < steps; ++step) {
    for (size_t s = 0; s < scales.size(); ++s) {
      const std::vector<float> costs = costTable(scales[s]);
      ++j.calls[s];
      j.ncclUs += costs[0];
      if (!e.due()) continue;
      const int cell = e.cellFor(4, 1024 << s, costs.data(), 21, ncclPick, noMarks);
      if (cell < 0) continue;
      ++j.explored[s];
      j.tried[s].insert(cell);
      j.chargedUs += ExploreSchedule::kMargin * costs[static_cast<size_t>(cell)] - costs[0];
    }
  }
  return j;
}

TEST(Explorer, AboutOneCallInSixMayExploreAtEverySizeWhateverTheBudget) {
  for (double fraction : {0.01, 0.05, 0.25}) {
    Explorer e(at(fraction), 0x1234);
    std::map<uint64_t, int> due;
    constexpr int kCalls = 20000;
    for (int i = 0; i < kCalls; ++i) {
      for (uint64_t size : {8ull, 65536ull, 1ull << 30}) due[size] += e.due() ? 1 : 0;
    }
    for (const auto& [size, n] : due) {
      SCOPED_TRACE(testing::Message() << "fraction " << fraction << " size " << size);
      // Gaps of 1 .. kDueGap calls, mean 6.5: each size in proportion, within a few standard
      // deviations of a binomial draw, well under a quarter.
      const double expected = kCalls * 2.0 / (ExploreSchedule::kDueGap + 1);
      EXPECT_NEAR(n, expected, 4 * std::sqrt(expected) + 1);
      EXPECT_LT(n, kCalls / 5);
    }
  }
}

TEST(Explorer, TheBudgetBoundsWhatExplorationsCostInNcclsModel) {
  // Sizes from 10 µs to 100 ms of NCCL's predicted time, every one called once per step: the
  // job's time is its largest calls'.
  const std::vector<float> scales = {1, 4, 16, 64, 256, 1024, 4096, 10000};
  for (double fraction : {0.01, 0.05, 0.25}) {
    SCOPED_TRACE(testing::Message() << "fraction " << fraction);
    Explorer e(at(fraction), 0xabc);
    const Job j = runJob(e, scales, 2000);
    // What the explorations were charged (kMargin x NCCL's cost: the model off by 3x) stays
    // within the budget: fraction x NCCL's time, less the kSpend share kept back.
    EXPECT_LE(j.chargedUs, fraction * j.ncclUs) << "NCCL alone " << j.ncclUs;
    EXPECT_GE(e.budget(), 0);
    // The cheap sizes explore most, the dearest never: a 100 ms all-reduce explored on a cell
    // NCCL predicts at 1.2x costs more than a thousand 10 µs explorations.
    EXPECT_GT(j.explored.front(), 100);
    EXPECT_EQ(j.explored.back(), 0);
    for (size_t s = 0; s < scales.size(); ++s) {
      EXPECT_LT(j.explored[s], j.calls[s] / 4) << "size " << s;
    }
  }
}

TEST(Explorer, AnAlternativeIsChargedForWhatItMayCostAndWaitsForTheBudget) {
  // One size only: its own calls fund its explorations. At 0.05 and kSpend 0.8 a call adds
  // 0.04 x 10 µs on average; Ring/Simple, the one candidate within the window (below), is
  // charged 3 x 12 - 10 = 26 µs: one exploration in about 65 calls.
  Explorer e(at(0.05), 7);
  const std::vector<float> costs = costTable();
  constexpr int kCalls = 1500;
  int explored = 0;
  for (int i = 0; i < kCalls; ++i) {
    if (!e.due()) continue;
    explored += e.cellFor(4, 4096, costs.data(), 21, ncclPick, noMarks) == 5 ? 1 : 0;
  }
  EXPECT_GT(explored, kCalls * 0.04 * 10 / 26 * 0.7);
  EXPECT_LT(explored, kCalls * 0.04 * 10 / 26 * 1.3);
}

TEST(Explorer, TheSameInputsGiveTheSameScheduleAndSizesDoNotExploreInTheSameStep) {
  Explorer a(at(0.05), 7), b(at(0.05), 7), other(at(0.05), 8);
  std::set<int> firstStep;  // the step in which each size first explores
  std::set<uint64_t> seen;
  int differ = 0;
  for (int step = 0; step < 400; ++step) {
    for (uint64_t size = 1024; size <= (1u << 24); size *= 2) {
      const std::vector<float> costs = costTable(static_cast<float>(size) / 1024);
      const bool ea = a.due(), eb = b.due();
      ASSERT_EQ(ea, eb);
      differ += ea != other.due() ? 1 : 0;
      if (!ea) continue;
      const int ca = a.cellFor(4, size, costs.data(), 21, noDecision, noMarks);
      ASSERT_EQ(ca, b.cellFor(4, size, costs.data(), 21, noDecision, noMarks));
      if (ca > 0 && seen.insert(size).second) firstStep.insert(step);
    }
  }
  EXPECT_GE(seen.size(), 8u) << "the cheap half of the sizes explores in 400 steps at 0.05";
  EXPECT_GT(firstStep.size(), 3u) << "every size explored in the same training step";
  EXPECT_GT(differ, 0) << "another communicator id, another schedule";
  EXPECT_DOUBLE_EQ(a.budget(), b.budget());
}

TEST(Explorer, CandidatesAreUsableCellsButTheDecisionsAndTheMarked) {
  const std::vector<float> costs = costTable();
  EXPECT_EQ(Explorer::candidates(costs.data(), 21, -1),
            (1u << 0) | (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5));
  // The decision's cell is no candidate (NCCL's pick, or the table's choice).
  EXPECT_EQ(Explorer::candidates(costs.data(), 21, 0),
            (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5));
  std::vector<float> none(21, -1.0f);
  EXPECT_EQ(Explorer::candidates(none.data(), 21, -1), 0u);
  EXPECT_EQ(Explorer::candidates(costs.data(), kMaxExploreCells + 1, -1), 0u);
  // Marked cells are never explored: the table says they measured slower, or enough.
  // (Alternatives all near NCCL's pick here, so that the window admits every one.)
  std::vector<float> near(21, -1.0f);
  for (int c : {0, 2, 3, 4, 5}) near[static_cast<size_t>(c)] = c == 0 ? 10.0f : 12.0f;
  Explorer e(at(0.25), 1), plain(at(0.25), 1);
  const ExploreHints marked{(1u << 3) | (1u << 4)};
  std::set<int> tried, unmarked;
  for (int i = 0; i < 20000; ++i) {
    if (e.due()) {
      const int c = e.cellFor(4, 4096, near.data(), 21, ncclPick, [&] { return marked; });
      if (c >= 0) tried.insert(c);
    }
    if (plain.due()) {
      const int u = plain.cellFor(4, 4096, near.data(), 21, ncclPick, noMarks);
      if (u >= 0) unmarked.insert(u);
    }
  }
  EXPECT_EQ(tried, (std::set<int>{2, 5}));
  EXPECT_EQ(unmarked, (std::set<int>{2, 3, 4, 5}));
}

TEST(Explorer, APairsExplorationsTakeTurnsWithinTheWindowForAtMostTheRoundsInTheTurnTable) {
  Explorer e(at(0.25), 1);
  const std::vector<float> costs = costTable();
  std::map<int, int> turns;
  int none = 0;
  for (int i = 0; i < 200000; ++i) {
    if (!e.due()) continue;
    const int c = e.cellFor(4, 4096, costs.data(), 21, ncclPick, noMarks);
    if (c < 0) {
      ++none;
      continue;
    }
    ++turns[c];
  }
  // The window: one exploration may cost kWindow x the mean call (40 µs): 3 x 12 - 10 = 26 for
  // Ring/Simple (cell 5) passes, 3 x 19 - 10 = 47 for Tree/Simple does not; and a pair stops
  // after kRounds rounds.
  EXPECT_EQ(turns, (std::map<int, int>{{5, static_cast<int>(ExploreSchedule::kRounds)}}));
  EXPECT_GT(none, 0);
  // Past the turn table (kKeys pairs, sets of kWays) a pair is not explored: a job of more
  // sizes calls each too rarely for fit to learn from.
  Explorer full(at(0.25), 1);
  int explored = 0, pairs = 0;
  for (uint64_t size = 1; size <= 8 * Explorer::kKeys; ++size) {
    while (!full.due()) {
    }
    ++pairs;
    explored += full.cellFor(0, size * 4, costs.data(), 21, ncclPick, noMarks) >= 0 ? 1 : 0;
  }
  EXPECT_GT(explored, 0);
  EXPECT_LE(explored, static_cast<int>(Explorer::kKeys));
  EXPECT_EQ(pairs, static_cast<int>(8 * Explorer::kKeys));
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
  EXPECT_GT(before, 5);
  EXPECT_LT(before, 30);
  EXPECT_FALSE(graphCaptured(kCaptured));
  noteGraphCapture(kCaptured);
  noteGraphCapture(kCaptured);  // noted once
  EXPECT_TRUE(graphCaptured(kCaptured));
  EXPECT_FALSE(graphCaptured(kEager));
  EXPECT_EQ(explorations(captured), 0);
  EXPECT_GT(explorations(eager), 5);
}

TEST(ExploreDigest, ChangesWithEveryInputOfTheSchedule) {
  const std::string base = exploreDigest(at(0.05), "abc");
  EXPECT_EQ(base.size(), 8u);
  EXPECT_EQ(exploreDigest(at(0.05), "abc"), base);
  EXPECT_NE(exploreDigest(at(0.06), "abc"), base);
  EXPECT_NE(exploreDigest(at(0.05), "abd"), base);
}

}  // namespace
}  // namespace pilot::tuner
