// How `nccl-pilot explain` shows its ranges: an aligned text table or one JSON document.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "explain/model.h"
#include "pilot/core/fabric.h"
#include "pilot/tuner/compiled_table.h"

namespace pilot::cli {

/// What was asked, echoed above the ranges.
struct ExplainContext {
  std::string table;  ///< the file
  NcclVersion nccl;
  int abi = 6;
  CostShape shape;
  Collective coll = Collective::AllReduce;
  uint64_t nNodes = 1, nRanks = 1;
  int pipeOps = 1;
  int regBuff = 0;
  CellMask usable;
  Fabric fabric = Fabric::Ethernet;  ///< what the table's fabric= keys were matched with
  /// The table's `explore=` lines for this collective and shape, in file order.
  std::vector<tuner::CompiledTable::Mark> marks = {};
};

/// A byte count readable at a glance yet exact: 64K, 8M, 64K+1, 128K-1, 4M+15, 2816K-1, 1000.
std::string formatSize(uint64_t bytes);

/// "Tree/LL128 Ring/LL128".
std::string cellList(const CellMask& cells);

void printExplainText(std::ostream& out, const ExplainContext& ctx,
                      const std::vector<SizeRange>& ranges);
nlohmann::ordered_json explainJson(const ExplainContext& ctx, const std::vector<SizeRange>& ranges);

}  // namespace pilot::cli
