// The group table's limits and odd orders, on the event path directly: more groups holding
// Send/Recv work in flight than it has entries, a group stopped on another thread than the one
// that opened it, and an operation naming a group open on another thread. In every case each
// operation is still measured on its own, every entry comes free again, and what was not
// tracked is counted.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "event_helpers.h"

namespace pilot::metrics {
namespace {

using events::kStart;

struct Fixture {
  EventPath path;
  CommMonitor* comm = events::newMonitor(4, 0);
  Fixture() { path.reserve(4096); }
  ~Fixture() { comm->release(); }

  void* send(void* group, int peer = 1) {
    return events::startSendRecv(path, *comm, "Send", peer, group, nullptr, 4096);
  }
  void kernel(void* task, uint64_t ns) {
    ASSERT_TRUE(events::runChannel(path, task, 3, kStart, ns));
  }
};

TEST(GroupTable, MoreGroupsInFlightThanEntriesAreUntrackedAndAllComeFree) {
  Fixture f;
  constexpr int kGroups = 1500;
  std::vector<void*> tasks;
  for (int i = 0; i < kGroups; ++i) {
    void* group = f.path.startGroup(*f.comm);
    void* task = f.send(group);
    ASSERT_NE(task, nullptr);
    f.path.stop(task);
    f.path.stop(group);  // the kernels have not run: each entry is still held
    tasks.push_back(task);
  }
  EXPECT_LE(f.path.groupsInUse(), detail::GroupTable::kEntries);
  const uint64_t untracked = f.comm->groups(GroupOutcome::Untracked);
  EXPECT_GE(untracked, static_cast<uint64_t>(kGroups - detail::GroupTable::kEntries));
  EXPECT_EQ(f.path.groupsInUse() + untracked, static_cast<uint64_t>(kGroups));
  for (void* task : tasks) f.kernel(task, 5'000);
  EXPECT_EQ(f.path.groupsInUse(), 0u);
  EXPECT_EQ(f.path.slotsInUse(), 0u);
  EXPECT_EQ(f.comm->measured(TaskKind::P2p), static_cast<uint64_t>(kGroups));
  EXPECT_EQ(f.comm->groups(GroupOutcome::Partial) + untracked, static_cast<uint64_t>(kGroups));
  // Entries are reused once free.
  void* group = f.path.startGroup(*f.comm);
  void* task = f.send(group);
  f.path.stop(task);
  f.path.stop(group);
  EXPECT_EQ(f.path.groupsInUse(), 1u);
  f.kernel(task, 5'000);
  EXPECT_EQ(f.path.groupsInUse(), 0u);
  EXPECT_EQ(f.comm->groups(GroupOutcome::Untracked), untracked);
}

TEST(GroupTable, AGroupStoppedOnAnotherThreadClosesAtItsOpenersNextGroup) {
  Fixture f;
  void* group = f.path.startGroup(*f.comm);
  void* task = f.send(group);
  f.path.stop(task);
  std::thread([&] { f.path.stop(group); }).join();
  f.kernel(task, 5'000);
  EXPECT_EQ(f.path.groupsInUse(), 1u) << "still open: only its opener closes it";
  void* next = f.path.startGroup(*f.comm);
  EXPECT_EQ(f.path.groupsInUse(), 0u);
  EXPECT_EQ(f.comm->groups(GroupOutcome::Partial), 1u);
  f.path.stop(next);
  f.path.stop(next);  // a second stop of a closed group changes nothing
  EXPECT_EQ(f.comm->measured(TaskKind::P2p), 1u);
}

TEST(GroupTable, AnOperationNamingAGroupOpenOnAnotherThreadGoesAlone) {
  Fixture f;
  void* group = f.path.startGroup(*f.comm);
  void* task = nullptr;
  std::thread([&] { task = f.send(group); }).join();
  ASSERT_NE(task, nullptr);
  f.path.stop(task);
  f.path.stop(group);
  f.kernel(task, 7'000);
  EXPECT_EQ(f.comm->measured(TaskKind::P2p), 1u);
  EXPECT_EQ(f.path.groupsInUse(), 0u);
  for (int o = 0; o < static_cast<int>(GroupOutcome::Count); ++o) {
    EXPECT_EQ(f.comm->groups(static_cast<GroupOutcome>(o)), 0u)
        << groupOutcomeName(static_cast<GroupOutcome>(o));
  }
}

TEST(GroupTable, TheExchangeNeedsEveryOtherRankBothWays) {
  Fixture f;  // rank 0 of 4
  auto run = [&](std::vector<std::pair<const char*, int>> ops) {
    void* group = f.path.startGroup(*f.comm);
    std::vector<void*> tasks;
    for (const auto& [func, peer] : ops) {
      tasks.push_back(events::startSendRecv(f.path, *f.comm, func, peer, group, nullptr, 1 << 20));
    }
    for (void* t : tasks) f.path.stop(t);
    f.path.stop(group);
    for (void* t : tasks) f.kernel(t, 10'000);
  };
  run({{"Send", 1}, {"Send", 2}, {"Send", 3}, {"Recv", 1}, {"Recv", 2}, {"Recv", 3}});
  EXPECT_EQ(f.comm->groups(GroupOutcome::AlltoAll), 1u);
  run({{"Send", 1}, {"Send", 2}, {"Send", 3}});  // sends only
  run({{"Send", 1}, {"Send", 2}, {"Send", 3}, {"Recv", 1}, {"Recv", 1}, {"Recv", 3}});
  run({{"Send", 1}, {"Send", 2}, {"Send", 4}, {"Recv", 1}, {"Recv", 2}, {"Recv", 3}});  // 4: none
  EXPECT_EQ(f.comm->groups(GroupOutcome::AlltoAll), 1u);
  EXPECT_EQ(f.comm->groups(GroupOutcome::Partial), 3u);
  EXPECT_EQ(f.comm->peers(Operation::Send), 3u) << "rank 4 is not in the communicator";
  EXPECT_EQ(f.comm->peers(Operation::Recv), 3u);
}

}  // namespace
}  // namespace pilot::metrics
