// monitor's conclusions from hand-made records: pooling over ranks, drift against the
// threshold, and when a rank is (not) the late arriver.
#include "monitor/analysis.h"

#include <gtest/gtest.h>

namespace pilot::cli::monitor {
namespace {

CollectiveRecord record(int rank, double meanUs, uint64_t calls = 10, uint64_t bucket = 1 << 20,
                        const std::string& file = "f") {
  CollectiveRecord r;
  r.file = file + std::to_string(rank);
  r.comm = "0x1";
  r.rank = rank;
  r.nRanks = 4;
  r.nNodes = 1;
  r.collective = "AllReduce";
  r.messageSize = "1-2MB";
  r.sizeBucketBytes = bucket;
  r.algo = "RING";
  r.proto = "SIMPLE";
  r.decision = "NCCL";
  r.channels = 4;
  r.calls = calls;
  r.timeSumUs = meanUs * static_cast<double>(calls);
  r.minUs = r.maxUs = r.p50Us = r.p99Us = meanUs;
  r.busGbs = 10;
  r.bins[metrics::timeBin(static_cast<uint64_t>(meanUs * 1000))] = calls;
  return r;
}

TEST(MonitorAnalysis, PoolsTheRanksOfAGroup) {
  Summaries s;
  s.files = {"a", "b"};
  s.collectives = {record(0, 100), record(1, 80, 30)};
  s.collectives[1].busGbs = 20;
  const Analysis a = analyze(s, 0.2);
  ASSERT_EQ(a.groups.size(), 1u);
  const Group& g = a.groups[0];
  EXPECT_EQ(g.calls, 40u);
  EXPECT_EQ(g.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(g.busGbs, (10.0 * 1000 + 20.0 * 2400) / 3400);  // time-weighted
  EXPECT_GE(g.p50Us, 80.0);
  EXPECT_LE(g.p50Us, 100.0);
  EXPECT_EQ(g.shortestRank, 1);
}

TEST(MonitorAnalysis, DriftIsLiveOverCalibratedAgainstTheThreshold) {
  Summaries s;
  CollectiveRecord r = record(0, 100);
  r.expectedUs = 75;
  r.expectedCalls = 10;
  r.driftRatio = 0.75;
  s.collectives = {r};
  EXPECT_TRUE(analyze(s, 0.2).groups[0].drift);
  EXPECT_FALSE(analyze(s, 0.3).groups[0].drift);
  EXPECT_DOUBLE_EQ(analyze(s, 0.2).groups[0].driftRatio, 0.75);
}

TEST(MonitorAnalysis, TheLateArriverIsTheRankShortestInMostGroups) {
  Summaries s;
  for (uint64_t bucket : {1u << 16, 1u << 20, 1u << 24}) {
    for (int rank = 0; rank < 4; ++rank) {
      s.collectives.push_back(record(rank, rank == 3 ? 70 : 100, 10, bucket));
    }
  }
  Analysis a = analyze(s, 0.2);
  ASSERT_EQ(a.late.size(), 1u);
  EXPECT_EQ(a.late[0].rank, 3);
  EXPECT_EQ(a.late[0].wins, 3u);
  EXPECT_EQ(a.late[0].compared, 3u);
  EXPECT_NEAR(a.late[0].spread, 0.3, 1e-12);
}

TEST(MonitorAnalysis, NoRankIsLateWithoutAMajorityOrAboveTheNoise) {
  Summaries s;
  s.collectives = {record(0, 100, 10, 1 << 16), record(1, 80, 10, 1 << 16),
                   record(0, 80, 10, 1 << 20),  record(1, 100, 10, 1 << 20),
                   record(0, 100, 10, 1 << 24), record(1, 99.5, 10, 1 << 24)};
  Analysis a = analyze(s, 0.2);
  EXPECT_EQ(a.late[0].rank, -1);  // one win each; the third group is within 2%
  EXPECT_EQ(a.late[0].compared, 3u);
  EXPECT_EQ(a.groups[2].shortestRank, -1);
}

TEST(MonitorAnalysis, ARankInTwoFilesKeepsTheOneWithMoreCalls) {
  Summaries s;
  s.collectives = {record(0, 100, 10, 1 << 20, "old"), record(0, 50, 20, 1 << 20, "new")};
  Analysis a = analyze(s, 0.2);
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].calls, 20u);
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("comm 0x1 rank 0 is in old0 and new0"), std::string::npos);
}

}  // namespace
}  // namespace pilot::cli::monitor
