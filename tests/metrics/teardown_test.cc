// Teardown in every form gives back what it held (metrics/event_path.h, group_table.h): a
// communicator finalized with tasks in flight (NCCL aborted it, or its kernels never reported),
// events that come after that, a thread that exits with a group open, and the counters that
// name handles and groups running past their bits (started near their limits here).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "event_helpers.h"

namespace pilot::metrics {
namespace {

using events::kStart;

using events::newMonitor;

void* allReduce(EventPath& path, CommMonitor& comm, unsigned channels, uint64_t seq = 0) {
  return events::startAllReduce(path, comm, channels, seq);
}

void* p2p(EventPath& path, CommMonitor& comm, const char* func, int peer, void* group,
          void* operation = nullptr) {
  return events::startSendRecv(path, comm, func, peer, group, operation);
}

/// One channel: start, GPU stop time, stop.
void channel(EventPath& path, void* task, unsigned id, uint64_t ns) {
  ASSERT_TRUE(events::runChannel(path, task, id, kStart, ns));
}

TEST(Teardown, AFinalizeLetsGoOfItsTasksInFlightAndLaterEventsAreStale) {
  EventPath path;
  ASSERT_TRUE(path.reserve(64));
  CommMonitor* comm = newMonitor();
  CommMonitor* other = newMonitor();
  // Aborted mid-flight: one channel timed and stopped, one started and never stopped, one
  // that never came; the task's own stop came ("enqueued").
  void* partial = allReduce(path, *comm, 3);
  path.stop(partial);
  channel(path, partial, 0, 5'000);
  void* started = path.startKernelChannel(partial, 1, kStart);
  ASSERT_NE(started, nullptr);
  // Never stopped on the host either, no channel at all.
  void* bare = allReduce(path, *comm, 2);
  // Every channel had its GPU time; only the stops were lost: still measured.
  void* timed = allReduce(path, *comm, 1);
  path.stop(timed);
  void* lastChannel = path.startKernelChannel(timed, 0, kStart);
  path.recordKernelChannelStop(lastChannel, kStart + 7'000);
  // Another communicator's task is not touched.
  void* untouched = allReduce(path, *other, 1);
  path.stop(untouched);
  EXPECT_EQ(path.slotsInUse(), 4u);
  EXPECT_EQ(comm->references(), 4);  // its own and three tasks'

  EXPECT_EQ(path.abandon(*comm), 3u);
  EXPECT_EQ(path.slotsInUse(), 1u);
  EXPECT_EQ(comm->references(), 1);
  EXPECT_EQ(comm->skipped(Skip::Abandoned), 2u);
  EXPECT_EQ(comm->skipped(Skip::Untimed), 0u);
  EXPECT_EQ(comm->measured(), 1u);
  EXPECT_EQ(path.abandon(*comm), 0u) << "nothing left to let go of";

  // What the proxy sends later finds nothing in flight: stale, counted, changes nothing.
  const uint64_t stale = path.orphans(Orphan::Stale);
  path.recordKernelChannelStop(started, kStart + 9'000);
  path.stop(started);
  path.stop(bare);
  EXPECT_EQ(path.startKernelChannel(bare, 0, kStart), nullptr);
  EXPECT_EQ(path.orphans(Orphan::Stale), stale + 4);
  EXPECT_EQ(comm->measured(), 1u);

  channel(path, untouched, 0, 3'000);
  EXPECT_EQ(other->measured(), 1u);
  EXPECT_EQ(path.slotsInUse(), 0u);
  comm->release();
  other->release();
}

TEST(Teardown, ASendRecvLetGoOfGivesItsGroupEntryBack) {
  EventPath path;
  ASSERT_TRUE(path.reserve(64));
  CommMonitor* comm = newMonitor(2, 0);
  void* group = path.startGroup(*comm);
  void* send = p2p(path, *comm, "Send", 1, group);
  void* recv = p2p(path, *comm, "Recv", 1, group);
  path.stop(send);
  path.stop(recv);
  path.stop(group);
  channel(path, send, 4, 2'000);  // the Recv's kernel never reports
  EXPECT_EQ(path.groupsInUse(), 1u);
  EXPECT_EQ(path.abandon(*comm), 1u);
  EXPECT_EQ(path.groupsInUse(), 0u);
  EXPECT_EQ(path.slotsInUse(), 0u);
  EXPECT_EQ(comm->groups(GroupOutcome::Partial), 1u);
  EXPECT_EQ(comm->skipped(Skip::Abandoned, TaskKind::P2p), 1u);
  EXPECT_EQ(comm->measured(TaskKind::P2p), 1u);
  EXPECT_EQ(comm->references(), 1);
  comm->release();
}

TEST(Teardown, HandlesStayExactWhenGenerationsWrapPastTheirBits) {
  // One slot, so every task takes it: its generation starts 16 short of 2^32 (the slot word's
  // field; handles carry its low 24 bits, lane words 20) and runs past all three.
  for (uint32_t first : {0xfffffff0u, 0x00fffff0u, 0x000ffff0u}) {
    SCOPED_TRACE(first);
    EventPath path;
    ASSERT_TRUE(path.reserve(1, first));
    CommMonitor* comm = newMonitor();
    std::vector<void*> done;
    for (uint64_t i = 0; i < 40; ++i) {
      void* task = allReduce(path, *comm, 2, i);
      ASSERT_NE(task, nullptr) << i;
      for (void* earlier : done) ASSERT_NE(earlier, task);
      path.stop(task);
      channel(path, task, 0, 1'000 + i);
      channel(path, task, 1, 900);
      done.push_back(task);
    }
    EXPECT_EQ(comm->measured(), 40u);
    EXPECT_EQ(comm->skipped(Skip::IgnoredKernel), 0u);
    // A task in flight now; every handle of the 40 before it is stale, and changes nothing.
    void* live = allReduce(path, *comm, 1, 40);
    path.stop(live);
    const uint64_t stale = path.orphans(Orphan::Stale);
    for (void* earlier : done) {
      EXPECT_EQ(path.startKernelChannel(earlier, 0, kStart), nullptr);
      path.stop(earlier);
    }
    EXPECT_EQ(path.orphans(Orphan::Stale), stale + 80);
    channel(path, live, 0, 4'000);
    EXPECT_EQ(comm->measured(), 41u);
    EXPECT_EQ(path.slotsInUse(), 0u);
    EXPECT_EQ(comm->references(), 1);
    comm->release();
  }
}

TEST(Teardown, GroupTicketsStayApartWhenTheThreadsCountWraps) {
  EventPath path;
  ASSERT_TRUE(path.reserve(64));
  CommMonitor* comm = newMonitor(2, 0);
  std::thread([&] {
    detail::GroupTable::setThreadGroupCount((uint64_t{1} << 40) - 3);  // wraps to 1 on the 3rd
    for (int i = 0; i < 6; ++i) {
      void* group = path.startGroup(*comm);
      void* send = p2p(path, *comm, "Send", 1, group);
      void* recv = p2p(path, *comm, "Recv", 1, group);
      path.stop(send);
      path.stop(recv);
      path.stop(group);
      channel(path, send, 0, 2'000);
      channel(path, recv, 1, 2'000);
    }
  }).join();
  EXPECT_EQ(comm->groups(GroupOutcome::AlltoAll), 6u);
  EXPECT_EQ(path.groupsInUse(), 0u);
  comm->release();
}

TEST(Teardown, AGroupLeftOpenByAThreadThatExitedIsClosedByTheSweep) {
  EventPath path;
  ASSERT_TRUE(path.reserve(64));
  CommMonitor* comm = newMonitor(2, 0);
  void* send = nullptr;
  std::thread([&] {
    void* group = path.startGroup(*comm);
    send = p2p(path, *comm, "Send", 1, group);
    path.stop(send);
    // The thread ends before the group's stop: nobody can close it now but the sweep.
  }).join();
  channel(path, send, 0, 2'000);
  EXPECT_EQ(path.groupsInUse(), 1u);
  EXPECT_EQ(comm->references(), 2);
  EXPECT_EQ(path.sweepGroups(), 0u) << "opened since the last sweep: left alone";
  EXPECT_EQ(path.sweepGroups(), 1u);
  EXPECT_EQ(path.groupsInUse(), 0u);
  EXPECT_EQ(path.orphans(Orphan::GroupLeftOpen), 1u);
  EXPECT_EQ(comm->groups(GroupOutcome::Partial), 1u);
  EXPECT_EQ(comm->references(), 1);
  // A group this thread left open is closed by its next one, and counted too.
  void* group = path.startGroup(*comm);
  void* again = p2p(path, *comm, "Send", 1, group);
  path.stop(again);
  path.startGroup(*comm);
  EXPECT_EQ(path.orphans(Orphan::GroupLeftOpen), 2u);
  channel(path, again, 0, 2'000);
  EXPECT_EQ(path.groupsInUse(), 0u);
  // A live thread's open group is never the sweep's.
  void* open = path.startGroup(*comm);
  void* third = p2p(path, *comm, "Send", 1, open);
  path.stop(third);
  EXPECT_EQ(path.sweepGroups(), 0u);
  EXPECT_EQ(path.sweepGroups(), 0u);
  EXPECT_EQ(path.groupsInUse(), 1u);
  path.stop(open);
  channel(path, third, 0, 2'000);
  EXPECT_EQ(path.groupsInUse(), 0u);
  comm->release();
}

TEST(Teardown, AUserGroupCutIntoPlansIsOneExchange) {
  // [v5+] A GroupApi over three plans (Group events) on its thread: one AlltoAll.
  EventPath path;
  ASSERT_TRUE(path.reserve(64));
  CommMonitor* comm = newMonitor(4, 1);
  void* user = path.startGroupApi(*comm);
  std::vector<void*> tasks;
  for (int plan = 0; plan < 3; ++plan) {
    void* group = path.startGroup(*comm);
    const int peer = plan >= 1 ? plan + 1 : 0;  // 0, 2, 3: every other rank
    void* op = EventPath::startP2pApi(user);
    ASSERT_NE(op, nullptr);
    tasks.push_back(p2p(path, *comm, "Send", peer, group, op));
    tasks.push_back(p2p(path, *comm, "Recv", peer, group, op));
    for (size_t t = tasks.size() - 2; t < tasks.size(); ++t) path.stop(tasks[t]);
    path.stop(op);
    path.stop(group);
  }
  path.stop(user);
  EXPECT_EQ(path.groupsInUse(), 1u);
  for (size_t t = 0; t < tasks.size(); ++t)
    channel(path, tasks[t], static_cast<unsigned>(t), 3'000);
  EXPECT_EQ(comm->groups(GroupOutcome::AlltoAll), 1u);
  EXPECT_EQ(comm->groups(GroupOutcome::Partial), 0u);
  EXPECT_EQ(path.groupsInUse(), 0u);
  comm->release();
}

}  // namespace
}  // namespace pilot::metrics
