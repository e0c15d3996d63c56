#include "pilot/metrics/event_path.h"

#include <algorithm>
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

// A slot's state: its generation (handles carry the low 24 bits) << 32 | its references.
constexpr uint64_t kReferenceMask = 0xffffffff;
constexpr uint64_t kOneGeneration = uint64_t{1} << 32;

uint32_t generationOf(uint64_t state) {
  return static_cast<uint32_t>(state >> 32) & kGenerationMask;
}

// A kernel channel's word: generation (24 bits) | phase (2) | timed (1) | the longest stop -
// start recorded in ns (37 bits; longer is kept as 137 s). The Coll's word: generation | stopped.
// Each event changes its word with one compare-and-swap that expects the handle's generation:
// an event NCCL should not send (a second start or stop, a stop state after the stop) holds no
// reference on the slot, so the collective may complete and another take the slot meanwhile,
// and that swap then fails instead of changing the other's channel.
constexpr int kTagShift = 40;
constexpr uint64_t kTagMask = uint64_t{kGenerationMask} << kTagShift;
constexpr uint64_t kArmed = uint64_t{1} << 38;  // the collective has the channel; not started
constexpr uint64_t kStarted = uint64_t{2} << 38;
constexpr uint64_t kStopped = uint64_t{3} << 38;
constexpr uint64_t kPhaseMask = uint64_t{3} << 38;
constexpr uint64_t kTimed = uint64_t{1} << 37;
constexpr uint64_t kMaxNs = kTimed - 1;
constexpr uint32_t kCollStopped = uint32_t{1} << 24;

uint64_t channelTag(uint32_t generation) {
  return uint64_t{generation & kGenerationMask} << kTagShift;
}

void* encode(uint32_t generation, uint32_t index, unsigned channelPlusOne) {
  const uint64_t h = kMagic << 56 | static_cast<uint64_t>(generation & kGenerationMask) << 32 |
                     static_cast<uint64_t>(index) << 8 | channelPlusOne;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(h));
}

}  // namespace

struct EventPath::Handle {
  Slot* slot = nullptr;  // null: not ours, or its collective completed (counted)
  uint32_t index = 0;
  uint32_t generation = 0;
  unsigned channelPlusOne = 0;
};

struct EventPath::Slot {
  // Generation and references in one word: a reference is only ever taken on the generation a
  // handle names while it still has one (pin), and the last one let go moves it on.
  std::atomic<uint64_t> state{0};
  std::atomic<uint32_t> coll{0};      // the Coll's word (above)
  std::atomic<uint32_t> nextFree{0};  // index + 1 of the next free slot
  std::atomic<CommMonitor*> comm{nullptr};
  // Written before the Coll's handle is published (state, release); read by whoever lets go of
  // the last reference.
  uint64_t messageBytes = 0;
  double busBytes = 0;
  double expectedNs = 0;
  unsigned keyIndex = 0;
  unsigned sampleSlot = CallSamples::kNoKey;
  unsigned nChannels = 0;
  std::atomic<uint64_t> channels[kMaxChannels] = {};  // the channels' words (above)
  // Written by the channel's start (which owns it), read by its stop states. Atomic because a
  // stop state sent after the stop may read one another collective's start writes; its
  // compare-and-swap then fails.
  std::atomic<uint64_t> channelStart[kMaxChannels] = {};
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
  // touched: 4096 slots of ~1.1 KB cost nothing until the job has that many in flight.
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
  if ((slot.state.fetch_sub(1, kAcqRel) & kReferenceMask) != 1) return;
  complete(slot);  // the Coll and every channel have stopped
  CommMonitor* comm = slot.comm.exchange(nullptr, kAcqRel);
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
  const unsigned c = static_cast<unsigned>(h & 0xff);
  if (slots == nullptr || i >= fresh_.load(kAcquire) || c > kMaxChannels) {
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
  return {&slot, i, generation, c};
}

bool EventPath::pin(Slot& slot, uint32_t generation) {
  uint64_t state = slot.state.load(kAcquire);
  do {
    if (generationOf(state) != generation || (state & kReferenceMask) == 0) {
      countStale();
      return false;
    }
  } while (!slot.state.compare_exchange_weak(state, state + 1, kAcqRel, kAcquire));
  return true;
}

void EventPath::countStale() {
  orphans_[static_cast<int>(Orphan::Stale)].fetch_add(1, kRelaxed);
}

void* EventPath::publish(Slot& slot, uint32_t index, unsigned nChannels) {
  const uint64_t unreferenced = slot.state.load(kRelaxed);  // this generation, none yet
  const uint32_t generation = generationOf(unreferenced);
  const uint64_t armed = channelTag(generation) | kArmed;
  for (unsigned c = 0; c < nChannels; ++c) slot.channels[c].store(armed, kRelaxed);
  slot.coll.store(generation, kRelaxed);
  slot.nChannels = nChannels;
  // Publishes the fields, with the references of the Coll and of each channel, to whichever
  // thread decodes this generation's handles.
  slot.state.store(unreferenced | (1 + nChannels), kRelease);
  return encode(generation, index, 0);
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
  return publish(*slot, index, e.nChannels);
}

void* EventPath::startKernelChannel(void* parent, unsigned channel, uint64_t gpuStart) {
  if (parent == nullptr) return nullptr;  // a collective we did not measure
  const Handle h = decode(parent);
  if (h.slot == nullptr) return nullptr;
  Slot& slot = *h.slot;
  if (h.channelPlusOne == 0 && channel < kMaxChannels) {
    const uint64_t tag = channelTag(h.generation);
    uint64_t armed = tag | kArmed;
    if (slot.channels[channel].compare_exchange_strong(armed, tag | kStarted, kAcqRel, kAcquire)) {
      slot.channelStart[channel].store(gpuStart, kRelaxed);
      return encode(h.generation, h.index, channel + 1);
    }
  }
  // Not a Coll's handle, a channel the collective does not have, a second start, or a slot
  // reused since the look: counted against the communicator, which only a reference keeps
  // (the collective may have completed since, and its communicator be gone).
  if (pin(slot, h.generation)) {
    if (CommMonitor* comm = slot.comm.load(kRelaxed)) comm->count(Skip::IgnoredKernel);
    release(slot, h.index);
  }
  return nullptr;
}

void EventPath::recordKernelChannelStop(void* handle, uint64_t gpuStop) {
  if (handle == nullptr) return;
  const Handle h = decode(handle);
  if (h.slot == nullptr || h.channelPlusOne == 0) return;
  const unsigned c = h.channelPlusOne - 1;
  std::atomic<uint64_t>& word = h.slot->channels[c];
  const uint64_t start = h.slot->channelStart[c].load(kRelaxed);
  if (start == 0 || gpuStop <= start) return;  // no usable GPU time (Inspector's rule too)
  const uint64_t ns = std::min(gpuStop - start, kMaxNs);
  const uint64_t started = channelTag(h.generation) | kStarted;
  uint64_t w = word.load(kAcquire);
  for (;;) {
    if ((w & ~(kTimed | kMaxNs)) != started) {  // a slot reused since, or after the stop
      if ((w & kTagMask) != channelTag(h.generation)) countStale();
      return;
    }
    const uint64_t timed = started | kTimed | std::max(w & kMaxNs, ns);
    if (timed == w || word.compare_exchange_weak(w, timed, kAcqRel, kAcquire)) return;
  }
}

void EventPath::complete(Slot& slot) {
  CommMonitor* comm = slot.comm.load(kRelaxed);
  if (comm == nullptr) return;
  uint64_t longest = 0;
  for (unsigned c = 0; c < slot.nChannels; ++c) {
    const uint64_t w = slot.channels[c].load(kRelaxed);
    if ((w & kTimed) == 0) {
      comm->count(Skip::Untimed);
      return;
    }
    longest = std::max(longest, w & kMaxNs);
  }
  Completion done;
  done.timeNs = longest;
  done.messageBytes = slot.messageBytes;
  done.busBytes = slot.busBytes;
  done.expectedNs = slot.expectedNs;
  comm->aggregate(slot.keyIndex).record(done);
  comm->samples().record(slot.sampleSlot, done.timeNs);
  comm->countMeasured();
}

void EventPath::stop(void* handle) {
  if (handle == nullptr) return;
  const Handle h = decode(handle);
  if (h.slot == nullptr) return;
  Slot& slot = *h.slot;
  if (h.channelPlusOne == 0) {
    uint32_t open = h.generation;
    if (slot.coll.compare_exchange_strong(open, open | kCollStopped, kAcqRel, kAcquire)) {
      release(slot, h.index);
    } else if ((open & kGenerationMask) != h.generation) {
      countStale();
    }  // else stopped twice: its reference went with the first stop
    return;
  }
  std::atomic<uint64_t>& word = slot.channels[h.channelPlusOne - 1];
  const uint64_t tag = channelTag(h.generation);
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

}  // namespace pilot::metrics
