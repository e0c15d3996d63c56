#include "pilot/metrics/event_path.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "memory_order.h"

namespace pilot::metrics {
namespace {

// Handle layout: magic (8 bits) | generation (24) | slot (24) | lane + 1 (8; 0 = the task).
// The magic sits where a user-space pointer has zeros, so no pointer NCCL or another process
// hands us decodes as ours.
constexpr uint64_t kMagic = 0xB7;
constexpr uint32_t kGenerationMask = 0xffffff;
constexpr uint32_t kMaxSlots = 0xffffff;

// A slot's state: its generation (handles carry the low 24 bits) << 32 | its references.
constexpr uint64_t kReferenceMask = 0xffffffff;
constexpr uint64_t kOneGeneration = uint64_t{1} << 32;

uint32_t generationOf(uint64_t state) {
  return static_cast<uint32_t>(state >> 32) & kGenerationMask;
}

// A lane's word: the generation's low 20 bits | phase (2) | timed (1) | the NCCL channel id it
// holds (6) | the longest stop - start recorded, in ns (35 bits; longer is kept as 34 s). The
// task's word: generation | stopped. Each event changes its word with one compare-and-swap
// that expects the handle's generation: an event NCCL should not send (a second start or stop,
// a stop state after the stop) holds no reference on the slot, so the task may complete and
// another take the slot meanwhile, and that swap then fails instead of changing the other's.
constexpr int kTagShift = 44;
constexpr uint64_t kTagMask = uint64_t{0xfffff} << kTagShift;
constexpr uint64_t kArmed = uint64_t{1} << 42;  // a lane of the task; no channel took it yet
constexpr uint64_t kStarted = uint64_t{2} << 42;
constexpr uint64_t kStopped = uint64_t{3} << 42;
constexpr uint64_t kPhaseMask = uint64_t{3} << 42;
constexpr uint64_t kTimed = uint64_t{1} << 41;
constexpr int kChannelShift = 35;
constexpr uint64_t kChannelMask = uint64_t{63} << kChannelShift;
constexpr uint64_t kMaxNs = (uint64_t{1} << kChannelShift) - 1;
constexpr uint32_t kTaskStopped = uint32_t{1} << 24;
constexpr uint32_t kTaskAbandoned = uint32_t{1} << 25;  // let go of at its comm's finalize

uint64_t laneTag(uint32_t generation) {
  return uint64_t{generation & 0xfffff} << kTagShift;
}

unsigned channelOf(uint64_t word) {
  return static_cast<unsigned>((word & kChannelMask) >> kChannelShift);
}

void* encode(uint32_t generation, uint32_t index, unsigned lanePlusOne) {
  const uint64_t h = kMagic << 56 | static_cast<uint64_t>(generation & kGenerationMask) << 32 |
                     static_cast<uint64_t>(index) << 8 | lanePlusOne;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(h));
}

}  // namespace

struct EventPath::Handle {
  Slot* slot = nullptr;  // null: not ours, or its task completed (counted)
  uint32_t index = 0;
  uint32_t generation = 0;
  unsigned lanePlusOne = 0;
};

struct EventPath::Slot {
  // Generation and references in one word: a reference is only ever taken on the generation a
  // handle names while it still has one (pin), and the last one let go moves it on.
  std::atomic<uint64_t> state{0};
  std::atomic<uint32_t> task{0};      // the task's word (above)
  std::atomic<uint32_t> nextFree{0};  // index + 1 of the next free slot
  // The channel ids started, a hint for their lanes: a start racing the slot's reuse may leave
  // a bit of the old task here, which costs the new one a look at its lanes, nothing more.
  std::atomic<uint64_t> channelsSeen{0};
  std::atomic<unsigned> nChannels{0};  // read by events that hold no reference: atomic
  std::atomic<CommMonitor*> comm{nullptr};
  // Written before the task's handle is published (state, release); read by whoever holds a
  // reference.
  TaskKind kind = TaskKind::Collective;
  uint32_t group = detail::GroupTable::kNone;
  uint64_t messageBytes = 0;
  double busBytes = 0;
  double expectedNs = 0;
  unsigned keyIndex = 0;
  unsigned sampleSlot = CallSamples::kNoKey;
  bool measured = true;  // false: only followed to its completion (sampled out, too small)
  uint64_t ordinal = 0;  // in its communicator's InFlightLog
  std::atomic<uint64_t> lanes[kMaxChannels] = {};  // the lanes' words (above)
  // Written by the start that took the lane, read by its stop states and the completion.
  // Atomic because a stop state sent after the stop may read another task's start; its
  // compare-and-swap then fails.
  std::atomic<uint64_t> laneStart[kMaxChannels] = {};
};

EventPath& EventPath::process() {
  static EventPath path;
  return path;
}

EventPath::~EventPath() {
  // The library is unloaded after NCCL finalized every communicator, or the process exits. A
  // collective still in flight means NCCL's threads may yet report on it (at exit they still
  // run): the slots are then left to the process rather than freed under them.
  if (inUse_.load(kAcquire) != 0) return;
  Slot* slots = slots_.exchange(nullptr, kAcqRel);
  if (slots == nullptr) return;
  const uint32_t n = fresh_.load(kRelaxed);
  for (uint32_t i = 0; i < n; ++i) slots[i].~Slot();
  std::free(slots);
}

bool EventPath::reserve(uint32_t slots, uint32_t firstGeneration) {
  if (slots_.load(kAcquire) != nullptr) return true;
  if (slots == 0 || slots > kMaxSlots) return false;
  firstGeneration_.store(firstGeneration, kRelaxed);
  void* memory = std::calloc(1, size_t{slots} * (sizeof(Slot) + sizeof(std::atomic<uint8_t>)));
  if (memory == nullptr) return false;
  // A slot is constructed when first used (acquire), so pages no collective needed are never
  // touched: 4096 slots of ~1.2 KB cost nothing until the job has that many in flight.
  Slot* typed = static_cast<Slot*>(memory);
  Slot* expected = nullptr;
  if (!slots_.compare_exchange_strong(expected, typed, kAcqRel)) {
    std::free(memory);
    return true;
  }
  capacity_.store(slots, kRelease);
  return true;
}

std::atomic<uint8_t>* EventPath::builtFlags(Slot* slots, uint32_t capacity) {
  return reinterpret_cast<std::atomic<uint8_t>*>(slots + capacity);
}

uint32_t EventPath::slotsInUse() const {
  return inUse_.load(kRelaxed);
}

EventPath::Slot* EventPath::acquire(uint32_t* index) {
  Slot* slots = slots_.load(kAcquire);
  const uint32_t capacity = capacity_.load(kAcquire);
  if (slots == nullptr) return nullptr;
  uint64_t head = freeHead_.load(kAcquire);
  while (static_cast<uint32_t>(head) != 0) {  // the tag stays in the high half when empty
    const uint32_t i = static_cast<uint32_t>(head) - 1;
    const uint64_t next = ((head >> 32) + 1) << 32 | slots[i].nextFree.load(kRelaxed);
    if (freeHead_.compare_exchange_weak(head, next, kAcqRel, kAcquire)) {
      *index = i;
      inUse_.fetch_add(1, kRelaxed);
      return &slots[i];
    }
  }
  uint32_t i = fresh_.load(kRelaxed);
  while (i < capacity) {
    if (fresh_.compare_exchange_weak(i, i + 1, kAcqRel)) {
      *index = i;
      inUse_.fetch_add(1, kRelaxed);
      Slot* slot = new (&slots[i]) Slot;
      slot->state.store(uint64_t{firstGeneration_.load(kRelaxed)} << 32, kRelaxed);
      builtFlags(slots, capacity)[i].store(1, kRelease);
      return slot;
    }
  }
  return nullptr;
}

void EventPath::release(Slot& slot, uint32_t index) {
  if ((slot.state.fetch_sub(1, kAcqRel) & kReferenceMask) != 1) return;
  complete(slot);  // the task and every lane have stopped
  CommMonitor* comm = slot.comm.exchange(nullptr, kAcqRel);
  const uint32_t group = slot.group;
  // A new generation: from here every handle of the old one is stale (and none can be pinned
  // since the references reached zero).
  slot.state.fetch_add(kOneGeneration, kAcqRel);
  inUse_.fetch_sub(1, kRelaxed);
  uint64_t head = freeHead_.load(kRelaxed);
  uint64_t mine;
  do {
    slot.nextFree.store(static_cast<uint32_t>(head), kRelaxed);
    mine = ((head >> 32) + 1) << 32 | (index + 1);
  } while (!freeHead_.compare_exchange_weak(head, mine, kRelease, kRelaxed));
  if (group != detail::GroupTable::kNone) groups_.drop(group);
  if (comm != nullptr) comm->release();
}

EventPath::Handle EventPath::decode(void* handle) {
  const uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  if ((h >> 56) != kMagic) {
    orphans_[static_cast<int>(Orphan::Foreign)].fetch_add(1, kRelaxed);
    return {};
  }
  Slot* slots = slots_.load(kAcquire);
  const uint32_t i = static_cast<uint32_t>(h >> 8) & kMaxSlots;
  const unsigned lanePlusOne = static_cast<unsigned>(h & 0xff);
  if (slots == nullptr || i >= fresh_.load(kAcquire) || lanePlusOne > kMaxChannels) {
    orphans_[static_cast<int>(Orphan::Foreign)].fetch_add(1, kRelaxed);
    return {};
  }
  Slot& slot = slots[i];
  const uint32_t generation = static_cast<uint32_t>(h >> 32) & kGenerationMask;
  const uint64_t state = slot.state.load(kAcquire);
  if (generationOf(state) != generation || (state & kReferenceMask) == 0) {
    countStale();
    return {};
  }
  return {&slot, i, generation, lanePlusOne};
}

bool EventPath::pin(Slot& slot, uint32_t generation, bool countStale) {
  uint64_t state = slot.state.load(kAcquire);
  do {
    if (generationOf(state) != generation || (state & kReferenceMask) == 0) {
      if (countStale) this->countStale();
      return false;
    }
  } while (!slot.state.compare_exchange_weak(state, state + 1, kAcqRel, kAcquire));
  return true;
}

void EventPath::countStale() {
  orphans_[static_cast<int>(Orphan::Stale)].fetch_add(1, kRelaxed);
}

void* EventPath::startCollective(CommMonitor& comm, const CollEvent& e) {
  comm.countSeen();
  Operation op;
  const unsigned elementBytes = datatypeBytes(e.datatype);
  uint64_t bytes = 0;
  if (!parseOperation(e.func, &op) || isPointToPoint(op) || elementBytes == 0 ||
      __builtin_mul_overflow(static_cast<uint64_t>(e.count), elementBytes, &bytes)) {
    comm.count(Skip::Unknown);
    return nullptr;
  }
  // Every collective NCCL names is followed to its completion, measured or not: the rank says
  // what it waits for (in_flight.h).
  const bool timeable = e.nChannels > 0 && e.nChannels <= kMaxChannels;
  const uint64_t ordinal =
      comm.inFlight().launch(op, bytes, -1, timeable ? e.nChannels : 0, monotonicNs());
  KeyFields key;
  key.op = op;
  const MetricsSettings& s = comm.settings();
  Skip skip = Skip::Count;
  if (bytes == 0 || bytes < s.minBytes) {
    skip = Skip::BelowMinBytes;
  } else if (s.sample > 1 && e.seqNumber % s.sample != 0) {
    skip = Skip::SampledOut;
  } else if (!timeable) {
    skip = Skip::NoChannels;
  }
  if (skip != Skip::Count) {
    comm.count(skip);
    if (!timeable) return nullptr;
    return publish(comm, TaskKind::Collective, key, bytes, 0, e.nChannels,
                   detail::GroupTable::kNone, ordinal, /*measured=*/false);
  }
  key.bucket = static_cast<uint8_t>(sizeBucket(bytes));
  key.algorithm = parseAlgorithmIndex(e.algo);
  key.protocol = parseProtocolIndex(e.proto);
  key.channels = static_cast<uint8_t>(e.nChannels);
  key.decision = comm.decide(op, bytes, key.algorithm, key.protocol, static_cast<int>(e.nChannels));
  void* handle =
      publish(comm, TaskKind::Collective, key, bytes, busBytes(op, bytes, comm.identity().nRanks),
              e.nChannels, detail::GroupTable::kNone, ordinal, /*measured=*/true);
  if (handle == nullptr) comm.count(Skip::NoSlot);
  return handle;
}

void* EventPath::startP2p(CommMonitor& comm, const P2pEvent& e) {
  comm.countSeen(TaskKind::P2p);
  Operation op;
  const unsigned elementBytes = datatypeBytes(e.datatype);
  uint64_t bytes = 0;
  if (!parseOperation(e.func, &op) || !isPointToPoint(op) || elementBytes == 0 ||
      __builtin_mul_overflow(static_cast<uint64_t>(e.count), elementBytes, &bytes)) {
    comm.count(Skip::Unknown, TaskKind::P2p);
    return nullptr;
  }
  comm.notePeer(op, e.peer);
  const bool timeable = e.nChannels > 0 && e.nChannels <= kMaxChannels;
  const uint64_t ordinal =
      comm.inFlight().launch(op, bytes, e.peer, timeable ? e.nChannels : 0, monotonicNs());
  KeyFields key;
  key.op = op;
  const MetricsSettings& s = comm.settings();
  // A group is sampled whole (by its ticket: the user group's from v5, else the plan's, each a
  // count of the opening thread's groups of its kind), or its exchange could never be
  // complete; an operation outside a group by the communicator's count.
  const uint64_t ticket = detail::GroupTable::sequenceOf(e.group, e.operation);
  const uint64_t sequence = ticket != 0 ? ticket : comm.seen(TaskKind::P2p);
  if (s.sample > 1 && sequence % s.sample != 0) {
    comm.count(Skip::SampledOut, TaskKind::P2p);
    if (!timeable) return nullptr;
    return publish(comm, TaskKind::P2p, key, bytes, 0, e.nChannels, detail::GroupTable::kNone,
                   ordinal, /*measured=*/false);
  }
  const uint32_t group = groups_.join(e.group, e.operation, comm);
  Skip skip = Skip::Count;
  if (bytes == 0 || bytes < s.minBytes) {
    skip = Skip::BelowMinBytes;
  } else if (!timeable) {
    skip = Skip::NoChannels;
  }
  void* handle = nullptr;
  if (skip == Skip::Count) {
    key.bucket = static_cast<uint8_t>(sizeBucket(bytes));
    key.channels = static_cast<uint8_t>(e.nChannels);
    handle = publish(comm, TaskKind::P2p, key, bytes, busBytes(op, bytes, comm.identity().nRanks),
                     e.nChannels, group, ordinal, /*measured=*/true);
    if (handle == nullptr) skip = Skip::NoSlot;
  }
  if (group != detail::GroupTable::kNone) {
    groups_.addOperation(group, op, e.peer, bytes, e.nChannels);
    if (handle == nullptr) {
      // The group's reference the slot would have carried; the group can no longer be timed.
      groups_.spoil(group);
      groups_.drop(group);
    }
  }
  if (handle == nullptr) {
    comm.count(skip, TaskKind::P2p);
    // Not measured, still followed to its completion (the NoSlot case has no slot to follow).
    if (skip != Skip::NoSlot && timeable) {
      handle = publish(comm, TaskKind::P2p, key, bytes, 0, e.nChannels, detail::GroupTable::kNone,
                       ordinal, /*measured=*/false);
    }
  }
  return handle;
}

void* EventPath::publish(CommMonitor& comm, TaskKind kind, const KeyFields& key, uint64_t bytes,
                         double busBytes, unsigned channels, uint32_t group, uint64_t ordinal,
                         bool measured) {
  uint32_t index = 0;
  Slot* slot = acquire(&index);
  if (slot == nullptr) return nullptr;
  comm.retain();
  slot->comm.store(&comm, kRelaxed);
  slot->kind = kind;
  slot->group = group;
  slot->messageBytes = bytes;
  slot->busBytes = busBytes;
  slot->measured = measured;
  slot->ordinal = ordinal;
  slot->expectedNs = measured ? comm.expectedNs(key.decision, key.op, bytes) : 0;
  slot->keyIndex = measured ? comm.keyIndex(key.pack()) : 0;
  slot->sampleSlot = measured && kind == TaskKind::Collective
                         ? comm.samples().slotOf({key.op, bytes, key.algorithm, key.protocol,
                                                  static_cast<uint8_t>(channels)})
                         : CallSamples::kNoKey;
  const uint64_t unreferenced = slot->state.load(kRelaxed);  // this generation, none yet
  const uint32_t generation = generationOf(unreferenced);
  const uint64_t armed = laneTag(generation) | kArmed;
  for (unsigned lane = 0; lane < channels; ++lane) slot->lanes[lane].store(armed, kRelaxed);
  slot->task.store(generation, kRelaxed);
  slot->channelsSeen.store(0, kRelaxed);
  slot->nChannels.store(channels, kRelaxed);
  // Publishes the fields, with the references of the task and of each lane, to whichever
  // thread decodes this generation's handles.
  slot->state.store(unreferenced | (1 + channels), kRelease);
  // The exporter finds its channels through the log entry (channelsOf): the hot path writes
  // nothing per channel for it.
  comm.inFlight().attach(ordinal, uint64_t{index + 1} << 32 | (generation & kGenerationMask));
  return encode(generation, index, 0);
}

void* EventPath::startKernelChannel(void* parent, unsigned channel, uint64_t gpuStart) {
  if (parent == nullptr) return nullptr;  // a task we did not measure
  const Handle h = decode(parent);
  if (h.slot == nullptr) return nullptr;
  Slot& slot = *h.slot;
  if (h.lanePlusOne == 0 && channel < kMaxChannels) {
    // One lane per distinct channel id, as many as NCCL announced: NCCL numbers a task's
    // channels by where they ran (a Send's, or a collective's sharing its plan, are not
    // 0 .. n - 1). The ids seen before this one give its lane; their bits are only a hint.
    const uint64_t tag = laneTag(h.generation);
    const unsigned n = std::min(slot.nChannels.load(kRelaxed), kMaxChannels);
    const uint64_t bit = uint64_t{1} << channel;
    const uint64_t before = slot.channelsSeen.fetch_or(bit, kAcqRel);
    bool again = false;
    for (unsigned lane = 0; (before & bit) != 0 && lane < n && !again; ++lane) {
      const uint64_t w = slot.lanes[lane].load(kAcquire);
      again = (w & kTagMask) == tag && (w & kPhaseMask) != kArmed && channelOf(w) == channel;
    }
    const unsigned first = static_cast<unsigned>(__builtin_popcountll(before & ~bit));
    for (unsigned k = 0; !again && k < n; ++k) {
      const unsigned lane = (first + k) % n;
      uint64_t armed = tag | kArmed;
      const uint64_t started = tag | kStarted | uint64_t{channel} << kChannelShift;
      if (slot.lanes[lane].compare_exchange_strong(armed, started, kAcqRel, kAcquire)) {
        slot.laneStart[lane].store(gpuStart, kRelaxed);
        return encode(h.generation, h.index, lane + 1);
      }
      if ((armed & kTagMask) != tag) break;  // the slot was reused since the look
    }
  }
  // A lane's handle as a parent, a second start, a channel past those NCCL announced, or a slot
  // reused since the look: counted against the communicator, which only a reference keeps (the
  // task may have completed since, and its communicator be gone).
  if (pin(slot, h.generation)) {
    if (CommMonitor* comm = slot.comm.load(kRelaxed)) comm->count(Skip::IgnoredKernel, slot.kind);
    release(slot, h.index);
  }
  return nullptr;
}

void* EventPath::startProxyOp(void* parent, unsigned channel, int peer, bool send, int nSteps,
                              bool countSteps) {
  if (parent == nullptr) return nullptr;
  const Handle h = decode(parent);
  if (h.slot == nullptr || h.lanePlusOne != 0 || !pin(*h.slot, h.generation)) return nullptr;
  void* handle = nullptr;
  // Pinned: the task, and its communicator, stay until the pin is let go of.
  if (const CommMonitor* comm = h.slot->comm.load(kAcquire)) {
    handle = proxies_.open(*comm, h.slot->ordinal, channel, peer, send, nSteps, countSteps);
  }
  release(*h.slot, h.index);
  return handle;
}

void EventPath::recordKernelChannelStop(void* handle, uint64_t gpuStop) {
  if (handle == nullptr) return;
  const Handle h = decode(handle);
  if (h.slot == nullptr || h.lanePlusOne == 0) return;
  const unsigned lane = h.lanePlusOne - 1;
  std::atomic<uint64_t>& word = h.slot->lanes[lane];
  const uint64_t start = h.slot->laneStart[lane].load(kRelaxed);
  if (start == 0 || gpuStop <= start) return;  // no usable GPU time (Inspector's rule too)
  const uint64_t ns = std::min(gpuStop - start, kMaxNs);
  const uint64_t started = laneTag(h.generation) | kStarted;
  uint64_t w = word.load(kAcquire);
  for (;;) {
    if ((w & (kTagMask | kPhaseMask)) != started) {  // a slot reused since, or after the stop
      if ((w & kTagMask) != laneTag(h.generation)) countStale();
      return;
    }
    const uint64_t timed = (w & ~kMaxNs) | kTimed | std::max(w & kMaxNs, ns);
    if (timed == w || word.compare_exchange_weak(w, timed, kAcqRel, kAcquire)) return;
  }
}

void EventPath::complete(Slot& slot) {
  CommMonitor* comm = slot.comm.load(kRelaxed);
  if (comm == nullptr) return;
  const bool abandoned = (slot.task.load(kRelaxed) & kTaskAbandoned) != 0;
  if (!abandoned) comm->inFlight().complete(slot.ordinal, monotonicNs());
  if (!slot.measured) return;
  const unsigned n = slot.nChannels.load(kRelaxed);
  uint64_t longest = 0, first = UINT64_MAX, last = 0;
  for (unsigned lane = 0; lane < n; ++lane) {
    const uint64_t w = slot.lanes[lane].load(kRelaxed);
    if ((w & kTimed) == 0) {
      comm->count(abandoned ? Skip::Abandoned : Skip::Untimed, slot.kind);
      if (slot.group != detail::GroupTable::kNone) groups_.spoil(slot.group);
      return;
    }
    const uint64_t start = slot.laneStart[lane].load(kRelaxed);
    longest = std::max(longest, w & kMaxNs);
    first = std::min(first, start);
    last = std::max(last, start + (w & kMaxNs));
  }
  Completion done;
  done.timeNs = longest;
  done.messageBytes = slot.messageBytes;
  done.busBytes = slot.busBytes;
  done.expectedNs = slot.expectedNs;
  comm->aggregate(slot.keyIndex).record(done);
  if (slot.kind == TaskKind::Collective) comm->samples().record(slot.sampleSlot, done.timeNs);
  comm->countMeasured(slot.kind);
  if (slot.group != detail::GroupTable::kNone) groups_.addTimes(slot.group, first, last);
}

void EventPath::stop(void* handle) {
  if (handle == nullptr) return;
  if (detail::GroupTable::isGroupHandle(handle)) {
    groups_.close(handle);
    return;
  }
  if (detail::ProxyTable::isProxyHandle(handle)) {
    proxies_.stop(handle);
    return;
  }
  const Handle h = decode(handle);
  if (h.slot == nullptr) return;
  Slot& slot = *h.slot;
  if (h.lanePlusOne == 0) {
    uint32_t open = h.generation;
    if (slot.task.compare_exchange_strong(open, open | kTaskStopped, kAcqRel, kAcquire)) {
      release(slot, h.index);
    } else if ((open & kGenerationMask) != h.generation) {
      countStale();
    }  // else stopped twice: its reference went with the first stop
    return;
  }
  std::atomic<uint64_t>& word = slot.lanes[h.lanePlusOne - 1];
  const uint64_t tag = laneTag(h.generation);
  uint64_t w = word.load(kAcquire);
  do {
    if ((w & kTagMask) != tag) {
      countStale();
      return;
    }
    if ((w & kPhaseMask) != kStarted) return;  // stopped twice: the reference went with the first
  } while (!word.compare_exchange_weak(w, (w & ~kPhaseMask) | kStopped, kAcqRel, kAcquire));
  release(slot, h.index);
}

bool EventPath::channelsOf(uint64_t task, uint64_t* started, uint64_t* stopped) const {
  *started = *stopped = 0;
  Slot* slots = slots_.load(kAcquire);
  const uint64_t index = task >> 32;
  const uint32_t capacity = capacity_.load(kAcquire);
  if (slots == nullptr || index == 0 || index > std::min(fresh_.load(kAcquire), capacity)) {
    return false;
  }
  if (builtFlags(slots, capacity)[index - 1].load(kAcquire) == 0) return false;
  const Slot& slot = slots[index - 1];
  const uint32_t generation = static_cast<uint32_t>(task) & kGenerationMask;
  const uint64_t state = slot.state.load(kAcquire);
  if (generationOf(state) != generation || (state & kReferenceMask) == 0) return false;
  const uint64_t tag = laneTag(generation);
  const unsigned n = std::min(slot.nChannels.load(kRelaxed), kMaxChannels);
  for (unsigned lane = 0; lane < n; ++lane) {
    const uint64_t w = slot.lanes[lane].load(kAcquire);
    if ((w & kTagMask) != tag || (w & kPhaseMask) == kArmed) continue;
    *started |= uint64_t{1} << channelOf(w);
    if ((w & kPhaseMask) == kStopped) *stopped |= uint64_t{1} << channelOf(w);
  }
  // Still this task's: the lanes read were its own (a reused slot gets another generation).
  return generationOf(slot.state.load(kAcquire)) == generation;
}

uint32_t EventPath::abandon(const CommMonitor& comm) {
  proxies_.abandon(comm);
  Slot* slots = slots_.load(kAcquire);
  const uint32_t capacity = capacity_.load(kAcquire);
  if (slots == nullptr || capacity == 0) return 0;
  std::atomic<uint8_t>* built = builtFlags(slots, capacity);
  uint32_t abandoned = 0;
  const uint32_t n = std::min(fresh_.load(kAcquire), capacity);
  for (uint32_t i = 0; i < n; ++i) {
    if (built[i].load(kAcquire) == 0) continue;  // under construction: not this comm's task yet
    Slot& slot = slots[i];
    if (slot.comm.load(kAcquire) != &comm) continue;  // a hint, checked again once pinned
    const uint64_t state = slot.state.load(kAcquire);
    const uint32_t generation = generationOf(state);
    if ((state & kReferenceMask) == 0 || !pin(slot, generation, /*countStale=*/false)) continue;
    // Pinned: the slot holds this generation's task until the pin is let go of, and the task
    // holds `comm` (published before the handle), so this look is the task's own.
    if (slot.comm.load(kAcquire) != &comm) {
      release(slot, i);
      continue;
    }
    uint32_t references = 0;
    uint32_t task = slot.task.load(kAcquire);
    while ((task & kGenerationMask) == generation && (task & kTaskAbandoned) == 0) {
      if (slot.task.compare_exchange_weak(task, task | kTaskStopped | kTaskAbandoned, kAcqRel,
                                          kAcquire)) {
        if ((task & kTaskStopped) == 0) ++references;  // NCCL never stopped the task event
        ++abandoned;
        break;
      }
    }
    const uint64_t tag = laneTag(generation);
    const unsigned lanes = std::min(slot.nChannels.load(kRelaxed), kMaxChannels);
    for (unsigned lane = 0; lane < lanes; ++lane) {
      std::atomic<uint64_t>& word = slot.lanes[lane];
      uint64_t w = word.load(kAcquire);
      // Armed (no channel came) or started (its stop never came): the lane's reference is ours.
      while ((w & kTagMask) == tag &&
             ((w & kPhaseMask) == kArmed || (w & kPhaseMask) == kStarted)) {
        if (word.compare_exchange_weak(w, (w & ~kPhaseMask) | kStopped, kAcqRel, kAcquire)) {
          ++references;
          break;
        }
      }
    }
    for (uint32_t r = 0; r < references; ++r) release(slot, i);
    release(slot, i);  // the pin: the last reference completes the task (Skip::Abandoned)
  }
  return abandoned;
}

}  // namespace pilot::metrics
