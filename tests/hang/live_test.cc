// monitor's live section as hang fills it (hang/live.h): the state files among monitor's
// inputs judged as `nccl-pilot hang` judges them, and written down as monitor's facts; no
// section, and not a word, for a job whose files hold no communicator (it ended) or for
// inputs without a state file.
#include "hang/live.h"

#include <gtest/gtest.h>

#include "hang_test_support.h"

namespace pilot::cli::hang::testing {
namespace {

HangOptions asOfNow() {
  HangOptions o;
  o.nowMs = kNow;
  o.readerNowMs = kNow;
  return o;
}

/// "dp" of 4 ranks: #40 in flight for 6 s on ranks 0-2, never launched by rank 3; in the last
/// window rank 2's kernels were 300 us shorter than the others'.
void writeHungJob(JobDir& dir) {
  for (int r = 0; r < 4; ++r) {
    CommState c = allReduceRank(r, 4, r == 3 ? 40 : 41, 40, 6.0);
    c.window = {{"AllReduce", kBytes, 10, r == 2 ? 700.0 : 1000.0}};
    dir.write(rankProcess(c));
  }
}

TEST(HangLive, AStallAndAStragglerAreHangsVerdictAsMonitorsFacts) {
  JobDir dir;
  writeHungJob(dir);
  const LiveRead read = readLive({dir.path()}, asOfNow());
  const monitor::Live& l = read.live;
  ASSERT_TRUE(l.present());
  EXPECT_EQ(l.stateFilesSeen, 4u);
  EXPECT_EQ(l.stateFiles, 4u);
  EXPECT_EQ(l.comms, 1u);
  EXPECT_EQ(l.asOf, "2025-12-03 13:53:20 UTC");
  EXPECT_EQ(l.hangCommand, "nccl-pilot hang " + dir.path());
  ASSERT_EQ(l.stalls.size(), 1u);
  const monitor::LiveStall& s = l.stalls[0];
  EXPECT_EQ(s.comm, "0xd9");
  EXPECT_EQ(s.commName, "dp");
  EXPECT_EQ(s.job, "4711");
  EXPECT_EQ(s.nRanks, 4);
  EXPECT_EQ(s.operation, "AllReduce #40, 4M bytes");
  EXPECT_NEAR(s.stalledS, 6.3, 1e-9);
  EXPECT_EQ(s.suspects, "3");
  // The very sentence hang prints.
  const HangReport judged = dir.judge();
  ASSERT_EQ(judged.stalls.size(), 1u);
  EXPECT_EQ(s.why, judged.stalls[0].why);
  EXPECT_TRUE(Contains(s.why, "rank 3 never launched AllReduce #40 on comm dp"));
  ASSERT_EQ(l.stragglers.size(), 1u);
  const monitor::LiveStraggler& g = l.stragglers[0];
  EXPECT_EQ(g.comm, "0xd9");
  EXPECT_EQ(g.rank, 2);
  EXPECT_EQ(g.wins, 1u);
  EXPECT_EQ(g.compared, 1u);
  EXPECT_NEAR(g.lostMsPerOp, 0.3, 1e-12);
}

TEST(HangLive, AStuckSendRecvNamesBothEnds) {
  HangReport r;
  Stall s;
  s.comm = "0x99";
  s.op = "Send";
  s.seq = 5;
  s.bytes = 1 << 20;
  s.sender = 0;
  s.receiver = 1;
  r.stalls.push_back(s);
  const monitor::Live l = liveOf(r, 2, "nccl-pilot hang d");
  ASSERT_EQ(l.stalls.size(), 1u);
  EXPECT_EQ(l.stalls[0].operation, "Send/Recv #5 from rank 0 to rank 1, 1M bytes");
  EXPECT_EQ(l.stalls[0].suspects, "");  // nobody suspected
}

TEST(HangLive, AJobThatEndedLeavesNoSectionAndNoNote) {
  JobDir dir;
  for (int64_t pid : {100, 101}) {
    StateFile s = process("n0", pid, 7'200'000);  // two hours ago: would be a note if judged
    s.final = true;
    dir.write(s);
  }
  const LiveRead read = readLive({dir.path()}, HangOptions{});
  EXPECT_FALSE(read.live.present());
  EXPECT_TRUE(read.notes.empty()) << read.notes.front();
}

TEST(HangLive, OnlyStateFilesAndSummariesByNameAreHangs) {
  JobDir dir;
  writeHungJob(dir);
  // A summary monitor reads under another name, and a path that does not exist: monitor's.
  const std::string other = dir.writeText("other/one.jsonl", "{\"kind\":\"collective\"}\n");
  LiveRead read = readLive({other, dir.path() + "/absent"}, asOfNow());
  EXPECT_FALSE(read.live.present());
  EXPECT_TRUE(read.notes.empty());
  // A state file named is read, whatever the directory holds beside it.
  const std::string one = dir.path() + "/nccl_pilot_n0_100.state.json";
  read = readLive({one}, asOfNow());
  ASSERT_TRUE(read.live.present());
  EXPECT_EQ(read.live.stateFiles, 1u);
  EXPECT_EQ(read.live.hangCommand, "nccl-pilot hang " + one);
}

TEST(HangLive, UnusableStateFilesAreSaidAndNoted) {
  JobDir dir;
  dir.writeText("nccl_pilot_n0_100.state.json", "{\"format\":\"nccl-pilot-st");
  const LiveRead read = readLive({dir.path()}, asOfNow());
  ASSERT_TRUE(read.live.present());
  EXPECT_EQ(read.live.stateFilesSeen, 1u);
  EXPECT_EQ(read.live.stateFiles, 0u);
  ASSERT_EQ(read.notes.size(), 1u);
  EXPECT_TRUE(Contains(read.notes[0], "nccl_pilot_n0_100.state.json"));
}

TEST(HangLive, ThePointerToHangIsOneShellWordPerInput) {
  JobDir dir;
  const std::string spaced = dir.path() + "/job 12's files";
  dir.write(rankProcess(allReduceRank(0, 1, 1, 1, 0)),
            "job 12's files/nccl_pilot_n0_100.state.json");
  const LiveRead read = readLive({spaced}, asOfNow());
  ASSERT_TRUE(read.live.present());
  EXPECT_EQ(read.live.hangCommand, "nccl-pilot hang '" + dir.path() + "/job 12'\\''s files'");
}

}  // namespace
}  // namespace pilot::cli::hang::testing
