#include "pilot/metrics/call_samples.h"

#include <cmath>
#include <cstdlib>

#include "memory_order.h"

namespace pilot::metrics {
namespace {

constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 44;

}  // namespace

int sampleBin(uint64_t ns) {
  if (ns <= 1) return 0;
  static const double kInverseLogRatio = 1.0 / std::log(kSampleBinRatio);
  return static_cast<int>(std::floor(std::log(static_cast<double>(ns)) * kInverseLogRatio));
}

CallSamples::CallSamples()
    : slots_(new Slot[kSlots]),
      windows_(static_cast<uint32_t*>(std::calloc(kSlots * kWindowBins, sizeof(uint32_t)))) {}

CallSamples::~CallSamples() {
  std::free(windows_);
}

uint64_t CallSamples::pack(const SampleKey& k) {
  return (static_cast<uint64_t>(k.op) & 0xf) | static_cast<uint64_t>(k.algorithm & 0xf) << 4 |
         static_cast<uint64_t>(k.protocol & 0xf) << 8 | static_cast<uint64_t>(k.channels) << 12 |
         k.messageBytes << 20;
}

SampleKey CallSamples::unpack(uint64_t packed) {
  SampleKey k;
  k.op = static_cast<Operation>(packed & 0xf);
  k.algorithm = static_cast<uint8_t>((packed >> 4) & 0xf);
  k.protocol = static_cast<uint8_t>((packed >> 8) & 0xf);
  k.channels = static_cast<uint8_t>((packed >> 12) & 0xff);
  k.messageBytes = packed >> 20;
  return k;
}

unsigned CallSamples::slotOf(const SampleKey& key) {
  if (key.messageBytes >= kMaxMessageBytes) return kNoKey;
  const uint64_t word = pack(key) + 1;
  unsigned slot = static_cast<unsigned>((word * 0x9E3779B97F4A7C15ull) >> 57) % kSlots;
  for (unsigned probe = 0; probe < kSlots; ++probe, slot = (slot + 1) % kSlots) {
    uint64_t seen = slots_[slot].key.load(std::memory_order_acquire);
    if (seen == 0) {
      // A key is admitted before it is published, so at most kMaxKeys slots are ever taken
      // and a probe always meets a free slot or its key.
      if (keys_.fetch_add(1, kRelaxed) >= kMaxKeys) {
        keys_.fetch_sub(1, kRelaxed);
        return kNoKey;
      }
      if (slots_[slot].key.compare_exchange_strong(seen, word, std::memory_order_acq_rel)) {
        return slot;
      }
      keys_.fetch_sub(1, kRelaxed);  // another key took the slot: `seen` is it
    }
    if (seen == word) return slot;
  }
  return kNoKey;
}

void CallSamples::record(unsigned slot, uint64_t ns) {
  if (slot >= kSlots || windows_ == nullptr) {
    overflow_.fetch_add(1, kRelaxed);
    return;
  }
  Slot& s = slots_[slot];
  const int bin = sampleBin(ns);
  int first = s.firstBin.load(kRelaxed);
  if (first == kUnset) {
    // The window is centred on the first call; whoever comes first sets it.
    const int centred = bin > static_cast<int>(kWindowBins / 2) ? bin - kWindowBins / 2 : 0;
    if (s.firstBin.compare_exchange_strong(first, centred, kRelaxed)) first = centred;
  }
  int offset = bin - first;
  if (offset < 0) offset = 0;
  if (offset >= static_cast<int>(kWindowBins)) offset = kWindowBins - 1;
  __atomic_fetch_add(&windows_[slot * kWindowBins + static_cast<unsigned>(offset)], 1u,
                     __ATOMIC_RELAXED);
  s.sumNs.fetch_add(ns, kRelaxed);
  uint64_t v = s.minNs.load(kRelaxed);
  while (ns < v && !s.minNs.compare_exchange_weak(v, ns, kRelaxed)) {
  }
  v = s.maxNs.load(kRelaxed);
  while (ns > v && !s.maxNs.compare_exchange_weak(v, ns, kRelaxed)) {
  }
  s.calls.fetch_add(1, std::memory_order_release);
}

std::vector<CallSamples::View> CallSamples::snapshot() const {
  std::vector<View> out;
  for (unsigned i = 0; i < kSlots; ++i) {
    const Slot& s = slots_[i];
    const uint64_t word = s.key.load(std::memory_order_acquire);
    if (word == 0 || windows_ == nullptr) continue;
    View v;
    v.key = unpack(word - 1);
    v.counts.resize(kWindowBins);
    uint64_t calls = 0;
    for (unsigned b = 0; b < kWindowBins; ++b) {
      v.counts[b] = __atomic_load_n(&windows_[i * kWindowBins + b], __ATOMIC_RELAXED);
      calls += v.counts[b];
    }
    if (calls == 0) continue;
    // The bins are the calls (a call counted meanwhile may show in one field and not another).
    v.calls = calls;
    v.sumNs = s.sumNs.load(kRelaxed);
    v.minNs = s.minNs.load(kRelaxed);
    v.maxNs = s.maxNs.load(kRelaxed);
    v.firstBin = s.firstBin.load(kRelaxed);
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace pilot::metrics
