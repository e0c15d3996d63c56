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

class CompiledTable {
 public:
  static CompiledTable compile(const TuningTable& table, const CommShape& shape);

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

  /// Sizes (total bytes) where a candidate list of `coll` starts; for `explain`.
  const std::vector<uint64_t>& boundaries(Collective coll) const;

  /// Candidate entries stored per collective beyond which a lane falls back to a linear list
  /// (pathologically nested ranges would otherwise grow quadratically).
  static constexpr size_t kMaxEntriesPerLane = 1u << 22;

 private:
  struct Lane {
    std::vector<uint64_t> starts;        // interval i covers [starts[i], starts[i+1]-1]
    std::vector<uint32_t> offsets;       // candidates of interval i: [offsets[i], offsets[i+1])
    std::vector<uint32_t> entries;       // rule indices
    std::vector<uint64_t> ruleLo, ruleHi;  // per-lane sizes of rules, for the linear fallback
    std::vector<uint32_t> linear;        // non-empty only in fallback mode
  };

  CommShape shape_;
  std::vector<Rule> rules_;
  Lane lanes_[kNumCollectives];
};

template <typename Visit>
const Rule* CompiledTable::firstMatch(Collective coll, uint64_t nBytes, Visit&& visit) const {
  const int ci = static_cast<int>(coll);
  if (ci < 0 || ci >= kNumCollectives) return nullptr;
  const Lane& lane = lanes_[ci];
  if (!lane.linear.empty()) {
    for (uint32_t i : lane.linear) {
      if (nBytes >= lane.ruleLo[i] && nBytes <= lane.ruleHi[i] && visit(rules_[i])) {
        return &rules_[i];
      }
    }
    return nullptr;
  }
  if (lane.starts.empty()) return nullptr;
  // starts[0] == 0, so the interval index is never negative.
  size_t k = 0, lo = 0, hi = lane.starts.size();
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (lane.starts[mid] <= nBytes) lo = mid;
    else hi = mid;
  }
  k = lo;
  for (uint32_t e = lane.offsets[k]; e < lane.offsets[k + 1]; ++e) {
    const Rule& r = rules_[lane.entries[e]];
    if (visit(r)) return &r;
  }
  return nullptr;
}

}  // namespace pilot::tuner
