// The verdict on state files the test writes, one case per way a job hangs: a rank that never
// launched the operation (a collective, and the peer of a Send), a frozen rank, every rank
// stuck with the network's progress named, a rank that wrote nothing, a rank that finalized,
// and a healthy job that waits long in compute.
#include <gtest/gtest.h>

#include "hang_test_support.h"

namespace pilot::cli::hang::testing {
namespace {

using Ranks = std::vector<int>;

/// Ranks 0..n-1 of "dp" each with 41 AllReduces launched, 40 done (#40 in flight for 6 s),
/// but the ranks in `behind`, which launched 40 and completed them 6 s ago.
void writeAllReduceJob(JobDir& dir, int n, const Ranks& behind) {
  for (int r = 0; r < n; ++r) {
    const bool late = std::find(behind.begin(), behind.end(), r) != behind.end();
    dir.write(rankProcess(allReduceRank(r, n, late ? 40 : 41, 40, 6.0)));
  }
}

TEST(HangVerdict, ARankThatNeverLaunchedTheCollectiveIsTheSuspect) {
  JobDir dir;
  writeAllReduceJob(dir, 4, {3});
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  const Stall& s = r.stalls[0];
  EXPECT_EQ(s.comm, "0xd9");
  EXPECT_EQ(s.commName, "dp");
  EXPECT_EQ(s.op, "AllReduce");
  EXPECT_EQ(s.seq, 40u);
  EXPECT_EQ(s.bytes, kBytes);
  EXPECT_NEAR(s.stalledS, 6.3, 1e-9);  // waiting_s + the file's age (0.3 s)
  EXPECT_EQ(s.notLaunched, Ranks{3});
  EXPECT_EQ(s.stuck, (Ranks{0, 1, 2}));
  EXPECT_TRUE(s.frozen.empty() && s.missing.empty() && s.finalized.empty());
  EXPECT_EQ(s.suspects, Ranks{3});
  EXPECT_TRUE(Contains(s.why,
                       "rank 3 never launched AllReduce #40 on comm dp: its last "
                       "operation there was AllReduce #39, 6.3 s ago"));
  EXPECT_TRUE(Contains(s.why, "py-spy dump --pid 103 on n0)"));
  EXPECT_FALSE(rankOf(s, 3).launched);
  EXPECT_TRUE(rankOf(s, 0).launched);
}

TEST(HangVerdict, APeerThatNeverPostedItsRecvIsTheSuspectOfAStuckSend) {
  JobDir dir;
  CommState sender = allReduceRank(0, 3, 0, 0, 0);
  sender.comm = "0x99";
  sender.commName = "pp";
  sender.sends[1] = {6, 5};  // Send #5 to rank 1 in flight
  InFlight send;
  static_cast<OpRef&>(send) = OpRef{"Send", 5, 1 << 20, 1, 9.0};
  sender.oldest = send;
  sender.last = OpRef{"Send", 5, 1 << 20, 1, 9.0};
  sender.inFlight = 1;
  sender.waitingS = 9.0;
  sender.stalled = true;
  CommState receiver = sender;
  receiver.rank = 1;
  receiver.sends.clear();
  receiver.recvs[0] = {5, 5};  // it took #0..#4, never posted #5
  receiver.oldest.reset();
  receiver.last = OpRef{"Send", 4, 1 << 20, 2, 12.0};
  receiver.inFlight = 0;
  receiver.waitingS = 0;
  receiver.stalled = false;
  CommState bystander = receiver;
  bystander.rank = 2;
  bystander.recvs = {{1, {5, 5}}};
  for (const CommState& c : {sender, receiver, bystander}) dir.write(rankProcess(c));

  HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  const Stall& s = r.stalls[0];
  EXPECT_EQ(s.op, "Send");
  EXPECT_EQ(s.seq, 5u);
  EXPECT_EQ(s.sender, 0);
  EXPECT_EQ(s.receiver, 1);
  EXPECT_EQ(s.notLaunched, Ranks{1});
  EXPECT_EQ(s.stuck, Ranks{0});
  EXPECT_EQ(s.suspects, Ranks{1});
  EXPECT_EQ(rankOf(s, 2).state, RankState::Uninvolved);
  EXPECT_TRUE(Contains(s.why,
                       "rank 1 never launched Recv #5 from rank 0 on comm pp (rank 0 "
                       "waits in Send #5 to rank 1): its last operation there was Send "
                       "#4 to rank 2, 12.3 s ago"));

  // Once the receiver posted it, both sides are stuck and the network is to blame.
  receiver.recvs[0] = {6, 5};
  dir.write(rankProcess(receiver));
  r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_TRUE(r.stalls[0].notLaunched.empty());
  EXPECT_EQ(r.stalls[0].stuck, (Ranks{0, 1}));
  EXPECT_TRUE(Contains(r.stalls[0].why,
                       "both sides of Send #5 to rank 1 on comm pp were "
                       "launched and none finishes"));
}

TEST(HangVerdict, ARankWhoseStateStoppedIsFrozen) {
  JobDir dir;
  for (int r = 0; r < 4; ++r) {
    const bool stopped = r == 2;  // SIGSTOPped 8 s ago, after it launched #40
    dir.write(rankProcess(allReduceRank(r, 4, 41, 40, stopped ? 1.0 : 9.0), stopped ? 8000 : 300));
  }
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  const Stall& s = r.stalls[0];
  EXPECT_EQ(s.frozen, Ranks{2});
  EXPECT_EQ(s.stuck, (Ranks{0, 1, 3}));
  EXPECT_TRUE(s.notLaunched.empty());
  EXPECT_EQ(s.suspects, Ranks{2});
  EXPECT_NEAR(s.stalledS, 9.3, 1e-9);  // the live ranks' wait, not the frozen one's
  EXPECT_TRUE(Contains(s.why,
                       "rank 2 stopped refreshing its state 8.0 s ago while the others "
                       "wait in AllReduce #40 on comm dp (it had launched it): dead or "
                       "frozen (the process stopped, died or is wedged, or its host is gone; "
                       "this host cannot see it) — check rank 2's process (pid 102 on n0) "
                       "and host"));
  EXPECT_EQ(s.kind, "frozen");
  EXPECT_EQ(rankOf(s, 2).behindS, 0);  // n0's other files are fresh: no clock to blame

  // Within the grace after its next write was due, it is not frozen yet.
  dir.write(rankProcess(allReduceRank(2, 4, 41, 40, 1.0), 2900));
  EXPECT_TRUE(dir.judge().stalls.at(0).frozen.empty());
}

TEST(HangVerdict, ARankStoppedBeforeItsFileShowedItsLaunchesIsFrozen) {
  // Rank 2 wrote its state at init (nothing launched, next write due in 30 s), then launched
  // #0..#40 within a second and was stopped before its writer ran again: its file still says
  // "nothing launched", but the others completed #0..#39 with it, the last 6 s ago.
  JobDir dir;
  writeAllReduceJob(dir, 4, {});
  StateFile stopped = rankProcess(allReduceRank(2, 4, 0, 0, 0), 7000);
  stopped.nextDueMs = stopped.writtenMs + 30000;
  dir.write(stopped);
  HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_EQ(r.stalls[0].frozen, Ranks{2});
  EXPECT_TRUE(r.stalls[0].notLaunched.empty());
  EXPECT_EQ(r.stalls[0].suspects, Ranks{2});
  EXPECT_TRUE(Contains(r.stalls[0].why,
                       "rank 2 stopped refreshing its state 7.0 s ago while the "
                       "others wait in AllReduce #40 on comm dp (it wrote its "
                       "state before operations the others completed with it "
                       "6.3 s ago)"));
  // Their completions only a second old: its writer is not late yet, so its file is believed.
  for (int rank : {0, 1, 3}) dir.write(rankProcess(allReduceRank(rank, 4, 41, 40, 1.0)));
  r = dir.judge({}, 0.5);
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_EQ(r.stalls[0].notLaunched, Ranks{2});
  EXPECT_TRUE(r.stalls[0].frozen.empty());
}

TEST(HangVerdict, EveryRankStuckNamesTheTransferWithTheLeastProgress) {
  JobDir dir;
  for (int r = 0; r < 4; ++r) {
    CommState c = allReduceRank(r, 4, 41, 40, 30.0);
    // Every transfer but those with rank 3 finished its steps; rank 2's receive from 3 is
    // the furthest behind.
    c.oldest->proxy = {{0, (r + 1) % 4, true, 8, 8}, {1, (r + 3) % 4, false, r == 0 ? 5 : 8, 8}};
    if (r == 2) c.oldest->proxy.push_back({2, 3, false, 2, 8});
    if (r == 1) c.oldest->proxy.push_back({3, 0, false, -1, 8});  // unknown steps: not ranked
    dir.write(rankProcess(c));
  }
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  const Stall& s = r.stalls[0];
  EXPECT_EQ(s.stuck, (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(s.suspects, (Ranks{2, 3}));
  EXPECT_TRUE(Contains(s.why,
                       "every rank launched AllReduce #40 on comm dp and none finishes: "
                       "the least progress is rank 2 receiving from rank 3 on channel 2 "
                       "(2 of 8 steps) — check the network between rank 2 (n0) and "
                       "rank 3 (n0)"));
}

TEST(HangVerdict, WithoutStepCountsTheOpenTransfersAreTheSuspects) {
  // NCCL_PILOT_METRICS_PROXY=ops: no steps, but every transfer that finished is closed.
  JobDir dir;
  for (int r = 0; r < 4; ++r) {
    CommState c = allReduceRank(r, 4, 41, 40, 30.0);
    if (r == 2) c.oldest->proxy = {{0, 3, true, -1, 8}};
    if (r == 3) c.oldest->proxy = {{0, 2, false, -1, 8}};
    dir.write(rankProcess(c));
  }
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_EQ(r.stalls[0].suspects, (Ranks{2, 3}));
  EXPECT_TRUE(Contains(r.stalls[0].why,
                       "and none finishes: still open is rank 2 sending to rank "
                       "3 on channel 0 and 1 more transfer(s) — check the network between "
                       "rank 2 (n0) and rank 3 (n0)"));
}

TEST(HangVerdict, EveryRankStuckWithoutProxyEntriesSuspectsNobody) {
  JobDir dir;
  writeAllReduceJob(dir, 3, {});
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  EXPECT_TRUE(r.stalls[0].suspects.empty());
  EXPECT_TRUE(Contains(r.stalls[0].why, "NCCL_PILOT_METRICS_PROXY=steps"));
}

TEST(HangVerdict, ARankWithNoStateIsMissing) {
  JobDir dir;
  for (int r = 0; r < 3; ++r) {  // the comm has 5 ranks: 3 and 4 wrote nothing
    CommState c = allReduceRank(r, 5, 41, 40, 6.0);
    dir.write(rankProcess(c));
  }
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  const Stall& s = r.stalls[0];
  EXPECT_EQ(s.missing, (Ranks{3, 4}));
  EXPECT_EQ(s.suspects, (Ranks{3, 4}));
  EXPECT_TRUE(Contains(s.why,
                       "ranks 3 and 4 of comm dp wrote no state and no summary says "
                       "they finalized it, while the others wait in AllReduce #40"));
}

TEST(HangVerdict, ARankThatFinalizedTheCommIsNotMissing) {
  JobDir dir;
  for (int r = 0; r < 3; ++r) dir.write(rankProcess(allReduceRank(r, 4, 41, 40, 6.0)));
  dir.writeText("nccl_pilot_n1_77.jsonl",
                R"({"kind":"process","node":"n1","pid":77})"
                "\n"
                R"({"kind":"communicator","comm":"0xd9","comm_name":"dp","rank":3,"nranks":4,)"
                R"("node":"n1","pid":77,"finalized":true,"seen":40})"
                "\n");
  const HangReport r = dir.judge();
  ASSERT_EQ(r.stalls.size(), 1u);
  const Stall& s = r.stalls[0];
  EXPECT_TRUE(s.missing.empty());
  EXPECT_EQ(s.finalized, Ranks{3});
  EXPECT_EQ(s.suspects, Ranks{3});
  EXPECT_EQ(rankOf(s, 3).node, "n1");
  EXPECT_EQ(r.summaries, 1u);
  EXPECT_TRUE(Contains(s.why,
                       "rank 3 finalized (destroyed) comm dp while the others wait in "
                       "AllReduce #40 on it"));
}

TEST(HangVerdict, AHealthyJobWaitingLongInComputeIsNoStall) {
  JobDir dir;
  for (int r = 0; r < 4; ++r) {
    StateFile s = rankProcess(allReduceRank(r, 4, 40, 40, 600.0));  // 10 min since the last
    s.nextDueMs = s.writtenMs + 30000;  // idle: written at the export interval
    dir.write(s);
  }
  EXPECT_TRUE(dir.judge().stalls.empty());
  // In flight, but for less than the threshold: still no stall.
  writeAllReduceJob(dir, 4, {});
  EXPECT_TRUE(dir.judge({}, 10.0).stalls.empty());
  EXPECT_EQ(dir.judge({}, 5.0).stalls.size(), 1u);  // --stall-s below the wait
}

}  // namespace
}  // namespace pilot::cli::hang::testing
