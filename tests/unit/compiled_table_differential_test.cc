// Randomized differential test: TunerContext (compiled, indexed lookup) against a linear scan of
// the table in file order that applies the documented semantics directly. Also forces the
// compiled table's linear fallback and checks it against the same reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "pilot/tuner/compiled_table.h"
#include "pilot/tuner/decision.h"
#include "pilot/tuner/tuner_runtime.h"
#include "test_support.h"

namespace pilot::tuner {
namespace {

// ---- the reference -----------------------------------------------------------------------

bool shapeMatches(const Rule& r, const CommShape& s) {
  if (!r.nodes.contains(s.nNodes) || !r.ranks.contains(s.nRanks)) return false;
  if (r.ranksPerNode.any()) return true;
  return s.ranksPerNode.has_value() && r.ranksPerNode.contains(*s.ranksPerNode);
}

/// Collective, shape and size (per-rank sizes are nBytes / nRanks for AllGather and
/// ReduceScatter).
bool sizeMatches(const Rule& r, const CommShape& s, int coll, uint64_t nBytes) {
  if (!(r.collectives & (1u << coll))) return false;
  if (!shapeMatches(r, s)) return false;
  const bool perRank = r.perRankSize && (coll == static_cast<int>(Collective::AllGather) ||
                                         coll == static_cast<int>(Collective::ReduceScatter));
  const uint64_t size = perRank && s.nRanks > 1 ? nBytes / s.nRanks : nBytes;
  return r.size.contains(size);
}

struct Reference {
  const TuningTable& table;
  CommShape shape;
  // The operation getCollInfo last answered and the rule it applied (nullptr: none), which is
  // where getChunkSize takes its chunk from when it asks about the same operation.
  struct Last {
    int coll = -1;
    uint64_t nBytes = 0;
    const Rule* rule = nullptr;
  };
  mutable Last last;

  void getCollInfo(int coll, uint64_t nBytes, int numPipeOps, float* cells, int numAlgo,
                   int numProto, int regBuff, int* nChannels) const {
    const uint64_t pipeOps = numPipeOps < 0 ? 0 : static_cast<uint64_t>(numPipeOps);
    const CostTableView view{cells, numAlgo, numProto};
    last = Last{coll, nBytes, nullptr};
    for (const Rule& r : table.rules) {
      if (!sizeMatches(r, shape, coll, nBytes)) continue;
      if (!r.pipeOps.contains(pipeOps)) continue;
      if (r.regBuff >= 0 && r.regBuff != regBuff) continue;
      if (applyToCostTable(r, view, nChannels) == Outcome::Applied) {
        last.rule = &r;
        return;
      }
    }
  }

  void getCollInfoV2(int coll, uint64_t nBytes, bool collNet, bool nvls, int numPipeOps,
                     int* algorithm, int* protocol, int* nChannels) const {
    const uint64_t pipeOps = numPipeOps < 0 ? 0 : static_cast<uint64_t>(numPipeOps);
    const V2Support support{static_cast<Collective>(coll), collNet, nvls,
                            static_cast<int>(shape.nNodes)};
    for (const Rule& r : table.rules) {
      if (!sizeMatches(r, shape, coll, nBytes)) continue;
      if (!r.pipeOps.contains(pipeOps) || r.regBuff >= 0) continue;
      if (applyV2(r, support, algorithm, protocol, nChannels) != V2Outcome::NotApplicable) return;
    }
  }

  void getChunkSize(int coll, uint64_t nBytes, int algo, int proto, size_t* chunk) const {
    auto admits = [&](const Rule& r) {
      const bool algoOk = r.algorithms == 0 || (r.algorithms & (1u << algo));
      const bool protoOk = r.protocols == 0 || (r.protocols & (1u << proto));
      return algoOk && protoOk;
    };
    if (last.coll == coll && last.nBytes == nBytes) {
      if (last.rule != nullptr && admits(*last.rule) && last.rule->chunkBytes > 0) {
        *chunk = last.rule->chunkBytes;
      }
      return;
    }
    for (const Rule& r : table.rules) {
      if (!sizeMatches(r, shape, coll, nBytes)) continue;
      if (!admits(r)) continue;
      if (r.chunkBytes > 0) *chunk = r.chunkBytes;
      return;
    }
  }
};

// ---- random tables and queries -----------------------------------------------------------

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  uint64_t below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool chance(int percent) { return below(100) < static_cast<uint64_t>(percent); }

  /// Sizes cluster on a few hundred values so that rules overlap and share boundaries.
  uint64_t size() {
    switch (below(6)) {
      case 0:
        return 0;
      case 1:
        return below(64);
      case 2:
        return (1 + below(64)) << (10 * (1 + below(3)));
      case 3:
        return below(1u << 24);
      case 4:
        return 4294967295u - below(3);
      default:
        return (1 + below(256)) * 1024 + below(3) - 1;
    }
  }

  Range countRange(uint64_t maxValue) {
    Range r;
    if (chance(60)) return r;
    uint64_t a = 1 + below(maxValue), b = 1 + below(maxValue);
    r.lo = std::min(a, b);
    r.hi = std::max(a, b);
    if (chance(20)) r.hi = kUnbounded;
    if (chance(20)) r.lo = 0;
    return r;
  }

  Rule rule(int line) {
    Rule r;
    r.line = line;
    r.collectives = chance(60) ? static_cast<CollMask>(1u << below(kNumCollectives))
                               : static_cast<CollMask>(1 + below(kAllCollectives));
    if (!chance(10)) {
      uint64_t a = size(), b = size();
      r.size.lo = std::min(a, b);
      r.size.hi = std::max(a, b);
      if (chance(15)) r.size.lo = 0;
      if (chance(15)) r.size.hi = kUnbounded;
    }
    r.perRankSize = chance(25);
    r.nodes = countRange(8);
    r.ranks = countRange(64);
    r.ranksPerNode = countRange(16);
    r.pipeOps = chance(70) ? Range{} : countRange(5);
    if (chance(10)) r.pipeOps = Range::exactly(0);
    r.regBuff = chance(70) ? -1 : static_cast<int>(below(2));
    switch (below(10)) {
      case 0:  // no choice: channels and/or chunk only
        break;
      case 1:
      case 2:
      case 3:
      case 4:
      case 5:  // select one cell
        r.algorithms = static_cast<AlgoMask>(1u << below(kNumAlgorithms));
        r.protocols = static_cast<ProtoMask>(1u << below(kNumProtocols));
        break;
      default:  // restrict
        r.algorithms = static_cast<AlgoMask>(below(1u << kNumAlgorithms));
        r.protocols = static_cast<ProtoMask>(below(1u << kNumProtocols));
        if (r.algorithms == 0 && r.protocols == 0) r.protocols = 3;
        break;
    }
    r.channels = chance(50) ? 0 : static_cast<int>(1 + below(kMaxChannels));
    r.chunkBytes = chance(60) ? 0 : 1 + below(kMaxChunkBytes);
    return r;
  }

  TuningTable table(int nRules) {
    TuningTable t;
    t.source = "random";
    for (int i = 0; i < nRules; ++i) t.rules.push_back(rule(i + 1));
    return t;
  }

  CommShape shape() {
    uint64_t nNodes = 1 + below(4);
    if (chance(15)) nNodes = 8;
    if (chance(25)) return CommShape::from(1 + below(64), nNodes);  // maybe uneven
    return CommShape::from(nNodes * (1 + below(8)), nNodes);
  }

  /// A size worth asking about: a rule edge (maybe scaled per rank), next to one, or anything.
  uint64_t querySize(const TuningTable& t, const CommShape& s) {
    if (t.rules.empty() || chance(20)) return chance(50) ? size() : rng_() >> below(64);
    const Rule& r = t.rules[below(t.rules.size())];
    uint64_t edge = chance(50) ? r.size.lo : r.size.hi;
    if (r.perRankSize && chance(60)) {
      uint64_t scaled;
      if (__builtin_mul_overflow(edge, s.nRanks, &scaled)) scaled = kUnbounded;
      edge = scaled + (chance(50) ? 0 : below(s.nRanks));
    }
    switch (below(3)) {
      case 0:
        return edge == 0 ? 0 : edge - 1;
      case 1:
        return edge;
      default:
        return edge == kUnbounded ? kUnbounded : edge + 1;
    }
  }

  /// NCCL's cost table: model times, some cells IGNORE (unsupported / excluded).
  std::vector<float> costs(int numAlgo, int numProto) {
    std::vector<float> cells(static_cast<size_t>(numAlgo * numProto) + 8, 777.0f);
    int ignorePercent = static_cast<int>(below(4)) * 30;  // 0, 30, 60 or 90
    for (int i = 0; i < numAlgo * numProto; ++i) {
      cells[i] = chance(ignorePercent) ? kIgnoreCost : static_cast<float>(below(1000)) / 8.0f;
    }
    return cells;
  }

 private:
  std::mt19937 rng_;
};

/// Runs `queries` random calls of every kind against both; stops at the first difference.
void compareOnQueries(const TuningTable& table, const CommShape& shape, Generator& gen, int queries,
                      const char* label) {
  auto compiled = std::make_shared<const CompiledTable>(CompiledTable::compile(table, shape));
  TunerContext ctx(compiled, nullptr, false);
  Reference ref{table, shape, {}};
  for (int q = 0; q < queries; ++q) {
    const int coll = static_cast<int>(gen.below(kNumCollectives));
    const uint64_t nBytes = gen.querySize(table, shape);
    const int pipeOps = static_cast<int>(gen.below(7)) - 1;
    const int regBuff = static_cast<int>(gen.below(3)) - 1;
    const int numAlgo = gen.chance(20) ? 6 : 7;
    const int numProto = gen.chance(10) ? 2 : 3;
    const std::string where =
        std::string(label) + ": " + collectiveName(static_cast<Collective>(coll)) +
        " nBytes=" + std::to_string(nBytes) + " pipeOps=" + std::to_string(pipeOps) +
        " regBuff=" + std::to_string(regBuff) + " table " + std::to_string(numAlgo) + "x" +
        std::to_string(numProto) + " shape " + std::to_string(shape.nRanks) + "/" +
        std::to_string(shape.nNodes);

    // v3+ cost table.
    std::vector<float> got = gen.costs(numAlgo, numProto), want = got;
    const int startChannels = gen.chance(50) ? 0 : static_cast<int>(1 + gen.below(32));
    int gotChannels = startChannels, wantChannels = startChannels;
    ctx.getCollInfo(coll, nBytes, pipeOps, got.data(), numAlgo, numProto, regBuff, &gotChannels);
    ref.getCollInfo(coll, nBytes, pipeOps, want.data(), numAlgo, numProto, regBuff, &wantChannels);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << where;
    ASSERT_EQ(gotChannels, wantChannels) << where;

    // v2.
    const bool collNet = gen.chance(50), nvls = gen.chance(50);
    int gotAlgo = -1, gotProto = -1, wantAlgo = -1, wantProto = -1;
    gotChannels = wantChannels = startChannels;
    ctx.getCollInfoV2(coll, nBytes, collNet ? 1 : 0, nvls ? 1 : 0, pipeOps, &gotAlgo, &gotProto,
                      &gotChannels);
    ref.getCollInfoV2(coll, nBytes, collNet, nvls, pipeOps, &wantAlgo, &wantProto, &wantChannels);
    ASSERT_EQ(gotAlgo, wantAlgo) << where << " (v2)";
    ASSERT_EQ(gotProto, wantProto) << where << " (v2)";
    ASSERT_EQ(gotChannels, wantChannels) << where << " (v2)";

    // v6 chunk size.
    const int algo = static_cast<int>(gen.below(kNumAlgorithms));
    const int proto = static_cast<int>(gen.below(kNumProtocols));
    // Usually the same operation getCollInfo just answered (as NCCL pairs them), sometimes
    // another size, which has no decision to pair with.
    const uint64_t chunkBytes = gen.chance(75) ? nBytes : nBytes + 1 + gen.below(4096);
    size_t gotChunk = 4242, wantChunk = 4242;
    ctx.getChunkSize(coll, chunkBytes, algo, proto, &gotChunk);
    ref.getChunkSize(coll, chunkBytes, algo, proto, &wantChunk);
    ASSERT_EQ(gotChunk, wantChunk)
        << where << " (chunk, algo " << algo << " proto " << proto << ")";
  }
}

TEST(CompiledTableDifferential, RandomTablesMatchTheReference) {
  Generator gen(0x5eed);
  for (int t = 0; t < 300; ++t) {
    const int nRules = 1 + static_cast<int>(gen.below(300));
    TuningTable table = gen.table(nRules);
    for (int s = 0; s < 2; ++s) {
      CommShape shape = gen.shape();
      compareOnQueries(
          table, shape, gen, 150,
          ("table " + std::to_string(t) + " (" + std::to_string(nRules) + " rules)").c_str());
      if (HasFatalFailure()) return;
    }
  }
}

TEST(CompiledTableDifferential, RandomTablesSurviveFormatAndParse) {
  // The same comparison on tables that went through text, as a user's file would.
  Generator gen(77);
  for (int t = 0; t < 40; ++t) {
    TuningTable original = gen.table(1 + static_cast<int>(gen.below(200)));
    std::string text;
    for (const Rule& r : original.rules) text += formatRule(r) + "\n";
    ParsedTable parsed = parseTable(text, "formatted");
    ASSERT_TRUE(parsed.diagnostics.empty()) << parsed.diagnostics[0].message;
    ASSERT_EQ(parsed.table.rules.size(), original.rules.size());
    compareOnQueries(parsed.table, gen.shape(), gen, 100, "formatted");
    if (HasFatalFailure()) return;
  }
}

/// The shape of a fitted table: many contiguous bands on one collective, mostly selecting one
/// cell (the index's common case), some with per-call conditions or restrictions behind or in
/// front of them. Band widths vary from 0.5% to 10% of their size, so some tables crowd the
/// finest index and take its search.
TuningTable denseTable(Generator& gen, int nRules) {
  TuningTable table;
  table.source = "dense";
  const double widths[] = {0.005, 0.02, 0.1};
  const double width = widths[gen.below(3)];
  uint64_t lo = 0;
  for (int i = 0; i < nRules; ++i) {
    Rule r = gen.rule(i + 1);
    r.collectives = gen.chance(90) ? bit(Collective::AllReduce) : r.collectives;
    r.nodes = r.ranks = r.ranksPerNode = Range{};
    r.perRankSize = false;
    const uint64_t step = 1 + static_cast<uint64_t>(static_cast<double>(lo) * width *
                                                    static_cast<double>(1 + gen.below(100)) / 100);
    r.size = Range{lo, i + 1 == nRules ? kUnbounded : lo + step - 1};
    lo += step;
    if (gen.chance(85)) {  // plain select, as fit writes them
      r.algorithms = static_cast<AlgoMask>(1u << gen.below(kNumAlgorithms));
      r.protocols = static_cast<ProtoMask>(1u << gen.below(kNumProtocols));
      r.pipeOps = Range{};
      r.regBuff = -1;
    }
    table.rules.push_back(r);
    if (gen.chance(5)) {  // an overlapping rule behind it
      Rule behind = gen.rule(static_cast<int>(table.rules.size()) + 1);
      behind.collectives = bit(Collective::AllReduce);
      behind.size = r.size;
      table.rules.push_back(behind);
    }
  }
  for (size_t i = 0; i < table.rules.size(); ++i) table.rules[i].line = static_cast<int>(i + 1);
  return table;
}

TEST(CompiledTableDifferential, DenseTablesMatchTheReference) {
  Generator gen(0xde75e);
  for (int t = 0; t < 40; ++t) {
    const int nRules = 50 + static_cast<int>(gen.below(2000));
    TuningTable table = denseTable(gen, nRules);
    compareOnQueries(
        table, gen.shape(), gen, 1500,
        ("dense table " + std::to_string(t) + " (" + std::to_string(nRules) + ")").c_str());
    if (HasFatalFailure()) return;
  }
}

// ---- the linear fallback -----------------------------------------------------------------

/// 3000 nested ranges [i, 10^9 - i]: about 9M index entries, over kMaxEntriesPerLane.
TuningTable nestedTable(Generator& gen) {
  TuningTable table;
  table.source = "nested";
  for (int i = 0; i < 3000; ++i) {
    Rule r;
    r.line = i + 1;
    r.collectives = bit(Collective::AllReduce) | bit(Collective::AllGather);
    r.size = Range{static_cast<uint64_t>(i), 1000000000ull - static_cast<uint64_t>(i)};
    r.perRankSize = i % 5 == 0;
    r.algorithms = static_cast<AlgoMask>(1u << gen.below(kNumAlgorithms));
    r.protocols = static_cast<ProtoMask>(1u << gen.below(kNumProtocols));
    if (i % 7 == 0) r.pipeOps = Range{2, 3};
    if (i % 11 == 0) r.regBuff = static_cast<int>(gen.below(2));
    if (gen.chance(30)) r.channels = static_cast<int>(1 + gen.below(kMaxChannels));
    if (gen.chance(30)) r.chunkBytes = 1 + gen.below(1u << 20);
    table.rules.push_back(r);
  }
  return table;
}

TEST(CompiledTableDifferential, LinearFallbackMatchesTheReference) {
  Generator gen(4096);
  TuningTable table = nestedTable(gen);
  const CommShape shape = CommShape::from(8, 1);
  CompiledTable compiled = CompiledTable::compile(table, shape);
  // The nested lanes fell back (no boundaries are kept in fallback mode); the others did not.
  EXPECT_TRUE(compiled.boundaries(Collective::AllReduce).empty());
  EXPECT_TRUE(compiled.boundaries(Collective::AllGather).empty());
  EXPECT_EQ(compiled.boundaries(Collective::Broadcast).size(), 1u);
  EXPECT_EQ(compiled.ruleCount(), 3000u);

  // The outermost rule (line 1) comes first; a visitor that declines walks deep into the list.
  auto lineOf = [&](uint64_t nBytes, auto&& visit) {
    const Rule* r = compiled.firstMatch(Collective::AllReduce, nBytes, visit);
    return r ? r->line : 0;
  };
  EXPECT_EQ(lineOf(0, [](const Rule&) { return true; }), 1);
  EXPECT_EQ(lineOf(2999, [](const Rule& r) { return r.line > 1000; }), 1001);
  EXPECT_EQ(lineOf(1000000000ull - 2999, [](const Rule& r) { return r.line == 3000; }), 3000);
  EXPECT_EQ(lineOf(1000000000ull - 2998, [](const Rule& r) { return r.line == 3000; }), 0);
  EXPECT_EQ(lineOf(1000000001ull, [](const Rule&) { return true; }), 0);

  compareOnQueries(table, shape, gen, 3000, "nested");
}

TEST(CompiledTableDifferential, LinearFallbackWithPerRankScaling) {
  Generator gen(99);
  TuningTable table = nestedTable(gen);
  for (Rule& r : table.rules) {
    r.perRankSize = true;
    r.collectives = bit(Collective::AllGather);
  }
  const CommShape shape = CommShape::from(16, 2);
  CompiledTable compiled = CompiledTable::compile(table, shape);
  EXPECT_TRUE(compiled.boundaries(Collective::AllGather).empty());
  // Rule 1 covers per-rank [0, 10^9]: totals up to 16 * 10^9 + 15.
  auto any = [](const Rule&) { return true; };
  ASSERT_NE(compiled.firstMatch(Collective::AllGather, 16000000015ull, any), nullptr);
  EXPECT_EQ(compiled.firstMatch(Collective::AllGather, 16000000016ull, any), nullptr);
  compareOnQueries(table, shape, gen, 2000, "nested per-rank");
}

}  // namespace
}  // namespace pilot::tuner
