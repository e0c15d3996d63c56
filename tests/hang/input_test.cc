// What the hang reader makes of files that are not what they should be, and of clocks: a
// truncated, foreign, half-written, newer or out-of-bounds state file is one note naming it and
// the rest is judged; a process read twice keeps its newest; two jobs in one directory; a node
// whose clock is an hour ahead (or behind); files gathered long after they were written.
#include <gtest/gtest.h>

#include "hang/state_json.h"
#include "hang/state_reader.h"
#include "hang_test_support.h"

namespace pilot::cli::hang::testing {
namespace {

using Ranks = std::vector<int>;

/// Ranks 0..3 of "dp", rank 3 never launching #40; ranks on `node` unless `nodeOf` says.
void writeJob(JobDir& dir, const std::string& job = "4711", int64_t shiftMs = 0) {
  for (int r = 0; r < 4; ++r) {
    StateFile s = rankProcess(allReduceRank(r, 4, r == 3 ? 40 : 41, 40, 6.0));
    s.job = job;
    s.writtenMs += shiftMs;
    s.nextDueMs += shiftMs;
    dir.write(s);
  }
}

/// The notes that name `file`.
std::vector<std::string> notesOn(const HangReport& r, const std::string& file) {
  std::vector<std::string> out;
  for (const std::string& n : r.notes)
    if (n.find(file) != std::string::npos) out.push_back(n);
  return out;
}

TEST(HangInput, EachUnusableStateFileIsOneNoteAndTheRestIsJudged) {
  JobDir dir;
  writeJob(dir);
  const std::string good = renderStateFile(rankProcess(allReduceRank(0, 4, 41, 40, 6.0)));
  struct Bad {
    std::string name, text, why;
  };
  const std::vector<Bad> bad = {
      {"truncated.state.json", good.substr(0, good.size() / 2), "cut short at byte"},
      {"foreign.state.json", R"({"format":"prometheus","version":1})",
       "not a nccl-pilot state file"},
      {"half.state.json", "", "empty (half-written?)"},
      {"newer.state.json", R"({"format":"nccl-pilot-state","version":2,"node":"x"})",
       "format version 2 is newer than this nccl-pilot reads (1)"},
      {"bounds.state.json",
       R"({"format":"nccl-pilot-state","version":1,"node":"x","pid":1,"written_ms":1,)"
       R"("next_due_ms":2,"comms":[{"comm":"0x1","rank":9,"nranks":8}]})",
       "comms[0].rank: 9 outside [0, 7]"},
      {"garbage.state.json", "]]]", "not JSON (at byte 1)"},
      // hang_state_fuzz: nlohmann throws this one as out_of_range, not as a parse error.
      {"huge.state.json", R"({"format":"nccl-pilot-state","pid":1e708})",
       "not JSON (a number out of range)"},
  };
  for (const Bad& b : bad) dir.writeText(b.name, b.text);
  const HangReport r = dir.judge();
  EXPECT_EQ(r.files, 4u);
  for (const Bad& b : bad) {
    const std::vector<std::string> notes = notesOn(r, b.name);
    ASSERT_EQ(notes.size(), 1u) << b.name;
    EXPECT_TRUE(Contains(notes[0], b.why));
  }
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_EQ(r.stalls[0].notLaunched, Ranks{3});
}

TEST(HangInput, NothingToReadIsNoInput) {
  JobDir dir;
  Inputs in = readInputs({dir.path(), dir.path() + "/absent"});
  EXPECT_TRUE(in.anyReadable);
  EXPECT_EQ(in.stateFilesSeen, 0u);
  ASSERT_EQ(in.notes.size(), 1u);
  EXPECT_TRUE(Contains(in.notes[0], "absent: no such file or directory"));
  in = readInputs({dir.path() + "/absent"});
  EXPECT_FALSE(in.anyReadable);
}

TEST(HangInput, AProcessReadTwiceKeepsItsNewestState) {
  JobDir dir;
  writeJob(dir);
  // A stale copy of rank 3 (gathered twice, say) from before it stopped: it had launched #40.
  StateFile old = rankProcess(allReduceRank(3, 4, 41, 40, 1.0), 20000);
  dir.write(old, "copies/old.state.json");
  const HangReport r = dir.judge();
  EXPECT_EQ(r.files, 4u);
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_EQ(r.stalls[0].notLaunched, Ranks{3});
  EXPECT_TRUE(r.stalls[0].frozen.empty());
  EXPECT_EQ(notesOn(r, "old.state.json").size(), 1u);
}

TEST(HangInput, AnEarlierJobInTheDirectoryIsANoteNotAStall) {
  JobDir dir;
  // Job 4700 hung 20 minutes ago (its files stopped then, stalled), on the same comm id;
  // job 4711 runs now, healthy.
  for (int r = 0; r < 2; ++r) {
    StateFile s = rankProcess(allReduceRank(r, 2, r == 1 ? 40 : 41, 40, 30.0), 20 * 60 * 1000);
    s.job = "4700";
    s.pid = 500 + r;
    dir.write(s);
  }
  for (int r = 0; r < 2; ++r) {
    StateFile s = rankProcess(allReduceRank(r, 2, 90, 90, 0.5));
    dir.write(s);
  }
  const HangReport r = dir.judge();
  EXPECT_TRUE(r.stalls.empty());
  EXPECT_EQ(r.comms, 1u);
  size_t earlier = 0, jobs = 0;
  for (const std::string& n : r.notes) {
    earlier += n.find(
                   "0xd9 \"dp\") whose every process stopped writing more than 10 min before "
                   "the newest state file: an earlier job's, not judged") != std::string::npos;
    jobs += n.find("from 2 jobs (4700: 2 file(s), 4711: 2 file(s))") != std::string::npos;
  }
  EXPECT_EQ(earlier, 1u);
  EXPECT_EQ(jobs, 1u);
}

TEST(HangInput, AFrozenRankOfTheRunningJobIsNotAnEarlierJob) {
  JobDir dir;
  writeJob(dir);
  // Rank 2 stopped 15 minutes ago, its process holding a comm of its own too.
  StateFile stopped = rankProcess(allReduceRank(2, 4, 41, 40, 1.0), 15 * 60 * 1000);
  CommState own = allReduceRank(0, 1, 3, 3, 1.0);
  own.comm = "0xaa";
  stopped.comms.push_back(own);
  dir.write(stopped);
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_EQ(r.stalls[0].frozen, Ranks{2});
  EXPECT_EQ(r.comms, 2u);
}

TEST(HangInput, ANodeWhoseClockIsAnHourAheadIsJudgedOnItsOwnClock) {
  JobDir dir;
  constexpr int64_t kHour = 3600 * 1000;
  for (int r = 0; r < 4; ++r) {
    StateFile s = rankProcess(allReduceRank(r, 4, r == 3 ? 40 : 41, 40, 6.0));
    if (r >= 2) {  // ranks 2 and 3 on node "ahead"
      s.node = "ahead";
      s.writtenMs += kHour;
      s.nextDueMs += kHour;
    }
    dir.write(s);
  }
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_TRUE(r.stalls[0].frozen.empty());
  EXPECT_EQ(r.stalls[0].notLaunched, Ranks{3});
  EXPECT_EQ(r.stalls[0].stuck, (Ranks{0, 1, 2}));
  EXPECT_EQ(notesOn(r, "node ahead's clock is 3600 s ahead").size(), 1u);
}

TEST(HangInput, ANodeWhoseEveryFileLagsIsFrozenOrItsClockBehind) {
  JobDir dir;
  constexpr int64_t kHour = 3600 * 1000;
  for (int r = 0; r < 4; ++r) {
    StateFile s = rankProcess(allReduceRank(r, 4, 41, 40, 6.0));
    if (r == 1) {
      s.node = "behind";
      s.writtenMs -= kHour;
      s.nextDueMs -= kHour;
    }
    dir.write(s);
  }
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_EQ(r.stalls[0].frozen, Ranks{1});
  EXPECT_TRUE(Contains(r.stalls[0].why, "3600.3 s ago (or behind's clock is 3600.3 s behind)"));
}

TEST(HangInput, FilesGatheredLongAfterAreJudgedAsOfTheNewest) {
  JobDir dir;
  writeJob(dir);
  constexpr int64_t kLater = kNow + 2 * 3600 * 1000;  // read two hours later, without --now
  const HangReport r = dir.judge(std::nullopt, std::nullopt, kLater);
  EXPECT_EQ(r.referenceMs, kNow - 300);
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_TRUE(r.stalls[0].frozen.empty());
  EXPECT_EQ(r.stalls[0].notLaunched, Ranks{3});
  size_t gathered = 0;
  for (const std::string& n : r.notes) gathered += n.find("judged as of the newest") != n.npos;
  EXPECT_EQ(gathered, 1u);
  // With --now the reference is what it says: every rank is then overdue.
  const HangReport asked = dir.judge(kLater);
  EXPECT_EQ(asked.stalls.at(0).frozen, (Ranks{0, 1, 2, 3}));
}

TEST(HangInput, AJobWhoseEveryRankStoppedWritingIsJudgedAsOfItsNewestFile) {
  // The whole job stopped 20 s ago (SIGSTOP on every rank, a node gone, files copied): against
  // the reader's clock every rank is overdue and nothing would be said of where they stood.
  JobDir dir;
  writeJob(dir);
  const HangReport r = dir.judge(std::nullopt, std::nullopt, kNow + 20 * 1000);
  EXPECT_EQ(r.referenceMs, kNow - 300);
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_EQ(r.stalls[0].notLaunched, Ranks{3});
  EXPECT_TRUE(r.stalls[0].frozen.empty());
  size_t stopped = 0;
  for (const std::string& n : r.notes) stopped += n.find("no rank rewrote its state") != n.npos;
  EXPECT_EQ(stopped, 1u);
  // While one rank still writes, the others are frozen against the clock.
  JobDir live;
  writeJob(live);
  StateFile writing = rankProcess(allReduceRank(0, 4, 41, 40, 6.0));
  writing.pid += 100;
  writing.comms[0].comm = "0xabc";  // another communicator of a process still writing
  writing.writtenMs = kNow + 19 * 1000;
  writing.nextDueMs = writing.writtenMs + 1000;
  live.write(writing);
  const HangReport still = live.judge(std::nullopt, std::nullopt, kNow + 20 * 1000);
  EXPECT_EQ(still.referenceMs, kNow + 20 * 1000);
}

TEST(HangInput, StallsPastTheRanksAllListedAreNamedNotJudged) {
  // Two stalled communicators of 4 ranks each, a budget of 6 ranks: the second is named only.
  JobDir dir;
  writeJob(dir);
  for (int r = 0; r < 4; ++r) {
    StateFile s = rankProcess(allReduceRank(r, 4, r == 3 ? 40 : 41, 40, 6.0));
    s.comms[0].comm = "0xee";
    s.pid += 10;
    dir.write(s);
  }
  const HangReport r = dir.judge(kNow, std::nullopt, kNow, 6);
  ASSERT_EQ(r.stalls.size(), 2u);
  EXPECT_EQ(r.stalls[0].comm, "0xd9");
  EXPECT_EQ(r.stalls[0].notLaunched, Ranks{3});
  EXPECT_EQ(r.stalls[1].comm, "0xee");
  EXPECT_TRUE(r.stalls[1].notLaunched.empty() && r.stalls[1].stuck.empty());
  EXPECT_TRUE(Contains(r.stalls[1].why, "not judged: the stalled communicators name more than"));
}

TEST(HangInput, TheStragglerIsTheRankShortestInMostWindowGroups) {
  JobDir dir;
  for (int r = 0; r < 4; ++r) {
    CommState c = allReduceRank(r, 4, 90, 90, 0.1);
    // Rank 2 arrives last: its kernels are 300 us shorter in both groups it shares.
    c.window = {{"AllReduce", kBytes, 10, r == 2 ? 700.0 : 1000.0},
                {"AllGather", 1 << 16, 30, r == 2 ? 100.0 : 400.0}};
    if (r == 3) c.window.push_back({"Broadcast", 64, 5, 10.0});  // on one rank: not compared
    dir.write(rankProcess(c));
  }
  const HangReport r = dir.judge();
  EXPECT_TRUE(r.stalls.empty());
  ASSERT_EQ(r.stragglers.size(), 1u);
  EXPECT_EQ(r.stragglers[0].rank, 2);
  EXPECT_EQ(r.stragglers[0].wins, 2u);
  EXPECT_EQ(r.stragglers[0].compared, 2u);
  EXPECT_NEAR(r.stragglers[0].lostMsPerOp, 0.3, 1e-12);
}

}  // namespace
}  // namespace pilot::cli::hang::testing
