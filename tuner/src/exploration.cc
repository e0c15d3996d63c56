#include "pilot/tuner/exploration.h"

#include <cstdio>

#include "pilot/core/sha256.h"
#include "pilot/core/text.h"
#include "pilot/tuner/graph_capture.h"

namespace pilot::tuner {
namespace {

/// SplitMix64's finalizer: a fixed, platform-independent mix (the schedule must be identical
/// on every rank, so no std::hash).
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr uint64_t kOne = uint64_t{1} << 32;

}  // namespace

Expected<ExploreSettings> readExploreSettings(const EnvLookup& env) {
  ExploreSettings s;
  auto text = readText(env, setting::kTunerExplore);
  if (!text) return s;
  auto value = text::parseDecimal(*text);
  if (!value || !(*value >= 0.0) || *value > kMaxExploreFraction) {
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", kMaxExploreFraction);
    return Error{std::string(setting::kTunerExplore) + "=" + text->substr(0, 40) +
                 " is not a fraction in [0, " + bound + "]"};
  }
  s.fraction = *value;
  return s;
}

std::string exploreDigest(const ExploreSettings& settings, const std::string& tableSha256) {
  char line[160];
  std::snprintf(line, sizeof line, "explore-v1 fraction=%.6f bound=%.3f table=", settings.fraction,
                static_cast<double>(settings.costBound));
  return sha256Hex(std::string(line) + tableSha256).substr(0, 8);
}

Explorer::Explorer(const ExploreSettings& settings, uint64_t commId)
    : commId_(commId),
      step_(static_cast<uint64_t>(settings.fraction * static_cast<double>(kOne))),
      costBound_(settings.costBound),
      commSalt_(mix(commId)),
      entries_(new Entry[kKeys]) {}

uint64_t Explorer::keyOf(int collType, uint64_t nBytes) const noexcept {
  return mix(commSalt_ ^ mix(nBytes * 16 + static_cast<uint64_t>(collType & 0xf))) | 1;
}

bool Explorer::scheduled(int collType, uint64_t nBytes, uint64_t* ordinal) noexcept {
  if (step_ == 0) return false;
  const uint64_t key = keyOf(collType, nBytes);
  unsigned slot = static_cast<unsigned>(key >> 40) % kKeys;
  for (unsigned probe = 0; probe < kKeys; ++probe, slot = (slot + 1) % kKeys) {
    Entry& e = entries_[slot];
    uint64_t seen = e.key.load(std::memory_order_acquire);
    if (seen == 0 && e.key.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) {
      seen = key;  // else `seen` is the pair that took the slot meanwhile
    }
    if (seen != key) continue;
    // Bresenham over the calls: call n explores when (n + offset) x step crosses a multiple of
    // 2^32, so exactly `fraction` of the calls explore, evenly spread; the per-pair offset
    // keeps different sizes from exploring in the same training step.
    const uint64_t n = e.calls.fetch_add(1, std::memory_order_relaxed);
    const uint64_t at = (n + (key >> 32)) * step_;
    if ((at & (kOne - 1)) + step_ < kOne) return false;
    if (graphCaptured(commId_)) return false;  // graph_capture.h: it would replay forever
    *ordinal = at >> 32;
    return true;
  }
  return false;  // every slot holds another pair
}

int Explorer::pick(int collType, uint64_t nBytes, uint64_t ordinal, const float* ncclCosts,
                   int numCells, int baseline) const noexcept {
  if (numCells <= 0 || numCells > kMaxExploreCells) return -1;
  const int cheapest = cheapestCell(ncclCosts, numCells);
  if (cheapest < 0) return -1;
  const float limit = ncclCosts[cheapest] * costBound_;
  int candidates[kMaxExploreCells];
  int count = 0;
  for (int c = 0; c < numCells; ++c) {
    if (c != baseline && ncclCosts[c] >= 0.0f && ncclCosts[c] <= limit) candidates[count++] = c;
  }
  if (count == 0) return -1;
  const uint64_t turn = ordinal + (keyOf(collType, nBytes) >> 8);
  return candidates[turn % static_cast<uint64_t>(count)];
}

int cheapestCell(const float* costs, int numCells) noexcept {
  int best = -1;
  for (int c = 0; c < numCells; ++c) {
    if (costs[c] >= 0.0f && (best < 0 || costs[c] < costs[best])) best = c;
  }
  return best;
}

}  // namespace pilot::tuner
