#include "soak_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "pilot/core/mix.h"

namespace soak {
namespace {

/// Sizes where the transport changes its plan: a page, the eager limit (64K), the chunk (512K)
/// and twice that, each with its neighbours.
constexpr size_t kEdges[] = {4095,   4096,   4097,   65535,   65536,   65537,
                             524287, 524288, 524289, 1048575, 1048576, 1048577};

size_t messageSize(Rng& rng, size_t cap) {
  const uint64_t kind = rng.below(100);
  size_t size = 0;
  if (kind < 8) {
    size = 0;
  } else if (kind < 16) {
    size = 1 + rng.below(64);
  } else if (kind < 28) {
    size = kEdges[rng.below(std::size(kEdges))];
  } else {
    // Log-uniform over 1 B .. 16 MiB: as many 1K-8K messages as 1M-8M ones.
    const double exponent = static_cast<double>(rng.below(1 << 20)) / (1 << 20) * 24.0;
    size = static_cast<size_t>(std::ldexp(1.0, static_cast<int>(exponent)));
    size += rng.below(size);
  }
  return std::min(size, cap);
}

size_t roundUp64(size_t n) {
  return (n + 63) & ~size_t{63};
}

}  // namespace

uint64_t Rng::next() {
  state_ += 0x9E3779B97F4A7C15ull;
  return pilot::mix64(state_);
}

uint64_t keyOf(uint64_t seed, std::initializer_list<uint64_t> parts) {
  uint64_t key = pilot::mix64(seed);
  for (uint64_t part : parts) key = pilot::mix64(key ^ part);
  return key;
}

size_t StepPlan::footprint() const {
  size_t total = 0;
  for (int i = 0; i < n; ++i) total += roundUp64(std::max<size_t>(messages[i].capacity, 1));
  return total;
}

size_t StepPlan::payload() const {
  size_t total = 0;
  for (int i = 0; i < n; ++i) total += messages[i].size;
  return total;
}

StepPlan planStep(uint64_t seed, int comm, uint32_t epoch, int dir, uint64_t step) {
  const uint64_t key =
      keyOf(seed, {static_cast<uint64_t>(comm), epoch, static_cast<uint64_t>(dir), step});
  Rng rng(key);
  StepPlan p;
  p.n = rng.below(2) == 0 ? 1 : 2 + static_cast<int>(rng.below(kMaxGroup - 1));
  // Distinct tags from a small range, so consecutive steps reuse them (matching by tag across
  // steps, and parked messages of a tag whose older buffer is still posted).
  std::array<int, 16> tags;
  std::iota(tags.begin(), tags.end(), 0);
  for (int i = 0; i < p.n; ++i) std::swap(tags[i], tags[i + rng.below(tags.size() - i)]);
  const bool whole = p.n == 1 && rng.below(50) == 0;  // now and then the largest message
  const size_t cap = kMaxStepBytes / static_cast<size_t>(p.n);
  for (int i = 0; i < p.n; ++i) {
    PlannedMessage& m = p.messages[i];
    m.tag = tags[i];
    m.size = whole ? kMaxStepBytes : messageSize(rng, cap);
    m.capacity = m.size + (rng.below(2) == 0 ? 0 : 1 + rng.below(kMaxSlack));
    m.pattern = keyOf(key, {static_cast<uint64_t>(i)});
  }
  std::iota(p.sendOrder.begin(), p.sendOrder.begin() + p.n, 0);
  for (int i = 0; i + 1 < p.n; ++i) std::swap(p.sendOrder[i], p.sendOrder[i + rng.below(p.n - i)]);
  p.receiverLagMs = rng.below(100) < 15 ? 1 + static_cast<int>(rng.below(10)) : 0;
  return p;
}

const char* faultName(FaultKind kind) {
  switch (kind) {
    case FaultKind::Drop:
      return "drop";
    case FaultKind::LinkFlap:
      return "link-flap";
    case FaultKind::Kill:
      return "kill";
    case FaultKind::Flood:
      return "flood";
    case FaultKind::WrongSecret:
      return "wrong-secret";
  }
  return "?";
}

std::vector<Fault> planFaults(uint64_t seed, int pairs, int commsPerPair, int timeoutMs,
                              int count) {
  Rng rng(keyOf(seed, {0xfa017}));
  std::vector<Fault> faults;
  std::array<FaultKind, kFaultKinds> round = {FaultKind::Drop, FaultKind::LinkFlap, FaultKind::Kill,
                                              FaultKind::Flood, FaultKind::WrongSecret};
  while (static_cast<int>(faults.size()) < count) {
    for (int i = 0; i + 1 < kFaultKinds; ++i) {
      std::swap(round[i], round[i + rng.below(kFaultKinds - i)]);
    }
    for (FaultKind kind : round) {
      Fault f;
      f.kind = kind;
      f.gapMs = 1000 + static_cast<int>(rng.below(1000));
      f.pair = static_cast<int>(rng.below(pairs));
      f.side = static_cast<int>(rng.below(2));
      f.comm = f.pair * commsPerPair + static_cast<int>(rng.below(commsPerPair));
      if (kind == FaultKind::Drop) f.durationMs = 2000;
      // Shorter than the timeout (TCP retransmits through it) up to well past it (all break).
      if (kind == FaultKind::LinkFlap) {
        f.durationMs = 1000 + static_cast<int>(rng.below(timeoutMs + 1000));
      }
      if (kind == FaultKind::Flood) f.strangers = 100 + static_cast<int>(rng.below(201));
      faults.push_back(f);
    }
  }
  faults.resize(count);
  return faults;
}

}  // namespace soak
