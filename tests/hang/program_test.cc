// The hangs a program makes and the ones a job's end makes, each with its own verdict: a
// collective mismatch (another collective, another size), a Send/Recv cycle, two
// communicators called in opposite orders (blocking calls and PyTorch's enqueued ones), a job
// killed as a whole, and what this host sees of a rank's process (stopped, dead, its pid
// reused) through a /proc the test writes.
#include <unistd.h>

#include <gtest/gtest.h>

#include "hang/report.h"
#include "hang/watch.h"
#include "hang_test_support.h"

namespace pilot::cli::hang::testing {
namespace {

using Ranks = std::vector<int>;

/// `c` with a collective `op` in flight as its oldest: `launched` of that kind, one not done,
/// waiting `waitS`; `started`: the kernel channels of it that started.
CommState inFlight(CommState c, const std::string& op, uint64_t launched, uint64_t bytes,
                   double waitS, std::vector<int> started = {0, 1}) {
  c.ops[op] = {launched, launched - 1};
  InFlight o;
  static_cast<OpRef&>(o) = OpRef{op, launched - 1, bytes, -1, waitS};
  o.channels = 2;
  o.started = std::move(started);
  c.oldest = o;
  c.last = static_cast<OpRef&>(o);
  c.inFlight = 1;
  c.waitingS = waitS;
  c.stalled = waitS >= kStallS;
  return c;
}

TEST(HangProgram, ARankInAnotherCollectiveIsAMismatchNotElsewhere) {
  JobDir dir;
  for (int r = 0; r < 4; ++r) {
    CommState c = allReduceRank(r, 4, r == 3 ? 20 : 21, 20, 6.0);
    if (r == 3) c = inFlight(c, "AllGather", 1, 8 << 20, 6.0);
    dir.write(rankProcess(c));
  }
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  const Stall& s = r.stalls[0];
  EXPECT_EQ(s.kind, "mismatch");
  EXPECT_EQ(s.mismatched, Ranks{3});
  EXPECT_EQ(s.suspects, Ranks{3});
  EXPECT_TRUE(s.notLaunched.empty());
  EXPECT_TRUE(Contains(s.why,
                       "rank 3 waits in AllGather #0 (8 MiB) on comm dp where the other 3 wait "
                       "in AllReduce #20 (4 MiB): the ranks called different collectives"));
}

TEST(HangProgram, ARankWithAnotherSizeIsASizeMismatch) {
  JobDir dir;
  for (int r = 0; r < 4; ++r) {
    CommState c = allReduceRank(r, 4, 41, 40, 6.0);
    if (r == 1) c.oldest->bytes = 8 << 20;
    dir.write(rankProcess(c));
  }
  const Stall s = dir.judge().stalls.at(0);
  EXPECT_EQ(s.kind, "mismatch");
  EXPECT_EQ(s.suspects, Ranks{1});
  EXPECT_EQ(s.bytes, kBytes);  // the size most ranks give
  EXPECT_TRUE(Contains(s.why,
                       "rank 1 waits in AllReduce #40 with 8 MiB on comm dp where the "
                       "other 3 wait in AllReduce #40 with 4 MiB: a size mismatch"));
}

TEST(HangProgram, TwoRanksReceivingFromEachOtherAreACycleAndBothAreNamed) {
  JobDir dir;
  for (int r = 0; r < 4; ++r) {
    CommState c = allReduceRank(r, 4, 0, 0, 0);
    c.comm = "0x99";
    c.commName = "pp";
    if (r == 2 || r == 3) {
      const int peer = r == 2 ? 3 : 2;
      c.recvs[peer] = {1, 0};
      InFlight recv;
      static_cast<OpRef&>(recv) = OpRef{"Recv", 0, 1 << 20, peer, 7.0};
      c.oldest = recv;
      c.last = static_cast<OpRef&>(recv);
      c.inFlight = 1;
      c.waitingS = 7.0;
      c.stalled = true;
    }
    dir.write(rankProcess(c));
  }
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  const Stall& s = r.stalls[0];
  EXPECT_EQ(s.kind, "p2p_cycle");
  EXPECT_EQ(s.cycle, (Ranks{2, 3}));
  EXPECT_EQ(s.suspects, (Ranks{2, 3}));
  EXPECT_TRUE(Contains(s.why,
                       "rank 2 waits in Recv #0 from rank 3, rank 3 waits in Recv #0 "
                       "from rank 2"));
  EXPECT_TRUE(Contains(s.why, "Send/Recv order cycle"));
}

/// 8 processes holding "tp" and "dp"; rank 5 runs dp first, the others tp. `enqueued`: every
/// rank launched both, the second queued behind the first (no channel started); else each
/// blocks in its first and never launched its second.
void writeOrderJob(JobDir& dir, bool enqueued) {
  for (int r = 0; r < 8; ++r) {
    CommState tp = allReduceRank(r, 8, 20, 20, 9.0);
    tp.comm = "0x7a";
    tp.commName = "tp";
    CommState dp = allReduceRank(r, 8, 20, 20, 9.0);
    const bool dpFirst = r == 5;
    CommState& first = dpFirst ? dp : tp;
    CommState& second = dpFirst ? tp : dp;
    first = inFlight(first, "AllReduce", 21, kBytes, 6.0);
    if (enqueued) second = inFlight(second, "AllReduce", 21, kBytes, 6.0, {});
    StateFile p = process("n" + std::to_string(r / 4), 100 + r);
    p.comms = {tp, dp};
    dir.write(p);
  }
}

void expectOrderVerdict(const HangReport& r) {
  ASSERT_EQ(r.stalls.size(), 2u);
  for (const Stall& s : r.stalls) {
    EXPECT_EQ(s.kind, "order") << s.commName;
    EXPECT_EQ(s.suspects, Ranks{5}) << s.commName;
    EXPECT_TRUE(Contains(s.why,
                         "rank 5 runs dp AllReduce #20 before tp AllReduce #20 while the "
                         "other 7 ranks run tp first"));
    EXPECT_TRUE(Contains(s.why, "pid 105 on n1"));
  }
}

TEST(HangProgram, TwoCommunicatorsCalledInOppositeOrdersWithBlockingCallsNameTheOddRank) {
  JobDir dir;
  writeOrderJob(dir, false);
  expectOrderVerdict(dir.judge());
}

TEST(HangProgram, TwoCommunicatorsCalledInOppositeOrdersWithEnqueuedCallsNameTheOddRank) {
  JobDir dir;
  writeOrderJob(dir, true);
  expectOrderVerdict(dir.judge());
}

TEST(HangProgram, AJobKilledAsAWholeIsJudgedAsOfItsLastWrites) {
  // Rank 3 never launched AllReduce #40 and computes (its state due every 30 s, last written
  // 10 s before the kill); the others wait in it (due every second). The whole job is killed
  // at kNow; `hang` runs 4 to 27 s later, while rank 3's promise has not yet run out.
  for (int64_t after : {4000, 10000, 27000}) {
    JobDir dir;
    for (int r = 0; r < 4; ++r) {
      StateFile s = rankProcess(allReduceRank(r, 4, r == 3 ? 40 : 41, 40, 6.0), 0);
      if (r == 3) {
        s.writtenMs = kNow - 10000;
        s.nextDueMs = s.writtenMs + 30000;
      }
      dir.write(s);
    }
    const HangReport r = dir.judge(std::nullopt, std::nullopt, kNow + after);
    ASSERT_EQ(r.stalls.size(), 1u) << after;
    EXPECT_EQ(r.stalls[0].suspects, Ranks{3}) << after;
    EXPECT_TRUE(r.stalls[0].frozen.empty()) << after;
    EXPECT_EQ(r.referenceMs, kNow) << after;
  }
}

/// A /proc of this test's own: btime, and per pid a stat line with `state` and a start time.
class FakeProc {
 public:
  explicit FakeProc(JobDir& dir) : dir_(dir) {
    dir_.writeText("proc/stat", "cpu 1 2 3\nbtime " + std::to_string(kNow / 1000 - 1000) + "\n");
    dir.probe.hostName = "n0";
    dir.probe.procRoot = dir.path() + "/proc";
  }
  /// `startedS`: seconds after boot (1000 s before kNow).
  void process(int64_t pid, char state, double startedS = 10) {
    const long ticks = ::sysconf(_SC_CLK_TCK);
    std::string stat = std::to_string(pid) + " (python3 (rank)) " + state;
    for (int field = 4; field <= 21; ++field) stat += " 0";
    stat += " " + std::to_string(static_cast<int64_t>(startedS * ticks)) + " 0 0\n";
    dir_.writeText("proc/" + std::to_string(pid) + "/stat", stat);
  }

 private:
  JobDir& dir_;
};

/// Rank 2 of 4 stopped refreshing its state 8 s ago; the others' processes live (in `proc`).
void writeStoppedRank(JobDir& dir, FakeProc* proc = nullptr) {
  for (int r = 0; r < 4; ++r) {
    const bool stopped = r == 2;
    dir.write(rankProcess(allReduceRank(r, 4, 41, 40, stopped ? 1.0 : 9.0), stopped ? 8000 : 300));
    if (proc != nullptr && !stopped) proc->process(100 + r, 'S');
  }
}

TEST(HangProgram, ThisHostTellsAStoppedRankFromADeadOne) {
  {
    JobDir dir;
    FakeProc proc(dir);
    writeStoppedRank(dir, &proc);
    proc.process(102, 'T');
    const Stall s = dir.judge().stalls.at(0);
    EXPECT_EQ(s.kind, "frozen");
    EXPECT_EQ(rankOf(s, 2).fate, "stopped");
    EXPECT_TRUE(Contains(s.why, "its process (pid 102 on n0) is stopped (state T"));
  }
  {
    JobDir dir;
    FakeProc proc(dir);  // no /proc/102: gone
    writeStoppedRank(dir, &proc);
    const Stall s = dir.judge().stalls.at(0);
    EXPECT_EQ(s.kind, "dead");
    EXPECT_TRUE(Contains(s.why, "its process (pid 102 on n0) is gone (dead"));
  }
  {
    JobDir dir;
    FakeProc proc(dir);
    writeStoppedRank(dir, &proc);
    proc.process(102, 'S', 1000 + 60);  // started after the rank's last write: another process
    EXPECT_EQ(dir.judge().stalls.at(0).kind, "dead");
  }
  {
    JobDir dir;  // another host: it cannot tell
    writeStoppedRank(dir);
    const Stall s = dir.judge().stalls.at(0);
    EXPECT_EQ(s.kind, "frozen");
    EXPECT_TRUE(Contains(s.why, "dead or frozen"));
  }
}

TEST(HangProgram, ARankThatDiedBeforeLaunchingHasNoStackToLookAt) {
  JobDir dir;
  FakeProc proc(dir);
  for (int r = 0; r < 4; ++r) {
    StateFile s = rankProcess(allReduceRank(r, 4, r == 3 ? 40 : 41, 40, 6.0));
    if (r == 3) s.nextDueMs = s.writtenMs + 30000;  // idle: due every export interval
    dir.write(s);
    if (r != 3) proc.process(100 + r, 'S');
  }
  const Stall s = dir.judge().stalls.at(0);
  EXPECT_EQ(s.kind, "dead");
  EXPECT_EQ(s.suspects, Ranks{3});
  EXPECT_TRUE(Contains(s.why,
                       "rank 3 never launched AllReduce #40 on comm dp: its process (pid "
                       "103 on n0) is gone"));
  EXPECT_EQ(s.why.find("py-spy"), std::string::npos);
}

/// 8 ranks all in AllReduce #40 (every rank launched it: a network stall); ranks 4-7 on node
/// n1, whose clock runs 20 s behind; rank 2 stopped 5 s ago. `at`: this machine's time.
void writeSkewedJob(JobDir& dir, int64_t at, bool rank2Too) {
  for (int r = 0; r < 8; ++r) {
    if (r == 2 && !rank2Too) continue;
    StateFile s = process(r < 4 ? "n0" : "n1", 100 + r);
    s.comms.push_back(allReduceRank(r, 8, 41, 40, 9.0));
    s.writtenMs = at - 200 - (r >= 4 ? 20000 : 0) - (r == 2 ? 5000 : 0);
    s.nextDueMs = s.writtenMs + 1000;
    dir.write(s);
  }
}

TEST(HangProgram, AWatchTellsAFrozenRankFromANodeWhoseClockIsBehind) {
  JobDir dir;
  writeSkewedJob(dir, kNow, true);
  // One reading: n1's healthy ranks look frozen, as old as its clock is behind.
  const HangReport once = dir.judge(std::nullopt, std::nullopt, kNow);
  ASSERT_EQ(once.stalls.size(), 1u);
  EXPECT_EQ(once.stalls[0].frozen, (Ranks{2, 4, 5, 6, 7}));

  // Watched: every writer but rank 2 rewrites its file when due.
  int64_t clock = kNow;
  int64_t slept = 0;
  HangOptions o;
  const Watched w = judgeWatching(
      {dir.path()}, o, [&] { return clock; },
      [&](int64_t ms) {
        slept = ms;
        clock += ms;
        writeSkewedJob(dir, clock, false);
      });
  EXPECT_TRUE(w.looked);
  EXPECT_EQ(slept, kMostWatchMs);
  ASSERT_EQ(w.report.stalls.size(), 1u);
  const Stall& s = w.report.stalls[0];
  EXPECT_EQ(s.frozen, Ranks{2});
  EXPECT_EQ(s.suspects, Ranks{2});
  EXPECT_EQ(s.kind, "frozen");
  size_t behind = 0;
  for (const std::string& n : w.report.notes)
    behind += n.find("node n1's clock is 20 s behind") != n.npos;
  EXPECT_EQ(behind, 1u);

  // Files nobody rewrites (gathered, or --now): one reading, no watch.
  o.nowMs = kNow;
  const Watched fixed = judgeWatching(
      {dir.path()}, o, [&] { return clock; }, [&](int64_t) { ADD_FAILURE() << "watched"; });
  EXPECT_FALSE(fixed.looked);
}

TEST(HangProgram, NoStragglerBeforeAnyWindowClosedIsNotMeasuredYet) {
  JobDir dir;
  for (int r = 0; r < 4; ++r) dir.write(rankProcess(allReduceRank(r, 4, 41, 41, 1.0)));
  const HangReport r = dir.judge();
  EXPECT_EQ(r.measured, 0u);
  EXPECT_TRUE(Contains(reportText(r), "stragglers: not measured yet"));
}

}  // namespace
}  // namespace pilot::cli::hang::testing
