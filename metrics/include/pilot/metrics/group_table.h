// NCCL's Group events, to see an all-to-all exchange that NCCL runs as Send/Recv operations.
// NCCL brackets the task events of one kernel plan with a Group event, all on one thread
// (src/enqueue.cc hostStreamPlanTask; src/plugin/profiler.cc):
//   startEvent(Group)  startEvent(Coll|P2p, parentGroup = it)...  stopEvent(those)...
//   stopEvent(Group)
// and the plan's kernels report later, on the proxy thread. A group costs nothing shared until
// a Send or Recv joins it: its handle is a ticket (the opening thread's serial and count), the
// open group is the opening thread's own, and only the first P2P operation claims an entry of
// a fixed table. The entry then collects the group's peers (counts and a multiset hash, so "every
// other rank" is checked in O(1) space whatever the communicator's size), the bytes sent and the
// operations' kernel times; the group's stop and each operation's release drop a reference, and
// whoever drops the last judges the group: an exchange with every other rank in both directions,
// every operation timed, is one AlltoAll (span: first kernel start to last kernel stop).
// Handles carry a magic apart from the event path's slots, so either is recognized and nothing
// is dereferenced before it is checked. Nothing here allocates, locks or formats.
#pragma once

#include <atomic>
#include <cstdint>

#include "pilot/metrics/comm_monitor.h"

namespace pilot::metrics::detail {

class GroupTable {
 public:
  static constexpr uint32_t kEntries = 1024;  ///< groups holding P2P work in flight at once
  static constexpr uint32_t kNone = UINT32_MAX;

  /// startEvent(Group): the handle NCCL hands back as the tasks' parentGroup.
  void* open(CommMonitor& comm);
  /// True when `handle` is a group handle of ours (whatever its state).
  static bool isGroupHandle(const void* handle);
  /// stopEvent(Group).
  void close(void* handle);

  /// A Send/Recv of `comm` whose parentGroup is `handle`: the entry of that group (claimed on
  /// the group's first operation) with a reference for the operation, or kNone when the group is
  /// not open on this thread, belongs to another communicator or finds no free entry.
  uint32_t join(void* handle, CommMonitor& comm);
  /// What the operation adds at its start (on the group's thread).
  void addOperation(uint32_t entry, Operation op, int peer, uint64_t bytes, unsigned channels);
  /// Its kernels' span, once every channel stopped with a GPU time.
  void addTimes(uint32_t entry, uint64_t firstStart, uint64_t lastStop);
  /// An operation of the group was not measured: the group is no exchange we can time.
  void spoil(uint32_t entry);
  /// The operation's reference, at its release.
  void drop(uint32_t entry);

  /// Entries holding a group now.
  uint32_t inUse() const { return inUse_.load(std::memory_order_relaxed); }

  /// The ticket a group handle carries (its sampling sequence), 0 for anything else.
  static uint64_t ticketOf(const void* handle);

 private:
  struct Entry {
    std::atomic<uint64_t> owner{0};  ///< the group's ticket; 0 = free
    std::atomic<uint32_t> state{0};  ///< references (the open group, its operations) | kClosed
    std::atomic<CommMonitor*> comm{nullptr};
    // Written by the group's thread between the claim and the close (which publishes them).
    uint32_t operations = 0, sends = 0, recvs = 0;
    uint64_t sendHash = 0, recvHash = 0, bytesSent = 0;
    unsigned channels = 0;
    // Added by the proxy threads as the operations complete.
    std::atomic<uint32_t> timed{0}, spoiled{0};
    std::atomic<uint64_t> firstStart{UINT64_MAX}, lastStop{0};
  };
  void closeEntry(Entry& e);
  void release(Entry& e, uint32_t references);
  void finish(Entry& e);

  Entry entries_[kEntries];  // static storage in the process: pages are touched when used
  std::atomic<uint32_t> inUse_{0};
};

}  // namespace pilot::metrics::detail
