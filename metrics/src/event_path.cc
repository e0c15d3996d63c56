#include "pilot/metrics/event_path.h"

#include <cstdlib>
#include <new>

namespace pilot::metrics {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;
constexpr auto kAcquire = std::memory_order_acquire;
constexpr auto kRelease = std::memory_order_release;
constexpr auto kAcqRel = std::memory_order_acq_rel;

// Handle layout: magic (8 bits) | generation (24) | slot (24) | lane + 1 (8; 0 = the task).
// The magic sits where a user-space pointer has zeros, so no pointer NCCL or another process
// hands us decodes as ours.
constexpr uint64_t kMagic = 0xB7;
constexpr uint32_t kGenerationMask = 0xffffff;
constexpr uint32_t kMaxSlots = 0xffffff;

void* encode(uint32_t generation, uint32_t index, unsigned channelPlusOne) {
  const uint64_t h = kMagic << 56 | static_cast<uint64_t>(generation & kGenerationMask) << 32 |
                     static_cast<uint64_t>(index) << 8 | channelPlusOne;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(h));
}

uint64_t allChannels(unsigned n) {
  return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
}

}  // namespace

struct EventPath::Slot {
  std::atomic<uint32_t> generation{0};
  std::atomic<uint32_t> refs{0};
  std::atomic<uint32_t> taskStopped{0};
  std::atomic<uint32_t> nextFree{0};           // index + 1 of the next free slot
  std::atomic<uint64_t> channelsSeen{0};       // NCCL's channel ids, to refuse a second start
  std::atomic<uint64_t> stopped{0}, timed{0};  // per lane
  std::atomic<uint64_t> maxNs{0};
  std::atomic<uint64_t> lastStop{0};  // for a group's span: the latest GPU stop of any lane
  std::atomic<CommMonitor*> comm{nullptr};
  // Written before the task's handle is published (generation, release), then only read.
  TaskKind kind = TaskKind::Collective;
  uint32_t group = detail::GroupTable::kNone;
  uint64_t messageBytes = 0;
  double busBytes = 0;
  double expectedNs = 0;
  unsigned keyIndex = 0;
  unsigned sampleSlot = CallSamples::kNoKey;
  unsigned nChannels = 0;
  // channelStart[lane] is written by the thread that reports that lane's channel.
  uint64_t channelStart[kMaxChannels] = {};
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

bool EventPath::reserve(uint32_t slots) {
  if (slots_.load(kAcquire) != nullptr) return true;
  if (slots == 0 || slots > kMaxSlots) return false;
  void* memory = std::calloc(slots, sizeof(Slot));
  if (memory == nullptr) return false;
  // A slot is constructed when first used (acquire), so pages no collective needed are never
  // touched: 4096 slots of ~600 bytes cost nothing until the job has that many in flight.
  Slot* typed = static_cast<Slot*>(memory);
  Slot* expected = nullptr;
  if (!slots_.compare_exchange_strong(expected, typed, kAcqRel)) {
    std::free(memory);
    return true;
  }
  capacity_.store(slots, kRelease);
  return true;
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
      return new (&slots[i]) Slot;
    }
  }
  return nullptr;
}

void EventPath::release(Slot& slot, uint32_t index) {
  if (slot.refs.fetch_sub(1, kAcqRel) != 1) return;
  CommMonitor* comm = slot.comm.exchange(nullptr, kAcqRel);
  const uint32_t group = slot.group;
  // A new generation first: from here every handle of the old one is stale.
  slot.generation.fetch_add(1, kAcqRel);
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

EventPath::Slot* EventPath::decode(void* handle, unsigned* channelPlusOne, uint32_t* index) {
  const uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  if ((h >> 56) != kMagic) {
    orphans_[static_cast<int>(Orphan::Foreign)].fetch_add(1, kRelaxed);
    return nullptr;
  }
  Slot* slots = slots_.load(kAcquire);
  const uint32_t i = static_cast<uint32_t>(h >> 8) & kMaxSlots;
  const unsigned c = static_cast<unsigned>(h & 0xff);
  if (slots == nullptr || i >= fresh_.load(kAcquire) || c > kMaxChannels) {
    orphans_[static_cast<int>(Orphan::Foreign)].fetch_add(1, kRelaxed);
    return nullptr;
  }
  Slot& slot = slots[i];
  if ((slot.generation.load(kAcquire) & kGenerationMask) != ((h >> 32) & kGenerationMask)) {
    orphans_[static_cast<int>(Orphan::Stale)].fetch_add(1, kRelaxed);
    return nullptr;
  }
  *channelPlusOne = c;
  *index = i;
  return &slot;
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
  const MetricsSettings& s = comm.settings();
  if (bytes == 0 || bytes < s.minBytes) {
    comm.count(Skip::BelowMinBytes);
    return nullptr;
  }
  if (s.sample > 1 && e.seqNumber % s.sample != 0) {
    comm.count(Skip::SampledOut);
    return nullptr;
  }
  if (e.nChannels == 0 || e.nChannels > kMaxChannels) {
    comm.count(Skip::NoChannels);
    return nullptr;
  }
  KeyFields key;
  key.op = op;
  key.bucket = static_cast<uint8_t>(sizeBucket(bytes));
  key.algorithm = parseAlgorithmIndex(e.algo);
  key.protocol = parseProtocolIndex(e.proto);
  key.channels = static_cast<uint8_t>(e.nChannels);
  key.decision = comm.decide(op, bytes, key.algorithm, key.protocol, static_cast<int>(e.nChannels));
  void* handle =
      publish(comm, TaskKind::Collective, key, bytes, busBytes(op, bytes, comm.identity().nRanks),
              e.nChannels, detail::GroupTable::kNone);
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
  const MetricsSettings& s = comm.settings();
  // A group is sampled whole (its ticket counts the opening thread's groups), or its exchange
  // could never be complete; an operation outside a group by the communicator's count.
  const uint64_t ticket = detail::GroupTable::ticketOf(e.group);
  const uint64_t sequence = ticket != 0 ? ticket : comm.seen(TaskKind::P2p);
  if (s.sample > 1 && sequence % s.sample != 0) {
    comm.count(Skip::SampledOut, TaskKind::P2p);
    return nullptr;
  }
  const uint32_t group = groups_.join(e.group, comm);
  Skip skip = Skip::Count;
  if (bytes == 0 || bytes < s.minBytes) {
    skip = Skip::BelowMinBytes;
  } else if (e.nChannels == 0 || e.nChannels > kMaxChannels) {
    skip = Skip::NoChannels;
  }
  void* handle = nullptr;
  if (skip == Skip::Count) {
    KeyFields key;
    key.op = op;
    key.bucket = static_cast<uint8_t>(sizeBucket(bytes));
    key.channels = static_cast<uint8_t>(e.nChannels);
    handle = publish(comm, TaskKind::P2p, key, bytes, busBytes(op, bytes, comm.identity().nRanks),
                     e.nChannels, group);
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
  if (handle == nullptr) comm.count(skip, TaskKind::P2p);
  return handle;
}

void* EventPath::publish(CommMonitor& comm, TaskKind kind, const KeyFields& key, uint64_t bytes,
                         double busBytes, unsigned channels, uint32_t group) {
  uint32_t index = 0;
  Slot* slot = acquire(&index);
  if (slot == nullptr) return nullptr;
  comm.retain();
  slot->comm.store(&comm, kRelaxed);
  slot->kind = kind;
  slot->group = group;
  slot->messageBytes = bytes;
  slot->busBytes = busBytes;
  slot->expectedNs = comm.expectedNs(key.decision, key.op, bytes);
  slot->keyIndex = comm.keyIndex(key.pack());
  slot->sampleSlot = kind == TaskKind::Collective
                         ? comm.samples().slotOf({key.op, bytes, key.algorithm, key.protocol,
                                                  static_cast<uint8_t>(channels)})
                         : CallSamples::kNoKey;
  slot->nChannels = channels;
  slot->channelsSeen.store(0, kRelaxed);
  slot->stopped.store(0, kRelaxed);
  slot->timed.store(0, kRelaxed);
  slot->maxNs.store(0, kRelaxed);
  slot->lastStop.store(0, kRelaxed);
  slot->taskStopped.store(0, kRelaxed);
  slot->refs.store(1 + channels, kRelaxed);
  // Publishes the fields above to whichever thread decodes this generation's handles.
  const uint32_t generation = slot->generation.load(kRelaxed);
  slot->generation.store(generation, kRelease);
  return encode(generation, index, 0);
}

void* EventPath::startKernelChannel(void* parent, unsigned channel, uint64_t gpuStart) {
  if (parent == nullptr) return nullptr;  // a task we did not measure
  unsigned c = 0;
  uint32_t index = 0;
  Slot* slot = decode(parent, &c, &index);
  if (slot == nullptr) return nullptr;
  CommMonitor* comm = slot->comm.load(kRelaxed);
  const TaskKind kind = slot->kind;
  // One lane per distinct channel id, as many as NCCL announced: a second start for a channel,
  // or one channel too many, is ignored. Each fetch_or adds one bit, so the bits set before it
  // number the lanes 0, 1, 2, ... in the order the starts land, whatever the threads.
  const uint64_t bit = channel < kMaxChannels ? uint64_t{1} << channel : 0;
  uint32_t lane = UINT32_MAX;
  if (c == 0 && bit != 0) {
    const uint64_t before = slot->channelsSeen.fetch_or(bit, kAcqRel);
    if ((before & bit) == 0) lane = static_cast<uint32_t>(__builtin_popcountll(before));
  }
  if (lane >= slot->nChannels) {
    if (comm != nullptr) comm->count(Skip::IgnoredKernel, kind);
    return nullptr;
  }
  slot->channelStart[lane] = gpuStart;
  return encode(slot->generation.load(kRelaxed), index, lane + 1);
}

void EventPath::recordKernelChannelStop(void* handle, uint64_t gpuStop) {
  if (handle == nullptr) return;
  unsigned c = 0;
  uint32_t index = 0;
  Slot* slot = decode(handle, &c, &index);
  if (slot == nullptr || c == 0) return;
  const uint64_t start = slot->channelStart[c - 1];
  if (start == 0 || gpuStop <= start) return;  // no usable GPU time (Inspector's rule too)
  const uint64_t ns = gpuStop - start;
  uint64_t current = slot->maxNs.load(kRelaxed);
  while (ns > current && !slot->maxNs.compare_exchange_weak(current, ns, kRelaxed)) {
  }
  if (slot->group != detail::GroupTable::kNone) {
    current = slot->lastStop.load(kRelaxed);
    while (gpuStop > current && !slot->lastStop.compare_exchange_weak(current, gpuStop, kRelaxed)) {
    }
  }
  slot->timed.fetch_or(uint64_t{1} << (c - 1), kRelease);
}

void EventPath::complete(Slot& slot) {
  CommMonitor* comm = slot.comm.load(kRelaxed);
  if (comm == nullptr) return;
  const uint64_t all = allChannels(slot.nChannels);
  if ((slot.timed.load(kAcquire) & all) != all) {
    comm->count(Skip::Untimed, slot.kind);
    if (slot.group != detail::GroupTable::kNone) groups_.spoil(slot.group);
    return;
  }
  Completion c;
  c.timeNs = slot.maxNs.load(kRelaxed);
  c.messageBytes = slot.messageBytes;
  c.busBytes = slot.busBytes;
  c.expectedNs = slot.expectedNs;
  comm->aggregate(slot.keyIndex).record(c);
  if (slot.kind == TaskKind::Collective) comm->samples().record(slot.sampleSlot, c.timeNs);
  comm->countMeasured(slot.kind);
  if (slot.group != detail::GroupTable::kNone) {
    uint64_t first = UINT64_MAX;
    for (unsigned lane = 0; lane < slot.nChannels; ++lane) {
      if (slot.channelStart[lane] < first) first = slot.channelStart[lane];
    }
    groups_.addTimes(slot.group, first, slot.lastStop.load(kRelaxed));
  }
}

void EventPath::stop(void* handle) {
  if (handle == nullptr) return;
  if (detail::GroupTable::isGroupHandle(handle)) {
    groups_.close(handle);
    return;
  }
  unsigned c = 0;
  uint32_t index = 0;
  Slot* slot = decode(handle, &c, &index);
  if (slot == nullptr) return;
  if (c == 0) {
    if (slot->taskStopped.exchange(1, kAcqRel) == 0) release(*slot, index);
    return;
  }
  const uint64_t bit = uint64_t{1} << (c - 1);
  const uint64_t before = slot->stopped.fetch_or(bit, kAcqRel);
  if (before & bit) return;  // stopped twice: the reference went with the first stop
  if ((before | bit) == allChannels(slot->nChannels)) complete(*slot);
  release(*slot, index);
}

}  // namespace pilot::metrics
