#include "pilot/tuner/graph_capture.h"

#include <atomic>

#include "pilot/core/mix.h"

namespace pilot::tuner {
namespace {

constexpr unsigned kSlots = 256;

// Zero-initialised statics (no constructor runs at dlopen). A slot holds the commId's mix (0, a
// free slot, becomes 1); `full` makes every lookup say yes once no slot is left.
std::atomic<uint64_t> slots[kSlots];
std::atomic<bool> full{false};
std::atomic<bool> any{false};  // no communicator captured anything: the common answer, one load

uint64_t tag(uint64_t commId) {
  const uint64_t x = mix64(commId);
  return x == 0 ? 1 : x;
}

}  // namespace

void noteGraphCapture(uint64_t commId) noexcept {
  any.store(true, std::memory_order_release);
  const uint64_t t = tag(commId);
  for (unsigned probe = 0, slot = t % kSlots; probe < kSlots; ++probe, slot = (slot + 1) % kSlots) {
    uint64_t seen = slots[slot].load(std::memory_order_acquire);
    if (seen == 0 && slots[slot].compare_exchange_strong(seen, t, std::memory_order_acq_rel)) {
      return;
    }
    if (seen == t) return;
  }
  full.store(true, std::memory_order_release);
}

bool graphCaptured(uint64_t commId) noexcept {
  if (!any.load(std::memory_order_acquire)) return false;
  if (full.load(std::memory_order_acquire)) return true;
  const uint64_t t = tag(commId);
  for (unsigned probe = 0, slot = t % kSlots; probe < kSlots; ++probe, slot = (slot + 1) % kSlots) {
    const uint64_t seen = slots[slot].load(std::memory_order_acquire);
    if (seen == t) return true;
    if (seen == 0) return false;
  }
  return false;
}

}  // namespace pilot::tuner
