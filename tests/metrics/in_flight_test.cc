// What a communicator launched and waits for (metrics/in_flight.h), through the event path as
// NCCL's events reach it: numbering per kind (NCCL's seqNumber) and per Send/Recv peer, the
// oldest operation in flight and its channels, completions in launch order, operations that are
// sampled out or too small followed all the same, and the ring's overflow.
#include <gtest/gtest.h>

#include "event_helpers.h"
#include "pilot/metrics/in_flight.h"
#include "pilot/metrics/state_file.h"

namespace pilot::metrics {
namespace {

using events::kStart;

struct Released {
  void operator()(CommMonitor* m) const { m->release(); }
};
using MonitorRef = std::unique_ptr<CommMonitor, Released>;

MonitorRef monitor(int nRanks = 4, int rank = 0, uint64_t sample = 1, uint64_t minBytes = 0) {
  MetricsSettings settings;
  settings.enabled = true;
  settings.sample = sample;
  settings.minBytes = minBytes;
  CommIdentity id;
  id.nRanks = nRanks;
  id.rank = rank;
  return MonitorRef(new CommMonitor(id, settings, {}));
}

void finish(EventPath& path, void* task, unsigned channels) {
  for (unsigned c = 0; c < channels; ++c) {
    ASSERT_TRUE(events::runChannel(path, task, c, kStart, 1000));
  }
}

TEST(InFlight, CollectivesAreNumberedPerKindAndTheOldestUnfinishedIsNamed) {
  EventPath path;
  ASSERT_TRUE(path.reserve(64));
  MonitorRef comm = monitor();
  for (int i = 0; i < 3; ++i) {
    void* t = events::startAllReduce(path, *comm, 2, i);
    path.stop(t);
    finish(path, t, 2);
  }
  CollEvent gather;
  gather.func = "AllGather";
  gather.count = 1024;
  gather.datatype = "ncclFloat32";
  gather.nChannels = 2;
  gather.algo = "RING";
  gather.proto = "SIMPLE";
  void* ag = path.startCollective(*comm, gather);
  path.stop(ag);
  // The 4th all-reduce (#3) is launched behind it; one channel of the all-gather started.
  void* ar = events::startAllReduce(path, *comm, 2, 3);
  path.stop(ar);
  void* k = path.startKernelChannel(ag, 5, kStart);
  ASSERT_NE(k, nullptr);

  InFlightView v = comm->inFlight().view();
  EXPECT_EQ(v.kinds[static_cast<int>(Operation::AllReduce)].launched, 4u);
  EXPECT_EQ(v.kinds[static_cast<int>(Operation::AllReduce)].done, 3u);
  EXPECT_EQ(v.kinds[static_cast<int>(Operation::AllGather)].launched, 1u);
  EXPECT_EQ(v.kinds[static_cast<int>(Operation::AllGather)].done, 0u);
  EXPECT_EQ(v.inFlight, 2u);
  ASSERT_TRUE(v.hasOldest);
  EXPECT_EQ(v.oldest.op, Operation::AllGather);
  EXPECT_EQ(v.oldest.seq, 0u);
  EXPECT_EQ(v.oldest.bytes, 4096u);
  EXPECT_EQ(v.oldest.channels, 2u);
  uint64_t started = 0, stopped = 0;
  EXPECT_TRUE(path.channelsOf(v.oldest.task, &started, &stopped));
  EXPECT_EQ(started, uint64_t{1} << 5);
  EXPECT_EQ(stopped, 0u);
  ASSERT_TRUE(v.hasLast);
  EXPECT_EQ(v.last.op, Operation::AllReduce);
  EXPECT_EQ(v.last.seq, 3u);
  EXPECT_NE(v.lastDoneNs, 0u);

  // The later all-reduce completing means the all-gather before it did (one stream).
  finish(path, ar, 2);
  v = comm->inFlight().view();
  EXPECT_EQ(v.inFlight, 0u);
  EXPECT_FALSE(v.hasOldest);
  EXPECT_EQ(v.kinds[static_cast<int>(Operation::AllGather)].done, 1u);
  // The all-gather's channels report late; its slot, and the monitor, come back.
  path.recordKernelChannelStop(k, kStart + 10);
  path.stop(k);
  ASSERT_TRUE(events::runChannel(path, ag, 6, kStart, 10));
  EXPECT_EQ(path.slotsInUse(), 0u);
}

TEST(InFlight, SendAndRecvAreNumberedPerPeer) {
  EventPath path;
  ASSERT_TRUE(path.reserve(64));
  MonitorRef comm = monitor(8, 3);
  // Two sends to rank 5, one to rank 1, one recv from rank 2; the second send to 5 hangs.
  std::vector<void*> done;
  for (auto [func, peer] : {std::pair{"Send", 5}, {"Send", 1}, {"Recv", 2}}) {
    void* t = events::startSendRecv(path, *comm, func, peer, nullptr);
    path.stop(t);
    finish(path, t, 1);
  }
  void* hung = events::startSendRecv(path, *comm, "Send", 5, nullptr);
  path.stop(hung);
  const InFlightView v = comm->inFlight().view();
  ASSERT_TRUE(v.hasOldest);
  EXPECT_EQ(v.oldest.op, Operation::Send);
  EXPECT_EQ(v.oldest.peer, 5);
  EXPECT_EQ(v.oldest.seq, 1u);  // the second Send to rank 5
  ASSERT_EQ(v.sends.size(), 2u);
  EXPECT_EQ(v.sends[0].first, 1);
  EXPECT_EQ(v.sends[0].second.launched, 1u);
  EXPECT_EQ(v.sends[1].first, 5);
  EXPECT_EQ(v.sends[1].second.launched, 2u);
  EXPECT_EQ(v.sends[1].second.done, 1u);
  ASSERT_EQ(v.recvs.size(), 1u);
  EXPECT_EQ(v.recvs[0].first, 2);
  EXPECT_EQ(v.recvs[0].second.done, 1u);
  finish(path, hung, 1);
}

TEST(InFlight, SampledOutAndSmallOperationsAreFollowedButNotMeasured) {
  EventPath path;
  ASSERT_TRUE(path.reserve(64));
  MonitorRef comm = monitor(4, 0, /*sample=*/2, /*minBytes=*/1 << 20);
  void* small = events::startAllReduce(path, *comm, 1, 0, 16);
  ASSERT_NE(small, nullptr);  // followed to its completion
  path.stop(small);
  EXPECT_EQ(comm->inFlight().view().inFlight, 1u);
  finish(path, small, 1);
  void* sampledOut = events::startAllReduce(path, *comm, 1, 1, 1 << 20);
  ASSERT_NE(sampledOut, nullptr);
  path.stop(sampledOut);
  finish(path, sampledOut, 1);
  const InFlightView v = comm->inFlight().view();
  EXPECT_EQ(v.inFlight, 0u);
  EXPECT_EQ(v.kinds[static_cast<int>(Operation::AllReduce)].launched, 2u);
  EXPECT_EQ(comm->measured(), 0u);
  EXPECT_EQ(comm->skipped(Skip::BelowMinBytes), 1u);
  EXPECT_EQ(comm->skipped(Skip::SampledOut), 1u);
  EXPECT_TRUE(comm->keys().empty());
  EXPECT_EQ(path.slotsInUse(), 0u);
}

TEST(InFlight, AnOperationWithoutChannelsIsNeverWaitedFor) {
  EventPath path;
  ASSERT_TRUE(path.reserve(64));
  MonitorRef comm = monitor();
  EXPECT_EQ(events::startAllReduce(path, *comm, 0), nullptr);
  const InFlightView v = comm->inFlight().view();
  EXPECT_EQ(v.inFlight, 0u);
  EXPECT_EQ(v.kinds[static_cast<int>(Operation::AllReduce)].launched, 1u);
  EXPECT_EQ(v.kinds[static_cast<int>(Operation::AllReduce)].done, 1u);
  EXPECT_TRUE(v.hasLast);
  EXPECT_EQ(waitingSeconds(v, monotonicNs() + 1000000000000ull), 0.0);
}

TEST(InFlight, MoreInFlightThanTheRingKeepsIsCountedAndTheOldestKeptIsNamed) {
  InFlightLog log(4);
  const unsigned n = InFlightLog::kRing + 10;
  for (unsigned i = 0; i < n; ++i) log.launch(Operation::AllReduce, 8, -1, 1, 100 + i);
  const InFlightView v = log.view();
  EXPECT_TRUE(v.overflow);
  EXPECT_EQ(v.inFlight, n);
  ASSERT_TRUE(v.hasOldest);
  EXPECT_EQ(v.oldest.seq, n - InFlightLog::kRing);
  log.complete(n, 5000);
  EXPECT_EQ(log.view().inFlight, 0u);
  EXPECT_FALSE(log.view().overflow);
}

TEST(InFlight, WaitingCountsFromTheLaterOfTheLastCompletionAndTheOldestLaunch) {
  InFlightLog log(2);
  const uint64_t first = log.launch(Operation::AllReduce, 8, -1, 1, 1'000'000'000);
  log.launch(Operation::AllReduce, 8, -1, 1, 2'000'000'000);
  log.complete(first, 5'000'000'000);
  // The second was launched at 2 s; the first completed at 5 s: waiting since 5 s.
  EXPECT_DOUBLE_EQ(waitingSeconds(log.view(), 8'000'000'000), 3.0);
}

TEST(StateFile, RendersWhatARankWaitsFor) {
  InFlightLog log(8);
  log.launch(Operation::AllReduce, 4096, -1, 2, 1'000'000'000);
  log.launch(Operation::Send, 64, 5, 1, 1'500'000'000);
  StateReport r;
  r.node = "n1";
  r.pid = 7;
  r.writtenMs = 1000;
  r.nextDueMs = 2000;
  r.stallSeconds = 2;
  StateComm c;
  c.identity.commId = 0xabc;
  c.identity.name = "dp";
  c.identity.rank = 3;
  c.identity.nRanks = 8;
  c.live.view = log.view();
  c.live.view.oldest.started = 1;  // channel 0 (the exporter reads it from the slot's lanes)
  c.live.nowNs = 4'000'000'000;
  c.live.waitingS = waitingSeconds(c.live.view, c.live.nowNs);
  c.live.stalled = true;
  r.comms.push_back(c);
  const std::string text = renderState(r);
  EXPECT_NE(text.find("\"format\":\"nccl-pilot-state\",\"version\":1"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ops\":{\"AllReduce\":[1,0]}"), std::string::npos) << text;
  EXPECT_NE(text.find("\"sends\":{\"5\":[1,0]}"), std::string::npos) << text;
  EXPECT_NE(text.find("\"oldest\":{\"op\":\"AllReduce\",\"seq\":0,\"bytes\":4096,\"peer\":-1,"
                      "\"age_s\":3,\"channels\":2,\"started\":[0],\"stopped\":[]}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"waiting_s\":3,\"stalled\":true"), std::string::npos) << text;
  EXPECT_NE(text.find("\"last\":{\"op\":\"Send\",\"seq\":0,\"bytes\":64,\"peer\":5"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\n'), text.size() - 1);
}

}  // namespace
}  // namespace pilot::metrics
