// A table compiled for one communicator shape and the process's facts (fabric, NCCL version):
// rules that cannot match the shape or whose fabric=/nccl= keys do not hold are dropped,
// per-rank sizes become total bytes, and each collective's size axis is cut into sorted
// elementary intervals, each holding its candidate rules in priority order. A lookup reads one
// bucket of a log-linear size index and compares with at most one interval edge (no search on
// tables whose edges are no denser than the index); nothing is allocated after compile().
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "pilot/tuner/exploration.h"
#include "pilot/tuner/process_facts.h"
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

/// An interval's first candidate when it is the common case: it selects one cell and has no
/// per-call condition (pipeops=, regbuff=), so it applies whenever NCCL left that cell usable.
/// Packed into one word that sits beside the interval's edge. 0 = no such candidate.
struct PlainSelect {
  uint32_t bits = 0;

  static constexpr uint32_t kMaxRule = (1u << 19) - 1;
  /// Invalid (0) when the rule is not plain or its index does not fit.
  static PlainSelect of(const HotRule& h);

  bool valid() const { return bits != 0; }
  /// The cell in NCCL's float[numAlgo][kNumProtocols] table (algorithm * 3 + protocol).
  int cell() const { return static_cast<int>((bits >> 1) & 31); }
  int channels() const { return static_cast<int>((bits >> 6) & 127); }  ///< 0 = NCCL's
  uint32_t rule() const { return bits >> 13; }
};
class CompiledTable {
 public:
  struct Span {
    const HotRule* begin = nullptr;
    const HotRule* end = nullptr;
  };
  /// One elementary interval of a collective's size axis; the next one starts at hi + 1.
  struct Interval {
    uint64_t hi;         ///< last size (total bytes) inside, inclusive
    uint32_t first;      ///< its candidates: entries [first, next interval's first)
    PlainSelect direct;  ///< the first candidate, when it is a plain select
  };

  /// One collective's size index, as a caller keeps it at hand: TunerContext copies one per
  /// collective, so its common case reads no CompiledTable field before the index itself.
  struct SizeIndex {
    const uint32_t* buckets = nullptr;  ///< null: no index (no rules, or the linear fallback)
    const Interval* intervals = nullptr;
    unsigned bits = 0;

    /// The interval holding nBytes, or nullptr when its bucket holds more than one edge (then
    /// ask CompiledTable::interval, which searches).
    const Interval* direct(uint64_t nBytes) const {
      const uint32_t entry = buckets[bucketOf(nBytes, bits)];
      if (__builtin_expect((entry & kSearch) != 0, 0)) return nullptr;
      // At most one edge inside the bucket: n is in the interval at its start or in the next.
      const Interval* iv = intervals + entry;
      return iv + (nBytes > iv->hi ? 1 : 0);
    }
  };

  /// The facts default to none known: rules with fabric= or nccl= are dropped.
  static CompiledTable compile(const TuningTable& table, const CommShape& shape,
                               const ProcessFacts& facts = {});

  SizeIndex sizeIndex(Collective coll) const;

  /// The interval holding (coll, nBytes), or nullptr when the collective has no rules or its
  /// lane uses the linear fallback (then use candidates()). Candidates of an interval cover it
  /// entirely: no size check is needed.
  const Interval* interval(Collective coll, uint64_t nBytes) const;
  /// The candidates of an interval interval(coll, ...) returned, in priority order.
  Span candidatesOf(Collective coll, const Interval* iv) const {
    const HotRule* base = lanes_[static_cast<unsigned>(coll)].entries.data();
    return {base + iv[0].first, base + iv[1].first};
  }

  /// Rules that may match (coll, nBytes), highest priority first. Every HotRule's size range
  /// still has to be checked by the caller (the linear fallback returns the whole lane).
  Span candidates(Collective coll, uint64_t nBytes) const;

  /// Calls visit(rule) for each rule matching (coll, nBytes), highest priority first, until
  /// visit returns true. Returns the rule that stopped the walk, or nullptr.
  /// Requirement: visit must accept a rule that names no choice and has no pipeops/regbuff
  /// condition, because compile() drops the rules behind such a rule (they are unreachable).
  template <typename Visit>
  const Rule* firstMatch(Collective coll, uint64_t nBytes, Visit&& visit) const;

  /// One `explore=` line for one collective of this shape.
  struct Mark {
    Collective coll;
    uint64_t sizeLo, sizeHi;  ///< total bytes
    uint32_t cells;           ///< bit algo * kNumProtocols + proto
    ExploreMark mark;
    int line;
  };
  const std::vector<Mark>& marks() const { return marks_; }

  /// What the table's `explore=` marks say of (coll, nBytes)'s cells (a scan of the marks: asked
  /// once per pair, when exploration first meets it).
  ExploreHints exploreHints(Collective coll, uint64_t nBytes) const;
  const Rule& rule(uint32_t index) const { return rules_[index]; }
  uint32_t indexOf(const Rule* r) const { return static_cast<uint32_t>(r - rules_.data()); }
  size_t ruleCount() const { return rules_.size(); }
  bool empty() const { return rules_.empty(); }  ///< no rule decides (marks may remain)
  const CommShape& shape() const { return shape_; }
  /// Rules of the table that matched the shape but not the facts' fabric (nccl version).
  size_t droppedByFabric() const { return droppedByFabric_; }
  size_t droppedByNccl() const { return droppedByNccl_; }

  /// Sizes (total bytes) where a candidate list of `coll` starts; for `explain`. Empty when the
  /// lane uses the linear fallback.
  const std::vector<uint64_t>& boundaries(Collective coll) const;

  /// Mantissa bits of `coll`'s size index (see Lane::index); 0 when the lane has none. For tests.
  unsigned indexBits(Collective coll) const;

  /// A size's bucket in a log-linear index with `bits` mantissa bits: exact below 2^(bits+1),
  /// then 2^bits equal buckets per octave. Monotonic in nBytes.
  static size_t bucketOf(uint64_t nBytes, unsigned bits) {
    // shift = max(0, bit length - 1 - bits), without a branch: sizes are unpredictable.
    int shift = (63 ^ __builtin_clzll(nBytes | 1)) - static_cast<int>(bits);  // 63 ^ clz = msb
    shift &= ~(shift >> 31);
    return (static_cast<size_t>(shift) << bits) + static_cast<size_t>(nBytes >> shift);
  }
  static constexpr uint32_t kSearch = 1u << 31;  ///< in a bucket: it spans more than one edge

  /// Candidate entries stored per collective beyond which a lane falls back to a linear list
  /// (pathologically nested ranges would otherwise grow quadratically): 512K x 40 bytes.
  static constexpr size_t kMaxEntriesPerLane = 1u << 19;
  /// The finest size index a lane gets: (65 - 8) x 2^8 buckets of 4 bytes (58 KiB).
  static constexpr unsigned kMaxIndexBits = 8;

 private:
  struct Lane {
    std::vector<uint64_t> starts;     // interval i starts at starts[i]; for boundaries()
    std::vector<Interval> intervals;  // plus one sentinel {max, entries.size(), none}
    /// index[bucketOf(n, indexBits)]: the interval holding the bucket's smallest size; with
    /// kSearch set, the bucket holds more than one edge and the intervals up to the next
    /// bucket's are searched. Otherwise n is in that interval or the next one.
    std::vector<uint32_t> index;
    unsigned indexBits = 0;
    std::vector<HotRule> entries;
    std::vector<HotRule> linear;  // non-empty only in fallback mode
  };
  static const Interval* search(const Lane& lane, size_t bucket, uint64_t nBytes);
  static void buildIndex(Lane& lane);

  CommShape shape_;
  std::vector<Rule> rules_;  ///< the rules that decide (no marks)
  std::vector<Mark> marks_;
  size_t droppedByFabric_ = 0, droppedByNccl_ = 0;
  Lane lanes_[kNumCollectives];
};

inline const CompiledTable::Interval* CompiledTable::interval(Collective coll,
                                                              uint64_t nBytes) const {
  const unsigned ci = static_cast<unsigned>(coll);
  if (ci >= static_cast<unsigned>(kNumCollectives)) return nullptr;
  const Lane& lane = lanes_[ci];
  if (lane.index.empty()) return nullptr;
  const size_t bucket = bucketOf(nBytes, lane.indexBits);
  if (__builtin_expect((lane.index[bucket] & kSearch) != 0, 0)) {
    return search(lane, bucket, nBytes);
  }
  return SizeIndex{lane.index.data(), lane.intervals.data(), lane.indexBits}.direct(nBytes);
}

inline CompiledTable::Span CompiledTable::candidates(Collective coll, uint64_t nBytes) const {
  if (const Interval* iv = interval(coll, nBytes)) return candidatesOf(coll, iv);
  const unsigned ci = static_cast<unsigned>(coll);
  if (ci >= static_cast<unsigned>(kNumCollectives)) return {};
  const std::vector<HotRule>& linear = lanes_[ci].linear;
  return {linear.data(), linear.data() + linear.size()};
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
