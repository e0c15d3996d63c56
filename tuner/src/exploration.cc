#include "pilot/tuner/exploration.h"

#include <algorithm>
#include <cstdio>

#include "pilot/core/mix.h"
#include "pilot/core/sha256.h"
#include "pilot/core/text.h"
#include "pilot/tuner/graph_capture.h"

namespace pilot::tuner {
namespace {

/// Set bits, without the libgcc call __builtin_popcount makes for a baseline x86-64 target.
uint32_t countBits(uint32_t v) {
  v = v - ((v >> 1) & 0x55555555u);
  v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
  return (((v + (v >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
}

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
      // At most 2^32 - 1, so that gapAfter's product stays in 64 bits (fractions below 5e-10).
      gapRange_(settings.on()
                    ? static_cast<uint64_t>(std::min(2.0 / settings.fraction - 0.5, 4294967295.0))
                    : 1),
      costBound_(settings.costBound),
      commSalt_(mix64(commId)),
      next_(settings.on() ? gapAfter(~uint64_t{0}) - 1 : ~uint64_t{0}),
      sets_(new Set[kKeys / kWays]) {}

uint64_t Explorer::keyOf(int collType, uint64_t nBytes) const noexcept {
  return mix64(commSalt_ ^ ((nBytes << 4) + static_cast<uint64_t>(collType & 0xf))) | 1;
}

uint64_t Explorer::gapAfter(uint64_t n) const noexcept {
  // 1 + floor(u x range) for u uniform in [0, 1) from the hash: 1 .. range, mean (range + 1) / 2
  // = 1 / fraction. Integers only: the same on every rank.
  return 1 + (((mix64(commSalt_ + n) >> 32) * gapRange_) >> 32);
}

bool Explorer::dueAt(uint64_t n) noexcept {
  next_.store(n + gapAfter(n), std::memory_order_relaxed);
  return !graphCaptured(commId_);  // graph_capture.h: an alternative would replay forever
}

Explorer::Entry* Explorer::entryOf(uint64_t key) noexcept {
  Entry* set = sets_[key >> (64 - kLogSets)].ways;
  for (unsigned way = 0; way < kWays; ++way) {
    const uint64_t seen = set[way].key.load(std::memory_order_relaxed);
    if (seen == key) return &set[way];
    if (seen == 0) {
      set[way].key.store(key, std::memory_order_relaxed);
      return &set[way];
    }
  }
  return nullptr;  // the set is full
}

namespace {

/// `mask` without its first `skip` (mod its count) set bits.
uint32_t dropFirst(uint32_t mask, uint64_t skip) {
  for (uint32_t n = static_cast<uint32_t>(skip % countBits(mask)); n > 0; --n) mask &= mask - 1;
  return mask;
}

}  // namespace

int Explorer::anyTurn(uint64_t key, uint32_t mask) noexcept {
  if (mask == 0) return -1;
  const uint64_t count = explorations_.load(std::memory_order_relaxed);
  explorations_.store(count + 1, std::memory_order_relaxed);
  return __builtin_ctz(dropFirst(mask, count + (key >> 40)));
}

int Explorer::nextTurn(Entry& e, uint64_t key, uint32_t found) noexcept {
  // state: the candidates | kFound (high half) and those not yet run in this round (low half).
  uint32_t round = 0;
  if (found != 0) {
    // The pair's first round starts at a candidate of its own, so sizes do not all try the
    // same cell first.
    if (found != kFound) round = dropFirst(found & ~kFound, key >> 40);
  } else {
    const uint64_t state = e.state.load(std::memory_order_relaxed);
    found = static_cast<uint32_t>(state >> 32);
    round = static_cast<uint32_t>(state);
  }
  const uint32_t mask = found & ~kFound;
  if (mask == 0) {
    e.state.store(static_cast<uint64_t>(found) << 32, std::memory_order_relaxed);
    return -1;
  }
  if (round == 0) round = mask;
  const int cell = __builtin_ctz(round);
  e.state.store(static_cast<uint64_t>(found) << 32 | (round & (round - 1)),
                std::memory_order_relaxed);
  explorations_.store(explorations_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return cell;
}

uint32_t Explorer::candidates(const float* ncclCosts, int numCells, float costBound,
                              int decided) noexcept {
  if (numCells <= 0 || numCells > kMaxExploreCells) return 0;
  const int cheapest = cheapestCell(ncclCosts, numCells);
  if (cheapest < 0) return 0;
  const float limit = ncclCosts[cheapest] * costBound;
  uint32_t mask = 0;
  for (int c = 0; c < numCells; ++c) {
    if (c != decided && ncclCosts[c] >= 0.0f && ncclCosts[c] <= limit) mask |= uint32_t{1} << c;
  }
  return mask;
}

int cheapestCell(const float* costs, int numCells) noexcept {
  int best = -1;
  for (int c = 0; c < numCells; ++c) {
    if (costs[c] >= 0.0f && (best < 0 || costs[c] < costs[best])) best = c;
  }
  return best;
}

}  // namespace pilot::tuner
