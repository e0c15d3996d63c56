#include "pilot/metrics/proxy_table.h"

#include "memory_order.h"

namespace pilot::metrics::detail {
namespace {

// Handle: magic (8) | generation (24) | record (16) | step (8: 0 = the ProxyOp, 1 = a step).
// Its own magic: never one of the event path's task handles (0xB7) or group tickets.
constexpr uint64_t kMagic = 0xB5;

uint64_t generationOf(uint64_t state) {
  return state >> 1;
}

void* encode(uint64_t generation, uint32_t index, unsigned step) {
  const uint64_t h = kMagic << 56 | (generation & 0xffffff) << 32 | uint64_t{index} << 8 | step;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(h));
}

}  // namespace

bool ProxyTable::isProxyHandle(const void* handle) {
  return (static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)) >> 56) == kMagic;
}

void* ProxyTable::open(const CommMonitor& comm, uint64_t ordinal, unsigned channel, int peer,
                       bool send, int nSteps, bool countSteps) {
  const uint32_t first = next_.fetch_add(1, kRelaxed);
  for (uint32_t k = 0; k < kRecords; ++k) {
    const uint32_t i = (first + k) % kRecords;
    Record& r = records_[i];
    uint64_t state = r.state.load(kRelaxed);
    if ((state & 1) != 0 || !r.state.compare_exchange_strong(state, state | 1, kAcqRel)) continue;
    inUse_.fetch_add(1, kRelaxed);
    const uint64_t p = peer >= 0 ? static_cast<uint64_t>(peer) + 1 : 0;
    const uint64_t steps = nSteps > 0 ? static_cast<uint64_t>(nSteps) & 0x3fffff : 0;
    r.ordinal.store(ordinal, kRelaxed);
    r.what.store((channel & 0xff) | uint64_t{send} << 8 | uint64_t{countSteps} << 9 | steps << 10 |
                     (p & 0xffffffff) << 32,
                 kRelaxed);
    r.steps.store(0, kRelaxed);
    r.comm.store(&comm, kRelease);  // last: the exporter reads a record whose comm it matches
    return encode(generationOf(state), i, 0);
  }
  return nullptr;
}

ProxyTable::Record* ProxyTable::decode(const void* handle, bool* isStep) const {
  const uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  if ((h >> 56) != kMagic) return nullptr;
  const uint32_t index = static_cast<uint32_t>(h >> 8) & 0xffff;
  if (index >= kRecords) return nullptr;
  Record& r = const_cast<Record&>(records_[index]);
  const uint64_t state = r.state.load(kAcquire);
  if ((state & 1) == 0 || (generationOf(state) & 0xffffff) != ((h >> 32) & 0xffffff)) {
    return nullptr;
  }
  *isStep = (h & 0xff) != 0;
  return &r;
}

void* ProxyTable::step(void* opHandle) const {
  bool isStep = false;
  const Record* r = decode(opHandle, &isStep);
  if (r == nullptr || isStep) return nullptr;
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(opHandle) | 1);
}

void ProxyTable::release(Record& r, uint64_t state) {
  // The next generation, free: a late event for the old one no longer decodes. The comm stays:
  // readers go by the state, and a new owner writes its own.
  if (r.state.compare_exchange_strong(state, (generationOf(state) + 1) << 1, kAcqRel)) {
    inUse_.fetch_sub(1, kRelaxed);
  }
}

void ProxyTable::stop(void* handle) {
  bool isStep = false;
  Record* r = decode(handle, &isStep);
  if (r == nullptr) return;
  if (isStep) {
    r->steps.fetch_add(1, kRelaxed);
    return;
  }
  const uint64_t state = r->state.load(kAcquire);
  if ((generationOf(state) & 0xffffff) ==
      ((static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)) >> 32) & 0xffffff)) {
    release(*r, state);
  }
}

void ProxyTable::abandon(const CommMonitor& comm) {
  for (Record& r : records_) {
    const uint64_t state = r.state.load(kAcquire);
    if ((state & 1) != 0 && r.comm.load(kAcquire) == &comm) release(r, state);
  }
}

std::vector<ProxyOpView> ProxyTable::openOf(const CommMonitor& comm, uint64_t ordinal) const {
  std::vector<ProxyOpView> out;
  if (inUse_.load(kRelaxed) == 0) return out;
  for (const Record& r : records_) {
    const uint64_t state = r.state.load(kAcquire);
    if ((state & 1) == 0 || r.comm.load(kAcquire) != &comm || r.ordinal.load(kRelaxed) != ordinal) {
      continue;
    }
    const uint64_t what = r.what.load(kRelaxed);
    const int steps = r.steps.load(kRelaxed);
    if (r.state.load(kAcquire) != state) continue;  // freed, or taken by another, meanwhile
    ProxyOpView v;
    v.ordinal = ordinal;
    v.channel = static_cast<unsigned>(what & 0xff);
    v.send = (what >> 8 & 1) != 0;
    v.nSteps = static_cast<int>(what >> 10 & 0x3fffff);
    v.steps = (what >> 9 & 1) != 0 ? steps : -1;
    v.peer = static_cast<int>(what >> 32 & 0xffffffff) - 1;
    out.push_back(v);
  }
  return out;
}

}  // namespace pilot::metrics::detail
