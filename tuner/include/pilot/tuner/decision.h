// How one rule's choice is written into what NCCL passes to getCollInfo.
// NCCL's reading (research/tuner.md §1.2): it takes the minimum over cells >= 0, so 0.0 selects
// a cell and -1.0 (NCCL_ALGO_PROTO_IGNORE) disables it; it does not re-validate afterwards, so a
// cell NCCL marked IGNORE (unsupported, or excluded by NCCL_ALGO/NCCL_PROTO) is never written.
#pragma once

#include "pilot/tuner/table.h"

namespace pilot::tuner {

constexpr float kIgnoreCost = -1.0f;

/// NCCL's float[numAlgo][numProto] cost table, passed to plugins as float**.
struct CostTableView {
  float* cells = nullptr;
  int numAlgo = 0;
  int numProto = 0;

  float& at(int algo, int proto) const { return cells[algo * numProto + proto]; }
  bool usable(int algo, int proto) const { return at(algo, proto) >= 0.0f; }
};

enum class Outcome {
  NotApplicable,  ///< the rule's choice has no usable cell here: try the next rule
  Applied,        ///< cells and/or channels written
};

/// Applies a matching rule's choice to the cost table (v3+ ABI):
///  - one algorithm and one protocol: that cell is set to 0.0 if NCCL left it usable;
///  - a subset: usable cells outside it are set to -1, if at least one usable cell remains;
///  - no choice (channels/chunk only): cells untouched.
/// Channels are written only when the rule sets them.
Outcome applyToCostTable(const Rule& rule, const CostTableView& table, int* nChannels);

/// What the v2 ABI (NCCL 2.21) can be told. It takes an algorithm and a protocol outright and
/// does not check them, so the rule must select exactly one cell that the communicator supports.
struct V2Support {
  Collective collective;
  bool collNet = false;
  bool nvls = false;
  int nNodes = 1;
};
enum class V2Outcome {
  NotApplicable,  ///< unsupported cell: try the next rule
  KeepNccl,       ///< the rule restricts (cannot be said through v2): NCCL keeps its
                  ///< algorithm/protocol; the rule's channels still apply
  Applied,
};
V2Outcome applyV2(const Rule& rule, const V2Support& support, int* algorithm, int* protocol,
                  int* nChannels);

/// Whether NCCL 2.21 can run `algo` for this collective on this communicator.
bool v2Supports(Algorithm algo, const V2Support& support);

}  // namespace pilot::tuner
