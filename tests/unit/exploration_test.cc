// The exploration schedule (tuner/exploration.h) on its own: the share of calls, the bound,
// the turns the candidates take, the key table's limit, the digest and the setting.
#include "pilot/tuner/exploration.h"

#include "pilot/tuner/graph_capture.h"

#include <gtest/gtest.h>

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

ExploreSettings at(double fraction) {
  ExploreSettings s;
  s.fraction = fraction;
  return s;
}

TEST(Explorer, ExactlyTheFractionOfEachPairsCallsExploreWithConsecutiveTurns) {
  for (double fraction : {0.01, 0.05, 0.1, 0.25, 1.0 / 7}) {
    Explorer e(at(fraction), 0x1234);
    std::map<uint64_t, std::vector<uint64_t>> turns;
    constexpr int kCalls = 10000;
    for (int i = 0; i < kCalls; ++i) {
      for (uint64_t size : {8ull, 65536ull, 1ull << 30}) {
        uint64_t turn = 0;
        if (e.scheduled(4, size, &turn)) turns[size].push_back(turn);
      }
    }
    for (const auto& [size, list] : turns) {
      SCOPED_TRACE(testing::Message() << "fraction " << fraction << " size " << size);
      EXPECT_NEAR(static_cast<double>(list.size()), fraction * kCalls, 1.0);
      for (size_t i = 1; i < list.size(); ++i) ASSERT_EQ(list[i], list[i - 1] + 1);
    }
    EXPECT_EQ(turns.size(), 3u);
  }
}

TEST(Explorer, TheSameInputsGiveTheSameScheduleAndSizesDoNotExploreInTheSameStep) {
  Explorer a(at(0.05), 7), b(at(0.05), 7);
  std::set<int> firstStep;  // the step in which each size first explores
  std::set<uint64_t> seen;
  for (int step = 0; step < 20; ++step) {
    for (uint64_t size = 1024; size <= (1u << 24); size *= 2) {
      uint64_t ta = 0, tb = 0;
      const bool ea = a.scheduled(4, size, &ta), eb = b.scheduled(4, size, &tb);
      ASSERT_EQ(ea, eb);
      ASSERT_EQ(ta, tb);
      if (ea && seen.insert(size).second) firstStep.insert(step);
    }
  }
  EXPECT_EQ(seen.size(), 15u) << "every size explores once in 20 steps at 0.05";
  EXPECT_GT(firstStep.size(), 3u) << "every size explored in the same training step";
}

TEST(Explorer, PairsPastTheKeyTableNeverExplore) {
  Explorer e(at(0.25), 1);
  uint64_t turn = 0;
  int explored = 0;
  for (int round = 0; round < 8; ++round) {
    for (uint64_t size = 1; size <= Explorer::kKeys + 100; ++size) {
      explored += e.scheduled(0, size * 4, &turn) ? 1 : 0;
    }
  }
  // Every counted pair explores 2 of its 8 calls (0.25); the 100 past the table none.
  EXPECT_NEAR(explored, 2 * static_cast<int>(Explorer::kKeys), 2.0 * Explorer::kKeys * 0.05);
  EXPECT_LT(explored, 2 * static_cast<int>(Explorer::kKeys + 100) - 50);
}

TEST(Explorer, CandidatesAreUsableCellsWithinTheBoundTakingTurns) {
  Explorer e(at(0.05), 1);
  // 7 algorithms x 3 protocols; -1 = NCCL ignores the cell.
  std::vector<float> costs(21, -1.0f);
  costs[0 * 3 + 0] = 10;     // the cheapest (NCCL's pick)
  costs[0 * 3 + 2] = 19;     // within 2x
  costs[1 * 3 + 0] = 20;     // at the bound
  costs[1 * 3 + 1] = 20.5f;  // past it
  costs[1 * 3 + 2] = 12;
  std::set<int> picked;
  for (uint64_t turn = 0; turn < 30; ++turn) {
    const int c = e.pick(4, 4096, turn, costs.data(), 21, /*baseline=*/0);
    ASSERT_GE(c, 0);
    picked.insert(c);
  }
  EXPECT_EQ(picked, (std::set<int>{2, 3, 5}));
  // A table's choice elsewhere: NCCL's cheapest becomes a candidate, the choice does not.
  EXPECT_NE(e.pick(4, 4096, 0, costs.data(), 21, 5), 5);
  std::set<int> around;
  for (uint64_t turn = 0; turn < 6; ++turn)
    around.insert(e.pick(4, 4096, turn, costs.data(), 21, 5));
  EXPECT_EQ(around, (std::set<int>{0, 2, 3}));
  // Nothing within the bound, nothing usable, a table too large: no exploration.
  std::vector<float> lone(21, -1.0f);
  lone[4] = 5;
  EXPECT_EQ(e.pick(4, 4096, 0, lone.data(), 21, 4), -1);
  EXPECT_EQ(e.pick(4, 4096, 0, std::vector<float>(21, -1.0f).data(), 21, -1), -1);
  EXPECT_EQ(e.pick(4, 4096, 0, costs.data(), kMaxExploreCells + 1, 0), -1);
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
    uint64_t turn = 0;
    for (int i = 0; i < 100; ++i) n += e.scheduled(4, 8192, &turn) ? 1 : 0;
    return n;
  };
  EXPECT_EQ(explorations(captured), 25);
  EXPECT_FALSE(graphCaptured(kCaptured));
  noteGraphCapture(kCaptured);
  noteGraphCapture(kCaptured);  // noted once
  EXPECT_TRUE(graphCaptured(kCaptured));
  EXPECT_FALSE(graphCaptured(kEager));
  EXPECT_EQ(explorations(captured), 0);
  EXPECT_EQ(explorations(eager), 25);
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
