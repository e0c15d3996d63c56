// The pure logic behind `nccl-pilot explain`: the cost table a given NCCL hands the tuner
// (its shape and which cells it leaves usable), the sizes worth probing, how a probe's result
// reads as a decision, and how probes merge into size ranges. No dlopen and no I/O here, so
// tests can drive every rule without a plugin.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/nccl_versions.h"
#include "pilot/core/result.h"
#include "pilot/tuner/compiled_table.h"
#include "pilot/tuner/names.h"
#include "pilot/tuner/table.h"

namespace pilot::cli {

using tuner::Algorithm;
using tuner::Collective;
using tuner::Protocol;

/// NCCL's float[numAlgo][numProto]: 6 algorithms up to 2.22, 7 (PAT added) from 2.23.
struct CostShape {
  int numAlgo = tuner::kNumAlgorithms;
  int numProto = tuner::kNumProtocols;
};
CostShape costShapeFor(const NcclVersion& v);

struct Cell {
  Algorithm algo;
  Protocol proto;
  bool operator==(const Cell& o) const { return algo == o.algo && proto == o.proto; }
};
std::string cellName(const Cell& c);  ///< NCCL's spelling: "Tree/LL128"

/// A set of cost-table cells, bit a*kNumProtocols+p.
class CellMask {
 public:
  void set(Algorithm a, Protocol p) { bits_ |= bitOf(a, p); }
  void clear(Algorithm a, Protocol p) { bits_ &= ~bitOf(a, p); }
  bool has(Algorithm a, Protocol p) const { return bits_ & bitOf(a, p); }
  bool empty() const { return bits_ == 0; }
  bool anyOf(Algorithm a) const;
  std::vector<Cell> cells() const;  ///< in NCCL's index order
  bool operator==(const CellMask& o) const { return bits_ == o.bits_; }

 private:
  static uint32_t bitOf(Algorithm a, Protocol p) {
    return 1u << (static_cast<int>(a) * tuner::kNumProtocols + static_cast<int>(p));
  }
  uint32_t bits_ = 0;
};

/// The cells NCCL leaves usable on a generic multi-node system without NVLS or CollNet:
/// allreduce Tree and Ring; allgather/reducescatter Ring, plus PAT/Simple at one rank per node
/// when the table has PAT; broadcast/reduce Ring. All three protocols each.
CellMask defaultCells(Collective coll, uint64_t nRanks, uint64_t nNodes, const CostShape& shape);

/// An --enable/--disable argument: "ring", "ll128", "tree/ll", "NVLSTree/Simple", "collnet"
/// (both CollNet algorithms), "*/ll". A zero mask means every algorithm (protocol).
struct CellSelector {
  tuner::AlgoMask algos = 0;
  tuner::ProtoMask protos = 0;
  std::string text;  ///< as the user wrote it, for messages

  bool wholeAlgorithms() const { return algos != 0 && protos == 0; }
  bool wholeProtocols() const { return algos == 0 && protos != 0; }
};
Expected<CellSelector> parseCellSelector(std::string_view text);

/// Marks the selected cells usable; fails if one lies outside this NCCL's table (PAT on 2.21).
Status enableCells(CellMask& mask, const CellSelector& sel, const CostShape& shape);
/// Marks the selected cells IGNORE, as NCCL_ALGO/NCCL_PROTO exclusions would.
void disableCells(CellMask& mask, const CellSelector& sel);

/// Every size worth asking about in [min, max]: each table boundary b and b-1, every power of
/// two, min and max. Between consecutive probes the table's candidate rules cannot change.
std::vector<uint64_t> probeSizes(const std::vector<uint64_t>& boundaries, uint64_t min,
                                 uint64_t max);

/// NCCL's float cost table as explain fills it: a positive sentinel in usable cells, IGNORE
/// (-1) elsewhere, so any edit by the tuner shows.
struct CostTable {
  static constexpr float kSentinel = 1000.0f;

  CostShape shape;
  std::vector<float> cells;

  static CostTable filled(const CellMask& usable, const CostShape& shape);
  float at(int a, int p) const { return cells[a * shape.numProto + p]; }
  CellMask usable() const;
};

enum class DecisionKind { Default, Select, Restrict };
const char* decisionName(DecisionKind k);  ///< "default", "select", "restrict"

struct Decision {
  DecisionKind kind = DecisionKind::Default;
  std::optional<Cell> cell;  ///< Select only
  CellMask allowed;          ///< cells NCCL may still choose from (Select: the one cell)
  int channels = 0;          ///< 0 = NCCL's
  uint64_t chunk = 0;        ///< 0 = NCCL's (tuner ABI v6 only)

  bool operator==(const Decision& o) const;
  bool operator!=(const Decision& o) const { return !(*this == o); }
};

/// Reads a v3+ getCollInfo call: a cell the tuner set to 0.0 is a Select (NCCL takes the
/// minimum over usable cells); usable cells it set negative are a Restrict; else Default.
Decision classifyCostTable(const CostTable& before, const CostTable& after, int nChannels);

/// Reads a v2 getCollInfo call: algorithm/protocol start at -1 (NCCL_ALGO_UNDEF) and the
/// tuner writes both or neither.
Decision classifyV2(int algorithm, int protocol, int nChannels, const CellMask& usable);

/// One getCollInfo call as explain makes it.
struct ProbeCall {
  Collective coll;
  uint64_t nBytes;
  int pipeOps;
  int regBuff;  ///< -1 where the ABI does not pass it (v2, v3)
  int abi;
  uint64_t nNodes;
};

/// The table line the tuner's own matching stops at for this call, or 0 when no rule applies.
/// It runs the same pilot_tuner functions the plugin does, so it names the rule behind the
/// plugin's answer (the plugin does not say which line it used).
int decidingLine(const tuner::CompiledTable& table, const ProbeCall& call, const CellMask& usable,
                 const CostShape& shape);

struct Probe {
  uint64_t size;
  Decision decision;
  int ruleLine = 0;  ///< table line that decided, 0 = none
};

struct SizeRange {
  uint64_t lo, hi;
  Decision decision;
  std::vector<int> ruleLines;  ///< distinct deciding lines within the range, in size order
};

/// Joins consecutive probes with equal decisions. Probe i covers [size_i, size_{i+1} - 1];
/// the last one ends at max. Probes must be sorted by size.
std::vector<SizeRange> mergeRanges(const std::vector<Probe>& probes, uint64_t max);

}  // namespace pilot::cli
