#include "pilot/tuner/exploration.h"

#include <algorithm>
#include <cstdio>

#include "pilot/core/mix.h"
#include "pilot/core/sha256.h"
#include "pilot/core/text.h"
#include "pilot/tuner/graph_capture.h"

namespace pilot::tuner {

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
  using S = ExploreSchedule;
  char line[200];
  std::snprintf(line, sizeof line,
                "explore-v2 budget=%.6f gap=%llu margin=%.3f spend=%.3f window=%.3f rounds=%u "
                "table=",
                settings.fraction, static_cast<unsigned long long>(S::kDueGap), S::kMargin,
                S::kSpend, S::kWindow, S::kRounds);
  return sha256Hex(std::string(line) + tableSha256).substr(0, 8);
}

Explorer::Explorer(const ExploreSettings& settings, uint64_t commId)
    : commId_(commId),
      // A call that may explore stands for the mean gap's calls: (kDueGap + 1) / 2.
      perCall_(settings.fraction * ExploreSchedule::kSpend *
               static_cast<double>(ExploreSchedule::kDueGap + 1) / 2.0),
      commSalt_(mix64(commId)),
      next_(settings.on() ? gapAfter(~uint64_t{0}) - 1 : ~uint64_t{0}),
      sets_(new Set[kKeys / kWays]) {}

uint64_t Explorer::keyOf(int collType, uint64_t nBytes) const noexcept {
  return mix64(commSalt_ ^ ((nBytes << 4) + static_cast<uint64_t>(collType & 0xf))) | 1;
}

uint64_t Explorer::gapAfter(uint64_t n) const noexcept {
  // 1 + floor(u x kDueGap) for u uniform in [0, 1) from the hash. Integers only: the same on
  // every rank.
  return 1 + (((mix64(commSalt_ + n) >> 32) * ExploreSchedule::kDueGap) >> 32);
}

bool Explorer::dueAt(uint64_t n) noexcept {
  next_.store(n + gapAfter(n), std::memory_order_relaxed);
  return !graphCaptured(commId_);  // graph_capture.h: an alternative would replay forever
}

bool Explorer::fund(double pickCost, double leastCharge) noexcept {
  // Every rank adds the same numbers in the same order: the sums are bit-identical.
  const double budget = budget_.load(std::memory_order_relaxed) + perCall_ * pickCost;
  const double sum = costSum_.load(std::memory_order_relaxed) + pickCost;
  const uint64_t funded = funded_.load(std::memory_order_relaxed) + 1;
  budget_.store(budget, std::memory_order_relaxed);
  costSum_.store(sum, std::memory_order_relaxed);
  funded_.store(funded, std::memory_order_relaxed);
  return leastCharge <= budget && inWindow(leastCharge, static_cast<double>(funded), sum);
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

int Explorer::nextTurn(Entry& e, uint64_t found, const float* costs, double pickCost) noexcept {
  using S = ExploreSchedule;
  const uint64_t state = found != 0 ? found : e.state.load(std::memory_order_relaxed);
  const uint32_t set = static_cast<uint32_t>(state) & kCellMask;
  const double calls = static_cast<double>(funded_.load(std::memory_order_relaxed));
  const double sum = costSum_.load(std::memory_order_relaxed);
  auto charge = [&](int c) { return S::kMargin * static_cast<double>(costs[c]) - pickCost; };
  uint32_t eligible = 0;
  for (uint32_t m = set; m != 0; m &= m - 1) {
    const int c = __builtin_ctz(m);
    if (costs[c] >= 0.0f && inWindow(charge(c), calls, sum)) eligible |= uint32_t{1} << c;
  }
  uint32_t rest = static_cast<uint32_t>(state >> 32) & eligible;
  uint32_t rounds = static_cast<uint32_t>(state >> 21) & 1023;
  if (rest == 0 && rounds < S::kRounds) {  // a new round over what the window admits now
    rest = eligible;
    rounds += eligible != 0 ? 1 : 0;
  }
  int cell = -1;
  if (rest != 0) {
    const int next = __builtin_ctz(rest);
    const double cost = std::max(0.0, charge(next));
    const double budget = budget_.load(std::memory_order_relaxed);
    if (cost <= budget) {  // else the turn waits for the budget
      budget_.store(budget - cost, std::memory_order_relaxed);
      explorations_.store(explorations_.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
      rest &= ~(uint32_t{1} << next);
      cell = next;
    }
  }
  e.state.store(
      static_cast<uint64_t>(rest) << 32 | kFound | static_cast<uint64_t>(rounds) << 21 | set,
      std::memory_order_relaxed);
  return cell;
}

uint32_t Explorer::candidates(const float* ncclCosts, int numCells, int decided) noexcept {
  if (numCells <= 0 || numCells > kMaxExploreCells) return 0;
  uint32_t mask = 0;
  for (int c = 0; c < numCells; ++c) {
    if (c != decided && ncclCosts[c] >= 0.0f) mask |= uint32_t{1} << c;
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
