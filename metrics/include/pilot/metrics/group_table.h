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
//
// NCCL cuts a group whose Send/Recv work does not fit one plan's work budget (about 254 work
// batches of at most 8 operations each: many peers, or large messages on many channels) into
// several plans, each with its own Group event and nothing linking them (src/enqueue.cc
// scheduleP2pTasksToPlan, 2.27 .. 2.30). From profiler v5 (NCCL 2.28) the user's group has a
// GroupApi event, started on the thread that appends the first task and stopped at the end of
// ncclGroupEnd, after the plans it launched inline; each ncclSend/ncclRecv has a P2pApi event
// whose parent is the GroupApi, and each task's parent is its P2pApi. So a GroupApi gets a
// handle (a ticket, like a Group's), a P2pApi a handle carrying its GroupApi's ticket, and a
// Send/Recv whose P2pApi names the GroupApi open on its thread joins the user group's entry,
// which the GroupApi's stop closes: every plan of the group is one exchange. Where the plans run
// on another thread (a non-blocking communicator's launch thread, a CUDA host callback, a graph
// replay), or through v4 (NCCL 2.27 sends no API events), each plan is judged on its own.
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
  /// startEvent(GroupApi) [v5+]: the user's group, whatever number of plans NCCL makes of it.
  void* openUserGroup(CommMonitor& comm);
  /// startEvent(P2pApi) [v5+] under `groupApi`: a handle naming that user group (null when the
  /// parent is not a GroupApi of ours); its stop changes nothing.
  static void* userOperation(const void* groupApi);
  /// True when `handle` is any handle of this table (Group, GroupApi, P2pApi; whatever state).
  static bool isGroupHandle(const void* handle);
  /// stopEvent for any handle of this table: a Group's or a GroupApi's closes it.
  void close(void* handle);

  /// A Send/Recv of `comm` whose parentGroup is `planGroup` and whose parent is `operation` (its
  /// P2pApi handle [v5+], or null): the entry of its user group when that is open on this thread
  /// for `comm`, else of its plan's group (claimed on the group's first operation), with a
  /// reference for the operation; kNone when neither is open on this thread for `comm`, or no
  /// entry is free.
  uint32_t join(void* planGroup, void* operation, CommMonitor& comm);
  /// The ticket a Group handle carries, 0 for anything else.
  static uint64_t ticketOf(const void* handle);
  /// The sampling sequence of an operation: its user group's ticket [v5+], else its plan's, 0
  /// when it names neither (whole groups are sampled, or their exchange could not be complete).
  static uint64_t sequenceOf(const void* planGroup, const void* operation);
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

  /// The exporter's look, once per export: a group left open by a thread that has exited since
  /// (its stop can never come) is closed, so its entry and its communicator come back. Only
  /// groups already open at the previous sweep are looked at (NCCL opens and closes a group in
  /// microseconds). Returns how many it closed.
  uint32_t sweepExitedThreads();
  /// Groups closed by their thread's next open or by the sweep: their stop never came.
  uint64_t leftOpen() const { return leftOpen_.load(std::memory_order_relaxed); }

  /// Tests: the calling thread's count of groups continues from `count` (its tickets' 40 bits
  /// wrap to 1).
  static void setThreadGroupCount(uint64_t count);

  /// A group open on a thread (its thread-local state; defined in group_table.cc).
  struct Claim;

 private:
  struct Entry {
    std::atomic<uint64_t> owner{0};  ///< the group's ticket; 0 = free
    std::atomic<uint32_t> state{0};  ///< references (the open group, its operations) | kClosed
    std::atomic<CommMonitor*> comm{nullptr};
    std::atomic<int> opener{0};          ///< the opening thread's id, for the sweep
    std::atomic<uint32_t> claimedAt{0};  ///< sweeps_ when claimed
    // Written by the group's thread between the claim and the close (which publishes them).
    uint32_t operations = 0, sends = 0, recvs = 0;
    uint64_t sendHash = 0, recvHash = 0, bytesSent = 0;
    unsigned channels = 0;
    // Added by the proxy threads as the operations complete.
    std::atomic<uint32_t> timed{0}, spoiled{0};
    std::atomic<uint64_t> firstStart{UINT64_MAX}, lastStop{0};
  };
  /// Opens `group` (the thread's plan or user group) with the next ticket of `count`.
  void* openOn(Claim& group, uint64_t& count, uint64_t magic, CommMonitor& comm);
  uint32_t claim(Claim& group, CommMonitor& comm);
  void closeEntry(Entry& e);
  void release(Entry& e, uint32_t references);
  void finish(Entry& e);

  Entry entries_[kEntries];  // static storage in the process: pages are touched when used
  std::atomic<uint32_t> inUse_{0};
  std::atomic<uint32_t> sweeps_{0};
  std::atomic<uint64_t> leftOpen_{0};
};

}  // namespace pilot::metrics::detail
