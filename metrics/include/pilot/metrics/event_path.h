// NCCL's profiler events for one collective, in NCCL's order (src/plugin/profiler.cc):
//   startEvent(Coll)                      application thread, at enqueue
//   stopEvent(Coll)                       right after: "enqueued", not "done"
//   per kernel channel, on the proxy thread, usually after the Coll stopped:
//     startEvent(KernelCh, parent = the Coll's handle, GPU start time)
//     recordEventState(KernelChStop, GPU stop time)
//     stopEvent(KernelCh)
// A collective is one slot of a process-wide pool; it holds one reference for its Coll event
// and one per kernel channel, so it stays valid until its last child stops, whatever the order;
// the last reference let go completes it.
// Handles are not pointers: they carry the slot, a generation and the channel, so a handle from
// another process (PXN), a stale one (a slot reused since) or garbage is recognized and ignored
// without being dereferenced. An event NCCL should not send (a second start or stop, a stop
// state after the stop) holds no reference on the slot: every change it could make is one
// compare-and-swap that expects its handle's generation, so it never changes a collective that
// took the slot since, and what it counts against a communicator it counts holding a reference.
// Nothing here allocates, locks or formats.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "pilot/metrics/comm_monitor.h"

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

/// Kernel events that could not be matched to a collective of ours.
enum class Orphan : uint8_t { Foreign, Stale, Count };

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
  /// is short; the event path then drops everything as NoSlot.
  bool reserve(uint32_t slots = kDefaultSlots);

  void* startCollective(CommMonitor& comm, const CollEvent& event);
  void* startKernelChannel(void* parent, unsigned channel, uint64_t gpuStart);
  void recordKernelChannelStop(void* handle, uint64_t gpuStop);
  /// stopEvent for any handle of ours; anything else is ignored.
  void stop(void* handle);

  uint64_t orphans(Orphan kind) const {
    return orphans_[static_cast<int>(kind)].load(std::memory_order_relaxed);
  }
  /// Slots holding a collective now (started and not yet released).
  uint32_t slotsInUse() const;
  uint32_t capacity() const { return capacity_.load(std::memory_order_acquire); }

 private:
  struct Slot;
  struct Handle;
  /// The slot a handle names while its generation is in flight; counts what is not ours
  /// (Foreign) or no longer in flight (Stale). Takes no reference.
  Handle decode(void* handle);
  /// A reference on `slot` if `generation` is still in flight (else counted Stale).
  bool pin(Slot& slot, uint32_t generation);
  void countStale();
  Slot* acquire(uint32_t* index);
  /// The collective's words and references; returns the Coll's handle.
  void* publish(Slot& slot, uint32_t index, unsigned nChannels);
  /// Lets go of a reference; the last one completes the collective and frees the slot.
  void release(Slot& slot, uint32_t index);
  void complete(Slot& slot);

  std::atomic<Slot*> slots_{nullptr};
  std::atomic<uint32_t> capacity_{0};
  std::atomic<uint32_t> fresh_{0};     // slots never used yet start here
  std::atomic<uint64_t> freeHead_{0};  // (tag << 32) | (index + 1); index + 1 = 0: empty
  std::atomic<uint32_t> inUse_{0};
  std::atomic<uint64_t> orphans_[static_cast<int>(Orphan::Count)] = {};
};

}  // namespace pilot::metrics
