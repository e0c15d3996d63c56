#include "explain/report.h"

#include <algorithm>
#include <limits>

#include "pilot/core/text.h"

namespace pilot::cli {
namespace {

bool roundSize(uint64_t v) {
  return v < 1024 || v % 1024 == 0;
}

std::string lineList(const std::vector<int>& lines) {
  std::string s;
  for (int l : lines) s += (s.empty() ? "" : ",") + std::to_string(l);
  return s.empty() ? "-" : s;
}

std::string choiceText(const Decision& d) {
  if (d.kind == DecisionKind::Select && d.cell) return cellName(*d.cell);
  if (d.kind == DecisionKind::Restrict) return cellList(d.allowed);
  return d.allowed.empty() ? "(nothing usable)" : "NCCL's choice";
}

/// "Ring/LL Tree/Simple" for a mark's cells (bit algo * 3 + protocol).
std::string markCells(uint32_t cells) {
  std::string s;
  for (int a = 0; a < tuner::kNumAlgorithms; ++a) {
    for (int p = 0; p < tuner::kNumProtocols; ++p) {
      if (!(cells & (1u << (a * tuner::kNumProtocols + p)))) continue;
      s += (s.empty() ? "" : " ") +
           std::string(tuner::algorithmDisplayName(static_cast<tuner::Algorithm>(a))) + "/" +
           tuner::protocolDisplayName(static_cast<tuner::Protocol>(p));
    }
  }
  return s;
}

const char* markMeaning(tuner::ExploreMark mark) {
  switch (mark) {
    case tuner::ExploreMark::Slow:
      return "measured clearly slower than the best here; never explored again";
    case tuner::ExploreMark::Known:
      return "measured enough, not clearly slower; not explored again";
    case tuner::ExploreMark::First:
      return "measured too little; the next exploring job tries it";
    case tuner::ExploreMark::None:
      break;
  }
  return "";
}

}  // namespace

std::string formatSize(uint64_t bytes) {
  if (bytes == std::numeric_limits<uint64_t>::max()) return "max";
  if (roundSize(bytes)) return text::formatBytes(bytes);
  // Range edges sit just off a round size: 64K+1 starts where 0..64K ends, and per-rank rules
  // end nRanks-1 bytes past one (4M+15). Show that offset while it is small next to the size,
  // trying finer units when a coarse one is too far: 2816K-1 is not near a whole M.
  for (uint64_t unit :
       {uint64_t{1} << 40, uint64_t{1} << 30, uint64_t{1} << 20, uint64_t{1} << 10}) {
    if (bytes < unit || bytes > std::numeric_limits<uint64_t>::max() - unit) continue;
    const uint64_t base = (bytes + unit / 2) / unit * unit;
    const uint64_t offset = base > bytes ? base - bytes : bytes - base;
    if (offset >= 1024 || offset >= unit / 16) continue;
    return text::formatBytes(base) + (base > bytes ? "-" : "+") + std::to_string(offset);
  }
  return std::to_string(bytes);
}

std::string cellList(const CellMask& cells) {
  std::string s;
  for (const Cell& c : cells.cells()) s += (s.empty() ? "" : " ") + cellName(c);
  return s.empty() ? "(none)" : s;
}

void printExplainText(std::ostream& out, const ExplainContext& ctx,
                      const std::vector<SizeRange>& ranges) {
  out << "table: " << ctx.table << "\n";
  out << "NCCL " << ctx.nccl.str() << ": tuner ABI v" << ctx.abi << ", cost table "
      << ctx.shape.numAlgo << " algorithms x " << ctx.shape.numProto << " protocols\n";
  out << "fabric: " << fabricName(ctx.fabric) << "\n";
  out << tuner::collectiveName(ctx.coll) << " on " << ctx.nNodes << " node(s), " << ctx.nRanks
      << " ranks; pipeOps " << ctx.pipeOps << ", regBuff ";
  if (ctx.abi >= 4)
    out << ctx.regBuff;
  else
    out << "not passed (ABI v" << ctx.abi << ")";
  out << "\nusable cells: " << cellList(ctx.usable) << "\n\n";

  const std::vector<std::string> header = {"size range", "decision", "algo/proto",
                                           "channels",   "chunk",    "line"};
  std::vector<std::vector<std::string>> rows;
  for (const SizeRange& r : ranges) {
    const Decision& d = r.decision;
    rows.push_back({formatSize(r.lo) + " .. " + formatSize(r.hi), decisionName(d.kind),
                    choiceText(d), d.channels > 0 ? std::to_string(d.channels) : "-",
                    d.chunk > 0 ? text::formatBytes(d.chunk) : "-", lineList(r.ruleLines)});
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto printRow = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += " | ";
      line += row[c];
      if (c + 1 < row.size()) line.append(width[c] - row[c].size(), ' ');
    }
    out << line << "\n";
  };
  printRow(header);
  std::string rule;
  for (size_t c = 0; c < width.size(); ++c)
    rule += (c > 0 ? "-+-" : "") + std::string(width[c], '-');
  out << rule << "\n";
  for (const auto& row : rows) printRow(row);
  if (ctx.marks.empty()) return;
  out << "\nexploration (explore= lines, written by `nccl-pilot fit`; what a job with "
         "NCCL_PILOT_TUNER_EXPLORE still tries):\n";
  for (const tuner::CompiledTable::Mark& m : ctx.marks) {
    out << "  "
        << (m.sizeLo == m.sizeHi ? formatSize(m.sizeLo)
                                 : formatSize(m.sizeLo) + " .. " + formatSize(m.sizeHi))
        << "  " << markCells(m.cells) << ": " << markMeaning(m.mark) << " (line " << m.line
        << ")\n";
  }
}

nlohmann::ordered_json explainJson(const ExplainContext& ctx,
                                   const std::vector<SizeRange>& ranges) {
  using json = nlohmann::ordered_json;
  auto names = [](const CellMask& m) {
    json list = json::array();
    for (const Cell& c : m.cells()) list.push_back(cellName(c));
    return list;
  };
  json out;
  out["table"] = ctx.table;
  out["nccl"] = ctx.nccl.str();
  out["abi"] = ctx.abi;
  out["fabric"] = fabricName(ctx.fabric);
  out["cost_table"] = {{"algorithms", ctx.shape.numAlgo}, {"protocols", ctx.shape.numProto}};
  out["collective"] = tuner::collectiveName(ctx.coll);
  out["nodes"] = ctx.nNodes;
  out["ranks"] = ctx.nRanks;
  out["pipeops"] = ctx.pipeOps;
  out["regbuff"] = ctx.abi >= 4 ? json(ctx.regBuff) : json(nullptr);
  out["usable"] = names(ctx.usable);
  json list = json::array();
  for (const SizeRange& r : ranges) {
    const Decision& d = r.decision;
    json j;
    j["min"] = r.lo;
    j["max"] = r.hi;
    j["decision"] = decisionName(d.kind);
    j["algorithm"] = d.cell ? json(tuner::algorithmDisplayName(d.cell->algo)) : json(nullptr);
    j["protocol"] = d.cell ? json(tuner::protocolDisplayName(d.cell->proto)) : json(nullptr);
    j["allowed"] = names(d.allowed);
    j["channels"] = d.channels > 0 ? json(d.channels) : json(nullptr);
    j["chunk"] = d.chunk > 0 ? json(d.chunk) : json(nullptr);
    j["lines"] = r.ruleLines;
    list.push_back(std::move(j));
  }
  out["ranges"] = std::move(list);
  json marks = json::array();
  for (const tuner::CompiledTable::Mark& m : ctx.marks) {
    marks.push_back({{"min", m.sizeLo},
                     {"max", m.sizeHi},
                     {"explore", tuner::exploreMarkName(m.mark)},
                     {"cells", markCells(m.cells)},
                     {"line", m.line}});
  }
  out["explore_marks"] = std::move(marks);
  return out;
}

}  // namespace pilot::cli
