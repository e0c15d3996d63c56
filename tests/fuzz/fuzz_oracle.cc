#include "fuzz_oracle.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace fuzz {
namespace {

using namespace pilot::tuner;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

[[noreturn]] void die(const char* what, int coll, uint64_t nBytes) {
  std::fprintf(stderr, "table_parser_fuzz: %s (collType %d, %llu bytes)\n", what, coll,
               static_cast<unsigned long long>(nBytes));
  std::abort();
}

bool sameRange(const Range& a, const Range& b) {
  return a.lo == b.lo && a.hi == b.hi;
}

uint64_t satMul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kMax : r;
}
uint64_t satAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? kMax : r;
}

bool sizeMatches(const Rule& r, Collective c, uint64_t nRanks, uint64_t nBytes) {
  const bool scaled =
      r.perRankSize && (c == Collective::AllGather || c == Collective::ReduceScatter);
  if (!scaled || nRanks <= 1) return r.size.contains(nBytes);
  uint64_t lo;
  if (__builtin_mul_overflow(r.size.lo, nRanks, &lo)) return false;  // no total reaches it
  const uint64_t hi = r.size.hi == kMax ? kMax : satAdd(satMul(r.size.hi, nRanks), nRanks - 1);
  return nBytes >= lo && nBytes <= hi;
}

bool shapeMatches(const Rule& r, const CommShape& s) {
  if (!r.nodes.contains(s.nNodes) || !r.ranks.contains(s.nRanks)) return false;
  return r.ranksPerNode.any() || (s.ranksPerNode && r.ranksPerNode.contains(*s.ranksPerNode));
}

bool sameExpected(const Rule& a, const Rule& b) {
  if (a.expected.size() != b.expected.size()) return false;
  for (size_t i = 0; i < a.expected.size(); ++i) {
    if (a.expected[i].bytes != b.expected[i].bytes ||
        a.expected[i].microseconds != b.expected[i].microseconds) {
      return false;
    }
  }
  return true;
}

/// Written independently of tuner/process_facts.cc, from docs/tuning-table.md.
bool factsMatch(const Rule& r, const ProcessFacts& f) {
  if (r.fabrics != 0 && (!f.fabric || !(r.fabrics & (1u << static_cast<int>(*f.fabric))))) {
    return false;
  }
  return r.ncclVersions.any() || (r.ncclVersions.lo <= f.nccl.lo && f.nccl.hi <= r.ncclVersions.hi);
}

}  // namespace

bool sameFields(const Rule& a, const Rule& b) {
  return a.collectives == b.collectives && sameRange(a.size, b.size) &&
         a.perRankSize == b.perRankSize && sameRange(a.nodes, b.nodes) &&
         sameRange(a.ranks, b.ranks) && sameRange(a.ranksPerNode, b.ranksPerNode) &&
         sameRange(a.pipeOps, b.pipeOps) && a.regBuff == b.regBuff &&
         a.algorithms == b.algorithms && a.protocols == b.protocols && a.channels == b.channels &&
         a.chunkBytes == b.chunkBytes && a.fabrics == b.fabrics &&
         sameRange(a.ncclVersions, b.ncclVersions) && sameExpected(a, b);
}

std::vector<uint64_t> probeSizes(const CompiledTable& table, Collective coll) {
  std::vector<uint64_t> out = {0, 1, 4096, 1u << 20, kMax - 1, kMax};
  const std::vector<uint64_t>& cuts = table.boundaries(coll);
  for (size_t i = 0; i < cuts.size() && i < 32; ++i) {
    out.push_back(cuts[i]);
    if (cuts[i] > 0) out.push_back(cuts[i] - 1);
    if (cuts[i] < kMax) out.push_back(cuts[i] + 1);
  }
  return out;
}

bool visitVerdict(const Rule& r) {
  const bool alwaysApplies = !r.namesChoice() && r.pipeOps.any() && r.regBuff < 0;
  return alwaysApplies || (r.line * 2654435761u) % 3 != 0;
}

const Rule* referenceMatch(const TuningTable& table, const CommShape& shape,
                           const ProcessFacts& facts, Collective coll, uint64_t nBytes) {
  for (const Rule& r : table.rules) {
    if (r.isMark()) continue;  // explore= lines never decide
    if (!shapeMatches(r, shape) || !factsMatch(r, facts) || !(r.collectives & bit(coll))) continue;
    if (sizeMatches(r, coll, shape.nRanks, nBytes) && visitVerdict(r)) return &r;
  }
  return nullptr;
}

uint32_t referenceExclusion(const TuningTable& table, const CommShape& shape,
                            const ProcessFacts& facts, Collective coll, uint64_t nBytes) {
  uint32_t cells = 0;
  for (const Rule& r : table.rules) {
    if (r.explore != ExploreMark::Slow && r.explore != ExploreMark::Known) continue;
    if (!shapeMatches(r, shape) || !factsMatch(r, facts) || !(r.collectives & bit(coll))) continue;
    if (!sizeMatches(r, coll, shape.nRanks, nBytes)) continue;
    for (int a = 0; a < kNumAlgorithms; ++a) {
      for (int p = 0; p < kNumProtocols; ++p) {
        if ((r.algorithms == 0 || (r.algorithms >> a) & 1) &&
            (r.protocols == 0 || (r.protocols >> p) & 1)) {
          cells |= 1u << (a * kNumProtocols + p);
        }
      }
    }
  }
  return cells;
}

void checkCostTableCall(const TunerContext& ctx, int coll, uint64_t nBytes, int numAlgo,
                        int regBuff) {
  constexpr float kGuard = 7777.0f;
  float cells[kNumAlgorithms * kNumProtocols + 3];
  for (float& c : cells) c = kGuard;
  // A mix NCCL could hand over: some cells IGNORE, one already 0, the rest model times.
  for (int i = 0; i < numAlgo * kNumProtocols; ++i) {
    cells[i] =
        (i * 7 + coll) % 5 == 0 ? kIgnoreCost : (i == 4 ? 0.0f : 1.0f + static_cast<float>(i));
  }
  float before[sizeof(cells) / sizeof(float)];
  std::memcpy(before, cells, sizeof(cells));
  int nChannels = 0;
  const int pipeOps = static_cast<int>(nBytes % 4);
  ctx.getCollInfo(coll, nBytes, pipeOps, cells, numAlgo, kNumProtocols, regBuff, &nChannels);
  const bool tuned = coll >= 0 && coll < kNumCollectives;
  for (size_t i = 0; i < sizeof(cells) / sizeof(float); ++i) {
    const float was = before[i], now = cells[i];
    if (i >= static_cast<size_t>(numAlgo * kNumProtocols) && now != kGuard) {
      die("wrote past numAlgo", coll, nBytes);
    }
    if (was < 0.0f && now != was) die("revived an IGNORE cell", coll, nBytes);
    if (now != was && (!tuned || (now != 0.0f && now != kIgnoreCost))) {
      die("wrote an unexpected cell value", coll, nBytes);
    }
  }
  if (nChannels < 0 || nChannels > kMaxChannels || (!tuned && nChannels != 0)) {
    die("bad channel count", coll, nBytes);
  }
}

void checkV2Call(const TunerContext& ctx, int coll, uint64_t nBytes) {
  int algo = -1, proto = -1, nChannels = 0;
  ctx.getCollInfoV2(coll, nBytes, static_cast<int>(nBytes & 1), static_cast<int>((nBytes >> 1) & 1),
                    1, &algo, &proto, &nChannels);
  if ((algo == -1) != (proto == -1)) die("v2 set only one of algorithm/protocol", coll, nBytes);
  if (algo < -1 || algo >= kNumAlgorithms - 1 || proto < -1 || proto >= kNumProtocols) {
    die("v2 algorithm/protocol out of range (2.21 has no PAT)", coll, nBytes);
  }
  if (nChannels < 0 || nChannels > kMaxChannels) die("v2 bad channel count", coll, nBytes);
}

void checkChunkCall(const TunerContext& ctx, int coll, uint64_t nBytes) {
  for (int algo = -1; algo <= kNumAlgorithms; ++algo) {
    size_t chunk = 12345;
    ctx.getChunkSize(coll, nBytes, algo, static_cast<int>(nBytes % 4), &chunk);
    if (chunk != 12345 && (chunk == 0 || chunk > kMaxChunkBytes)) {
      die("chunk size out of range", coll, nBytes);
    }
  }
}

}  // namespace fuzz
