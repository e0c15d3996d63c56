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

CompiledTable CompiledTable::compile(const TuningTable& table, const CommShape& shape,
                                     const ProcessFacts& facts) {
  CompiledTable out;
  out.shape_ = shape;
  for (const Rule& r : table.rules) {
    if (!matchesShape(r, shape)) continue;
    const bool fabricOk = fabricAdmits(r, facts), ncclOk = ncclAdmits(r, facts);
    out.droppedByFabric_ += fabricOk ? 0 : 1;
    out.droppedByNccl_ += ncclOk ? 0 : 1;
    if (!fabricOk || !ncclOk) continue;
    if (!r.isMark()) {
      out.rules_.push_back(r);
      continue;
    }
    // A mark decides nothing: it stays out of the lanes, kept for exploreHints().
    for (int ci = 0; ci < kNumCollectives; ++ci) {
      const Collective c = static_cast<Collective>(ci);
      if (!(r.collectives & bit(c))) continue;
      std::optional<Range> range = totalBytesRange(r, c, shape.nRanks);
      if (!range) continue;
      uint32_t cells = 0;
      for (int a = 0; a < kNumAlgorithms; ++a) {
        for (int p = 0; p < kNumProtocols; ++p) {
          const bool algoOk = r.algorithms == 0 || (r.algorithms & (1u << a));
          const bool protoOk = r.protocols == 0 || (r.protocols & (1u << p));
          if (algoOk && protoOk) cells |= 1u << (a * kNumProtocols + p);
        }
      }
      out.marks_.push_back({c, range->lo, range->hi, cells, r.explore, r.line});
    }
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
        if (out.rules_[h.rule].alwaysApplies()) closed[k] = 1;
        overflow = ++total > kMaxEntriesPerLane;
      }
      if (overflow) break;
    }
    if (overflow) {
      lane.linear = std::move(members);
      continue;
    }
    if (members.empty()) {
      lane.starts = std::move(cuts);  // {0}: no interval, no index, nothing to find
      continue;
    }
    lane.intervals.reserve(cuts.size() + 1);
    lane.entries.reserve(total);
    for (size_t k = 0; k < cuts.size(); ++k) {
      Interval iv{};
      iv.hi = k + 1 < cuts.size() ? cuts[k + 1] - 1 : kMax;
      iv.first = static_cast<uint32_t>(lane.entries.size());
      if (!lists[k].empty()) iv.direct = PlainSelect::of(lists[k].front());
      lane.intervals.push_back(iv);
      lane.entries.insert(lane.entries.end(), lists[k].begin(), lists[k].end());
    }
    lane.intervals.push_back(Interval{kMax, static_cast<uint32_t>(lane.entries.size()), {}});
    lane.starts = std::move(cuts);
    buildIndex(lane);
  }
  return out;
}

namespace {

/// The smallest size in bucket `b` of CompiledTable's log-linear index with `bits` bits.
uint64_t bucketStart(size_t b, unsigned bits) {
  if (b < (size_t{2} << bits)) return b;
  const unsigned shift = static_cast<unsigned>(b >> bits) - 1;
  return static_cast<uint64_t>(b - (static_cast<size_t>(shift) << bits)) << shift;
}

size_t bucketCount(unsigned bits) {
  return static_cast<size_t>(65 - bits) << bits;
}

}  // namespace

void CompiledTable::buildIndex(Lane& lane) {
  const std::vector<uint64_t>& starts = lane.starts;
  const auto intervalOf = [&](uint64_t v) {
    return static_cast<uint32_t>(std::upper_bound(starts.begin(), starts.end(), v) -
                                 starts.begin() - 1);
  };
  // The coarsest index under which no bucket holds two edges: a lookup is then one bucket read
  // and one comparison. Tables with edges closer than that keep the finest index, and their
  // crowded buckets are searched.
  const auto crowded = [&](size_t b, unsigned bits) {
    const uint64_t lo = bucketStart(b, bits);
    const uint64_t hi = b + 1 < bucketCount(bits) ? bucketStart(b + 1, bits) - 1 : kMax;
    return intervalOf(hi) > intervalOf(lo) + 1;
  };
  unsigned bits = 0;
  for (; bits < kMaxIndexBits; ++bits) {
    bool any = false;
    for (size_t b = 0, n = bucketCount(bits); b < n && !any; ++b) any = crowded(b, bits);
    if (!any) break;
  }
  const size_t n = bucketCount(bits);
  lane.indexBits = bits;
  lane.index.resize(n + 1);
  for (size_t b = 0; b < n; ++b) {
    lane.index[b] = intervalOf(bucketStart(b, bits)) | (crowded(b, bits) ? kSearch : 0);
  }
  lane.index[n] = static_cast<uint32_t>(starts.size() - 1);  // the search's end for the last one
}

const CompiledTable::Interval* CompiledTable::search(const Lane& lane, size_t bucket,
                                                     uint64_t nBytes) {
  // The first interval whose hi >= nBytes among those the bucket touches.
  uint32_t lo = lane.index[bucket] & ~kSearch, hi = lane.index[bucket + 1] & ~kSearch;
  const Interval* iv = lane.intervals.data();
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (iv[mid].hi < nBytes)
      lo = mid + 1;
    else
      hi = mid;
  }
  return iv + lo;
}

ExploreHints CompiledTable::exploreHints(Collective coll, uint64_t nBytes) const {
  ExploreHints h;
  for (const Mark& m : marks_) {
    if (m.coll != coll || nBytes < m.sizeLo || nBytes > m.sizeHi) continue;
    if (m.mark == ExploreMark::Slow || m.mark == ExploreMark::Known) h.exclude |= m.cells;
  }
  return h;
}

PlainSelect PlainSelect::of(const HotRule& h) {
  PlainSelect p;
  const bool plain = h.selectAlgo >= 0 && h.pipeLo == 0 && h.pipeHi == UINT32_MAX &&
                     h.regBuff < 0 && h.rule <= kMaxRule && h.channels >= 0 && h.channels < 128;
  if (!plain) return p;
  const uint32_t cell = static_cast<uint32_t>(h.selectAlgo * kNumProtocols + h.selectProto);
  p.bits = 1u | cell << 1 | static_cast<uint32_t>(h.channels) << 6 | h.rule << 13;
  return p;
}

CompiledTable::SizeIndex CompiledTable::sizeIndex(Collective coll) const {
  const Lane& lane = lanes_[static_cast<int>(coll)];
  if (lane.index.empty()) return {};
  return {lane.index.data(), lane.intervals.data(), lane.indexBits};
}

unsigned CompiledTable::indexBits(Collective coll) const {
  const Lane& lane = lanes_[static_cast<int>(coll)];
  return lane.index.empty() ? 0 : lane.indexBits;
}

const std::vector<uint64_t>& CompiledTable::boundaries(Collective coll) const {
  return lanes_[static_cast<int>(coll)].starts;
}

}  // namespace pilot::tuner
