// NCCL's profiler events for one kernel plan, in NCCL's order (src/plugin/profiler.cc,
// src/enqueue.cc hostStreamPlanTask):
//   startEvent(Group)                     the thread that launches the plan
//   startEvent(Coll | P2p, parentGroup)   per task of the plan (a collective, a Send, a Recv)
//   stopEvent(Coll | P2p)                 right after: "enqueued", not "done"
//   stopEvent(Group)
//   per kernel channel of each task, on the proxy thread, usually after the task stopped:
//     startEvent(KernelCh, parent = the task's handle, GPU start time)
//     recordEventState(KernelChStop, GPU stop time)
//     stopEvent(KernelCh)
// A task is one slot of a process-wide pool; it holds one reference for its task event and one
// per kernel channel, so it stays valid until its last child stops, whatever the order. Its
// channels are lanes taken in arrival order: NCCL numbers them by the channel they ran on, which
// for a Send/Recv, or a collective sharing a plan, is not 0 .. nChannels - 1. A task's time is
// its slowest channel's; a Send's or Recv's bus bandwidth counts its bytes once. A group whose
// Send/Recv operations reach every other rank is also timed as one AlltoAll (group_table.h).
// Handles are not pointers: they carry the slot, a generation and the lane, so a handle from
// another process (PXN), a stale one (a slot reused since) or garbage is recognized and ignored
// without being dereferenced. Nothing here allocates, locks or formats.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "pilot/metrics/comm_monitor.h"
#include "pilot/metrics/group_table.h"
#include "pilot/metrics/proxy_table.h"

namespace pilot::metrics {

/// A Coll event's descriptor fields (identical in profiler ABI v4, v5 and v6).
struct CollEvent {
  uint64_t seqNumber = 0;
  const char* func = nullptr;
  size_t count = 0;
  const char* datatype = nullptr;
  unsigned nChannels = 0;
  const char* algo = nullptr;
  const char* proto = nullptr;
};

/// A P2p event's descriptor fields (identical in profiler ABI v4, v5 and v6; v4 carries the
/// group in parentObj, v5 and v6 in p2p.parentGroup).
struct P2pEvent {
  const char* func = nullptr;  ///< "Send" or "Recv"
  size_t count = 0;
  const char* datatype = nullptr;
  int peer = -1;
  unsigned nChannels = 0;
  void* group = nullptr;      ///< the Group event's handle (ours), or null
  void* operation = nullptr;  ///< [v5+] its parent, the P2pApi event's handle (ours), or null
};

/// Events that could not be matched to work of ours: kernel events whose parent is not ours
/// (Foreign) or no longer in flight (Stale), and groups whose stop never came (GroupLeftOpen:
/// closed by their thread's next group, or once that thread has exited).
enum class Orphan : uint8_t { Foreign, Stale, GroupLeftOpen, Count };

class EventPath {
 public:
  static constexpr unsigned kMaxChannels = 64;  ///< NCCL's MAXCHANNELS
  static constexpr uint32_t kDefaultSlots = 4096;

  /// The process-wide instance (its pool is reserved on the first enabled communicator).
  static EventPath& process();

  EventPath() = default;
  ~EventPath();
  EventPath(const EventPath&) = delete;
  EventPath& operator=(const EventPath&) = delete;

  /// Allocates the slots once (calloc: pages are touched only when used). False when memory
  /// is short; the event path then drops everything as NoSlot. Each slot's generation starts at
  /// `firstGeneration` (tests start it near the limits of the handles' 24 and the lane words'
  /// 20 bits, and of its own 32, to see them wrap).
  bool reserve(uint32_t slots = kDefaultSlots, uint32_t firstGeneration = 0);

  void* startGroup(CommMonitor& comm) { return groups_.open(comm); }
  /// [v5+] The user's group (GroupApi) and its Send/Recv calls (P2pApi): group_table.h.
  void* startGroupApi(CommMonitor& comm) { return groups_.openUserGroup(comm); }
  static void* startP2pApi(const void* groupApi) {
    return detail::GroupTable::userOperation(groupApi);
  }
  void* startCollective(CommMonitor& comm, const CollEvent& event);
  void* startP2p(CommMonitor& comm, const P2pEvent& event);
  void* startKernelChannel(void* parent, unsigned channel, uint64_t gpuStart);
  /// NCCL's ProxyOp under a task of ours (NCCL_PILOT_METRICS_PROXY; proxy_table.h): null for a
  /// parent not ours or no longer in flight; `countSteps`: its ProxySteps will be counted.
  void* startProxyOp(void* parent, unsigned channel, int peer, bool send, int nSteps,
                     bool countSteps);
  void* startProxyStep(void* proxyOp) { return proxies_.step(proxyOp); }
  /// The ProxyOps of `comm`'s operation `ordinal` still open.
  std::vector<ProxyOpView> openProxyOps(const CommMonitor& comm, uint64_t ordinal) const {
    return proxies_.openOf(comm, ordinal);
  }
  void recordKernelChannelStop(void* handle, uint64_t gpuStop);
  /// stopEvent for any handle of ours; anything else is ignored.
  void stop(void* handle);

  /// At `comm`'s finalize: lets go of every task of it still in flight, its task event and the
  /// lanes whose channels never stopped, so its slot, its group's reference and its hold on
  /// `comm` come back. NCCL stops the proxy before it finalizes the profiler (src/init.cc
  /// commFree), so nothing of it would ever report: an abort, or a collective whose kernels
  /// never ran. Counted as Skip::Abandoned unless every channel had its GPU time; events that
  /// come for them later are stale. Each compare-and-swap expects the task's generation, so an
  /// event racing this one counts once, whichever lands first. Visits each slot once.
  /// Returns how many tasks it let go of.
  uint32_t abandon(const CommMonitor& comm);

  uint64_t orphans(Orphan kind) const {
    if (kind == Orphan::GroupLeftOpen) return groups_.leftOpen();
    return orphans_[static_cast<int>(kind)].load(std::memory_order_relaxed);
  }
  /// The exporter's look for groups left open by threads that exited (group_table.h).
  uint32_t sweepGroups() { return groups_.sweepExitedThreads(); }
  /// Slots holding a collective or Send/Recv now (started and not yet released).
  uint32_t slotsInUse() const;
  /// Which channels of the task `task` (OperationView::task) started and which stopped, read
  /// from its lanes (the exporter's look at a stalled operation); false when the slot holds
  /// another task by now, or none.
  bool channelsOf(uint64_t task, uint64_t* started, uint64_t* stopped) const;
  /// ProxyOp records open now (ProxyTable::kRecords at most).
  uint32_t proxiesInUse() const { return proxies_.inUse(); }
  /// Groups holding Send/Recv operations now (GroupTable::kEntries at most).
  uint32_t groupsInUse() const { return groups_.inUse(); }
  uint32_t capacity() const { return capacity_.load(std::memory_order_acquire); }

 private:
  struct Slot;
  struct Handle;
  /// The slot a handle names while its generation is in flight; counts what is not ours
  /// (Foreign) or no longer in flight (Stale). Takes no reference.
  Handle decode(void* handle);
  /// A reference on `slot` if `generation` is still in flight (else counted Stale, when asked).
  bool pin(Slot& slot, uint32_t generation, bool countStale = true);
  void countStale();
  /// A slot for a task of `comm`, its fields, lanes and references set; returns the task's
  /// handle, null when no slot is free. `ordinal`: the task in comm's InFlightLog, completed
  /// with it; an unmeasured task (sampled out, too small) is followed to its completion only.
  void* publish(CommMonitor& comm, TaskKind kind, const KeyFields& key, uint64_t bytes,
                double busBytes, unsigned channels, uint32_t group, uint64_t ordinal,
                bool measured);
  Slot* acquire(uint32_t* index);
  /// The construction flags after `capacity` slots.
  static std::atomic<uint8_t>* builtFlags(Slot* slots, uint32_t capacity);
  /// Lets go of a reference; the last one completes the task and frees the slot.
  void release(Slot& slot, uint32_t index);
  void complete(Slot& slot);

  // The slots, then a byte per slot set once it is constructed: abandon() visits every slot,
  // and one may be under construction (acquire takes its index first). One block.
  std::atomic<Slot*> slots_{nullptr};
  std::atomic<uint32_t> capacity_{0};
  std::atomic<uint32_t> firstGeneration_{0};
  std::atomic<uint32_t> fresh_{0};     // slots never used yet start here
  std::atomic<uint64_t> freeHead_{0};  // (tag << 32) | (index + 1); index + 1 = 0: empty
  std::atomic<uint32_t> inUse_{0};
  std::atomic<uint64_t> orphans_[static_cast<int>(Orphan::Count)] = {};
  detail::GroupTable groups_;
  detail::ProxyTable proxies_;
};

}  // namespace pilot::metrics
