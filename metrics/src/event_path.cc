#include "pilot/metrics/event_path.h"

#include <cstdlib>
#include <new>

namespace pilot::metrics {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;
constexpr auto kAcquire = std::memory_order_acquire;
constexpr auto kRelease = std::memory_order_release;
constexpr auto kAcqRel = std::memory_order_acq_rel;

// Handle layout: magic (8 bits) | generation (24) | slot (24) | channel + 1 (8; 0 = the Coll).
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
  std::atomic<uint32_t> collStopped{0};
  std::atomic<uint32_t> nextFree{0};  // index + 1 of the next free slot
  std::atomic<uint64_t> started{0}, stopped{0}, timed{0};
  std::atomic<uint64_t> maxNs{0};
  std::atomic<CommMonitor*> comm{nullptr};
  // Written before the Coll's handle is published (generation, release), then only read.
  uint64_t messageBytes = 0;
  double busBytes = 0;
  double expectedNs = 0;
  unsigned keyIndex = 0;
  unsigned sampleSlot = CallSamples::kNoKey;
  unsigned nChannels = 0;
  // channelStart[c] is written and read by the thread that reports channel c.
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
  // A new generation first: from here every handle of the old one is stale.
  slot.generation.fetch_add(1, kAcqRel);
  inUse_.fetch_sub(1, kRelaxed);
  uint64_t head = freeHead_.load(kRelaxed);
  uint64_t mine;
  do {
    slot.nextFree.store(static_cast<uint32_t>(head), kRelaxed);
    mine = ((head >> 32) + 1) << 32 | (index + 1);
  } while (!freeHead_.compare_exchange_weak(head, mine, kRelease, kRelaxed));
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
  if (!parseOperation(e.func, &op) || elementBytes == 0 ||
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

  uint32_t index = 0;
  Slot* slot = acquire(&index);
  if (slot == nullptr) {
    comm.count(Skip::NoSlot);
    return nullptr;
  }
  comm.retain();
  slot->comm.store(&comm, kRelaxed);
  slot->messageBytes = bytes;
  slot->busBytes = busBytes(op, bytes, comm.identity().nRanks);
  slot->expectedNs = comm.expectedNs(key.decision, op, bytes);
  slot->keyIndex = comm.keyIndex(key.pack());
  slot->sampleSlot = comm.samples().slotOf(
      {op, bytes, key.algorithm, key.protocol, static_cast<uint8_t>(e.nChannels)});
  slot->nChannels = e.nChannels;
  slot->started.store(0, kRelaxed);
  slot->stopped.store(0, kRelaxed);
  slot->timed.store(0, kRelaxed);
  slot->maxNs.store(0, kRelaxed);
  slot->collStopped.store(0, kRelaxed);
  slot->refs.store(1 + e.nChannels, kRelaxed);
  // Publishes the fields above to whichever thread decodes this generation's handles.
  const uint32_t generation = slot->generation.load(kRelaxed);
  slot->generation.store(generation, kRelease);
  return encode(generation, index, 0);
}

void* EventPath::startKernelChannel(void* parent, unsigned channel, uint64_t gpuStart) {
  if (parent == nullptr) return nullptr;  // a collective we did not measure
  unsigned c = 0;
  uint32_t index = 0;
  Slot* slot = decode(parent, &c, &index);
  if (slot == nullptr) return nullptr;
  CommMonitor* comm = slot->comm.load(kRelaxed);
  if (c != 0 || channel >= slot->nChannels) {
    if (comm != nullptr) comm->count(Skip::IgnoredKernel);
    return nullptr;
  }
  const uint64_t bit = uint64_t{1} << channel;
  if (slot->started.fetch_or(bit, kAcqRel) & bit) {
    if (comm != nullptr) comm->count(Skip::IgnoredKernel);  // a second start for the channel
    return nullptr;
  }
  slot->channelStart[channel] = gpuStart;
  return encode(slot->generation.load(kRelaxed), index, channel + 1);
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
  slot->timed.fetch_or(uint64_t{1} << (c - 1), kRelease);
}

void EventPath::complete(Slot& slot) {
  CommMonitor* comm = slot.comm.load(kRelaxed);
  if (comm == nullptr) return;
  const uint64_t all = allChannels(slot.nChannels);
  if ((slot.timed.load(kAcquire) & all) != all) {
    comm->count(Skip::Untimed);
    return;
  }
  Completion c;
  c.timeNs = slot.maxNs.load(kRelaxed);
  c.messageBytes = slot.messageBytes;
  c.busBytes = slot.busBytes;
  c.expectedNs = slot.expectedNs;
  comm->aggregate(slot.keyIndex).record(c);
  comm->samples().record(slot.sampleSlot, c.timeNs);
  comm->countMeasured();
}

void EventPath::stop(void* handle) {
  if (handle == nullptr) return;
  unsigned c = 0;
  uint32_t index = 0;
  Slot* slot = decode(handle, &c, &index);
  if (slot == nullptr) return;
  if (c == 0) {
    if (slot->collStopped.exchange(1, kAcqRel) == 0) release(*slot, index);
    return;
  }
  const uint64_t bit = uint64_t{1} << (c - 1);
  const uint64_t before = slot->stopped.fetch_or(bit, kAcqRel);
  if (before & bit) return;  // stopped twice: the reference went with the first stop
  if ((before | bit) == allChannels(slot->nChannels)) complete(*slot);
  release(*slot, index);
}

}  // namespace pilot::metrics
