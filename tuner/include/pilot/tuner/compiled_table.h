// A table compiled for one communicator shape: rules that cannot match the shape are dropped,
// per-rank sizes become total bytes, and each collective's size axis is cut into sorted
// elementary intervals, each holding its candidate rules in priority order. A lookup is one
// binary search; nothing is allocated after compile().
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "pilot/tuner/table.h"

namespace pilot::tuner {

struct CommShape {
  uint64_t nRanks = 1;
  uint64_t nNodes = 1;
  /// Known when every node has the same number of ranks (nRanks divisible by nNodes, or
  /// NCCL's v5 NVL-domain info says min == max). Rules with rpn= never match when unknown.
  std::optional<uint64_t> ranksPerNode;

  static CommShape from(uint64_t nRanks, uint64_t nNodes);
  bool operator<(const CommShape& o) const;
};

/// What a lookup needs of a rule, packed so that an interval's candidates sit contiguously
/// in memory (the full Rule stays reachable through `rule`).
struct HotRule {
  uint64_t sizeLo, sizeHi;  ///< total bytes for this collective (per-rank already scaled)
  uint32_t pipeLo, pipeHi;  ///< numPipeOps range, saturated to 32 bits
  uint32_t rule;            ///< index into CompiledTable's rules
  int16_t channels;         ///< 0 = keep NCCL's
  int8_t regBuff;           ///< -1 any
  int8_t selectAlgo;        ///< >= 0: the rule selects one cell (with selectProto)
  int8_t selectProto;
  uint8_t namesChoice;  ///< 0: channels/chunk only
};

class CompiledTable {
 public:
  struct Span {
    const HotRule* begin = nullptr;
    const HotRule* end = nullptr;
  };

  static CompiledTable compile(const TuningTable& table, const CommShape& shape);

  /// Rules that may match (coll, nBytes), highest priority first. Every HotRule's size range
  /// still has to be checked by the caller (the linear fallback returns the whole lane).
  Span candidates(Collective coll, uint64_t nBytes) const;

  /// Calls visit(rule) for each rule matching (coll, nBytes), highest priority first, until
  /// visit returns true. Returns the rule that stopped the walk, or nullptr.
  /// Requirement: visit must accept a rule that names no choice and has no pipeops/regbuff
  /// condition, because compile() drops the rules behind such a rule (they are unreachable).
  template <typename Visit>
  const Rule* firstMatch(Collective coll, uint64_t nBytes, Visit&& visit) const;

  const Rule& rule(uint32_t index) const { return rules_[index]; }
  uint32_t indexOf(const Rule* r) const { return static_cast<uint32_t>(r - rules_.data()); }
  size_t ruleCount() const { return rules_.size(); }
  bool empty() const { return rules_.empty(); }
  const CommShape& shape() const { return shape_; }

  /// Sizes (total bytes) where a candidate list of `coll` starts; for `explain`. Empty when the
  /// lane uses the linear fallback.
  const std::vector<uint64_t>& boundaries(Collective coll) const;

  /// Candidate entries stored per collective beyond which a lane falls back to a linear list
  /// (pathologically nested ranges would otherwise grow quadratically): 512K x 40 bytes.
  static constexpr size_t kMaxEntriesPerLane = 1u << 19;

 private:
  struct Lane {
    std::vector<uint64_t> starts;   // interval i covers [starts[i], starts[i+1]-1]
    std::vector<uint32_t> offsets;  // candidates of interval i: [offsets[i], offsets[i+1])
    std::vector<HotRule> entries;
    /// byBitLength[b]: the interval holding the smallest value of bit length b (b = 0 for 0);
    /// byBitLength[65] = the last interval. Narrows the binary search to one octave.
    uint32_t byBitLength[66] = {};
    std::vector<HotRule> linear;  // non-empty only in fallback mode
  };

  CommShape shape_;
  std::vector<Rule> rules_;
  Lane lanes_[kNumCollectives];
};

inline CompiledTable::Span CompiledTable::candidates(Collective coll, uint64_t nBytes) const {
  const unsigned ci = static_cast<unsigned>(coll);
  if (ci >= static_cast<unsigned>(kNumCollectives)) return {};
  const Lane& lane = lanes_[ci];
  if (!lane.linear.empty()) return {lane.linear.data(), lane.linear.data() + lane.linear.size()};
  if (lane.starts.empty()) return {};
  const unsigned bits = nBytes == 0 ? 0 : 64 - static_cast<unsigned>(__builtin_clzll(nBytes));
  // The answer is the last interval whose start <= nBytes, within [lo, hi].
  uint32_t lo = lane.byBitLength[bits], hi = lane.byBitLength[bits + 1];
  const uint64_t* starts = lane.starts.data();
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo + 1) / 2;
    if (starts[mid] <= nBytes)
      lo = mid;
    else
      hi = mid - 1;
  }
  const HotRule* base = lane.entries.data();
  return {base + lane.offsets[lo], base + lane.offsets[lo + 1]};
}

template <typename Visit>
const Rule* CompiledTable::firstMatch(Collective coll, uint64_t nBytes, Visit&& visit) const {
  Span span = candidates(coll, nBytes);
  for (const HotRule* h = span.begin; h != span.end; ++h) {
    if (nBytes < h->sizeLo || nBytes > h->sizeHi) continue;
    const Rule& r = rules_[h->rule];
    if (visit(r)) return &r;
  }
  return nullptr;
}

}  // namespace pilot::tuner
