#include "pilot/tuner/compiled_table.h"

#include <algorithm>
#include <limits>

namespace pilot::tuner {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

uint64_t saturatingMul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kMax : r;
}
uint64_t saturatingAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? kMax : r;
}

bool matchesShape(const Rule& r, const CommShape& s) {
  if (!r.nodes.contains(s.nNodes) || !r.ranks.contains(s.nRanks)) return false;
  if (!r.ranksPerNode.any()) {
    if (!s.ranksPerNode || !r.ranksPerNode.contains(*s.ranksPerNode)) return false;
  }
  return true;
}

/// The rule's size range in NCCL's nBytes for this collective. NCCL passes AllGather and
/// ReduceScatter sizes as the total over ranks; per-rank rules scale by nRanks (integer
/// division floors, so the upper edge covers the whole last per-rank byte).
/// nullopt when the per-rank lower bound is above what any total can reach (never matches).
std::optional<Range> totalBytesRange(const Rule& r, Collective c, uint64_t nRanks) {
  bool scaled = r.perRankSize && (c == Collective::AllGather || c == Collective::ReduceScatter);
  if (!scaled || nRanks <= 1) return r.size;
  Range out;
  if (__builtin_mul_overflow(r.size.lo, nRanks, &out.lo)) return std::nullopt;
  out.hi = r.size.hi == kMax ? kMax : saturatingAdd(saturatingMul(r.size.hi, nRanks), nRanks - 1);
  return out;
}

/// A rule that always applies once it matches by size: no per-call conditions and no choice
/// that the cost table could veto. Candidates behind it can never be reached.
bool alwaysApplies(const Rule& r) {
  return !r.namesChoice() && r.pipeOps.any() && r.regBuff < 0;
}

}  // namespace

CommShape CommShape::from(uint64_t nRanks, uint64_t nNodes) {
  CommShape s;
  s.nRanks = nRanks;
  s.nNodes = nNodes;
  if (nNodes > 0 && nRanks % nNodes == 0) s.ranksPerNode = nRanks / nNodes;
  return s;
}

bool CommShape::operator<(const CommShape& o) const {
  if (nRanks != o.nRanks) return nRanks < o.nRanks;
  if (nNodes != o.nNodes) return nNodes < o.nNodes;
  return ranksPerNode < o.ranksPerNode;
}

namespace {

HotRule makeHot(const Rule& r, uint32_t index, const Range& size) {
  HotRule h{};
  h.sizeLo = size.lo;
  h.sizeHi = size.hi;
  h.pipeLo = static_cast<uint32_t>(std::min<uint64_t>(r.pipeOps.lo, UINT32_MAX));
  h.pipeHi = static_cast<uint32_t>(std::min<uint64_t>(r.pipeOps.hi, UINT32_MAX));
  h.rule = index;
  h.channels = static_cast<int16_t>(r.channels);
  h.regBuff = static_cast<int8_t>(r.regBuff);
  h.selectAlgo = h.selectProto = -1;
  if (r.selectsOneCell()) {
    h.selectAlgo = static_cast<int8_t>(__builtin_ctz(r.algorithms));
    h.selectProto = static_cast<int8_t>(__builtin_ctz(r.protocols));
  }
  h.namesChoice = r.namesChoice() ? 1 : 0;
  return h;
}

}  // namespace

CompiledTable CompiledTable::compile(const TuningTable& table, const CommShape& shape) {
  CompiledTable out;
  out.shape_ = shape;
  for (const Rule& r : table.rules) {
    if (matchesShape(r, shape)) out.rules_.push_back(r);
  }
  const uint32_t n = static_cast<uint32_t>(out.rules_.size());
  for (int ci = 0; ci < kNumCollectives; ++ci) {
    const Collective c = static_cast<Collective>(ci);
    Lane& lane = out.lanes_[ci];
    std::vector<HotRule> members;
    std::vector<uint64_t> cuts{0};
    for (uint32_t i = 0; i < n; ++i) {
      if (!(out.rules_[i].collectives & bit(c))) continue;
      std::optional<Range> range = totalBytesRange(out.rules_[i], c, shape.nRanks);
      if (!range) continue;
      members.push_back(makeHot(out.rules_[i], i, *range));
      cuts.push_back(range->lo);
      if (range->hi != kMax) cuts.push_back(range->hi + 1);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());

    // Count first, so a pathological table degrades to a linear scan instead of a huge index.
    size_t total = 0;
    std::vector<char> closed(cuts.size(), 0);
    std::vector<std::vector<HotRule>> lists(cuts.size());
    bool overflow = false;
    for (const HotRule& h : members) {
      auto first = std::lower_bound(cuts.begin(), cuts.end(), h.sizeLo) - cuts.begin();
      auto last = std::upper_bound(cuts.begin(), cuts.end(), h.sizeHi) - cuts.begin();
      for (auto k = first; k < last && !overflow; ++k) {
        if (closed[k]) continue;
        lists[k].push_back(h);
        if (alwaysApplies(out.rules_[h.rule])) closed[k] = 1;
        overflow = ++total > kMaxEntriesPerLane;
      }
      if (overflow) break;
    }
    if (overflow) {
      lane.linear = std::move(members);
      continue;
    }
    lane.starts = std::move(cuts);
    lane.offsets.reserve(lane.starts.size() + 1);
    lane.entries.reserve(total);
    for (const auto& list : lists) {
      lane.offsets.push_back(static_cast<uint32_t>(lane.entries.size()));
      lane.entries.insert(lane.entries.end(), list.begin(), list.end());
    }
    lane.offsets.push_back(static_cast<uint32_t>(lane.entries.size()));
    const auto intervalOf = [&](uint64_t v) {
      return static_cast<uint32_t>(std::upper_bound(lane.starts.begin(), lane.starts.end(), v) -
                                   lane.starts.begin() - 1);
    };
    for (unsigned b = 0; b <= 64; ++b) {
      lane.byBitLength[b] = intervalOf(b == 0 ? 0 : (uint64_t{1} << (b - 1)));
    }
    lane.byBitLength[65] = static_cast<uint32_t>(lane.starts.size() - 1);
  }
  return out;
}

const std::vector<uint64_t>& CompiledTable::boundaries(Collective coll) const {
  return lanes_[static_cast<int>(coll)].starts;
}

}  // namespace pilot::tuner
