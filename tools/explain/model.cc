#include "explain/model.h"

#include <algorithm>

#include "pilot/core/text.h"
#include "pilot/tuner/decision.h"

namespace pilot::cli {
namespace {

constexpr int kAlgos = tuner::kNumAlgorithms;
constexpr int kProtos = tuner::kNumProtocols;

Algorithm algoAt(int a) {
  return static_cast<Algorithm>(a);
}
Protocol protoAt(int p) {
  return static_cast<Protocol>(p);
}

std::optional<tuner::AlgoMask> parseAlgoPart(std::string_view s) {
  if (tuner::isWildcard(s)) return tuner::AlgoMask{0};
  // NCCL_ALGO's "CollNet" means both CollNet algorithms.
  if (text::equalsIgnoreCase(s, "collnet")) {
    return static_cast<tuner::AlgoMask>(tuner::bit(Algorithm::CollNetDirect) |
                                        tuner::bit(Algorithm::CollNetChain));
  }
  if (auto a = tuner::parseAlgorithm(s)) return tuner::bit(*a);
  return std::nullopt;
}

std::optional<tuner::ProtoMask> parseProtoPart(std::string_view s) {
  if (tuner::isWildcard(s)) return tuner::ProtoMask{0};
  if (auto p = tuner::parseProtocol(s)) return tuner::bit(*p);
  return std::nullopt;
}

template <typename Fn>
void forEachSelected(const CellSelector& sel, Fn&& fn) {
  for (int a = 0; a < kAlgos; ++a) {
    if (sel.algos != 0 && !(sel.algos & (1u << a))) continue;
    for (int p = 0; p < kProtos; ++p) {
      if (sel.protos != 0 && !(sel.protos & (1u << p))) continue;
      fn(a, p);
    }
  }
}

}  // namespace

CostShape costShapeFor(const NcclVersion& v) {
  CostShape s;
  s.numAlgo = v.minor >= 23 ? kAlgos : kAlgos - 1;  // PAT arrived in 2.23
  s.numProto = kProtos;
  return s;
}

std::string cellName(const Cell& c) {
  return std::string(tuner::algorithmDisplayName(c.algo)) + "/" +
         tuner::protocolDisplayName(c.proto);
}

bool CellMask::anyOf(Algorithm a) const {
  for (int p = 0; p < kProtos; ++p) {
    if (has(a, protoAt(p))) return true;
  }
  return false;
}

std::vector<Cell> CellMask::cells() const {
  std::vector<Cell> out;
  for (int a = 0; a < kAlgos; ++a) {
    for (int p = 0; p < kProtos; ++p) {
      if (has(algoAt(a), protoAt(p))) out.push_back({algoAt(a), protoAt(p)});
    }
  }
  return out;
}

CellMask defaultCells(Collective coll, uint64_t nRanks, uint64_t nNodes, const CostShape& shape) {
  CellMask m;
  auto allProtocols = [&](Algorithm a) {
    for (int p = 0; p < kProtos; ++p) m.set(a, protoAt(p));
  };
  allProtocols(Algorithm::Ring);
  if (coll == Collective::AllReduce) allProtocols(Algorithm::Tree);
  const bool gatherScatter = coll == Collective::AllGather || coll == Collective::ReduceScatter;
  if (gatherScatter && nRanks == nNodes && shape.numAlgo > static_cast<int>(Algorithm::Pat)) {
    m.set(Algorithm::Pat, Protocol::Simple);  // NCCL runs PAT at one rank per node, Simple only
  }
  return m;
}

Expected<CellSelector> parseCellSelector(std::string_view textIn) {
  std::string_view s = text::trim(textIn);
  CellSelector sel;
  sel.text = std::string(s);
  auto bad = [&](const std::string& why) {
    return Error{"'" + sel.text + "': " + why + " (algorithms: " + tuner::algorithmNameList() +
                 "; protocols: " + tuner::protocolNameList() + ")"};
  };
  if (s.empty()) return bad("empty algorithm/protocol");
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) {
    // One word: algorithm and protocol names never collide, so either reading is unambiguous.
    if (auto a = parseAlgoPart(s); a && *a != 0) {
      sel.algos = *a;
      return sel;
    }
    if (auto p = parseProtoPart(s); p && *p != 0) {
      sel.protos = *p;
      return sel;
    }
    return bad("not an algorithm or protocol name");
  }
  auto a = parseAlgoPart(text::trim(s.substr(0, slash)));
  if (!a) return bad("unknown algorithm");
  auto p = parseProtoPart(text::trim(s.substr(slash + 1)));
  if (!p) return bad("unknown protocol");
  if (*a == 0 && *p == 0) return bad("names neither an algorithm nor a protocol");
  sel.algos = *a;
  sel.protos = *p;
  return sel;
}

Status enableCells(CellMask& mask, const CellSelector& sel, const CostShape& shape) {
  std::string outside;
  forEachSelected(sel, [&](int a, int p) {
    if (a >= shape.numAlgo) {
      outside = tuner::algorithmDisplayName(algoAt(a));
      return;
    }
    mask.set(algoAt(a), protoAt(p));
  });
  // Only an explicit algorithm can be outside the table; a wildcard just stops at its edge.
  if (!outside.empty() && sel.algos != 0) {
    return Error{"--enable " + sel.text + ": this NCCL's cost table has no " + outside +
                 " (it has " + std::to_string(shape.numAlgo) + " algorithms)"};
  }
  return Status::success();
}

void disableCells(CellMask& mask, const CellSelector& sel) {
  forEachSelected(sel, [&](int a, int p) { mask.clear(algoAt(a), protoAt(p)); });
}

std::vector<uint64_t> probeSizes(const std::vector<uint64_t>& boundaries, uint64_t min,
                                 uint64_t max) {
  std::vector<uint64_t> out{min, max};
  auto add = [&](uint64_t v) {
    if (v >= min && v <= max) out.push_back(v);
  };
  for (uint64_t b : boundaries) {
    add(b);
    if (b > 0) add(b - 1);
  }
  for (int k = 0; k < 64; ++k) add(uint64_t{1} << k);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

CostTable CostTable::filled(const CellMask& usable, const CostShape& shape) {
  CostTable t;
  t.shape = shape;
  t.cells.assign(static_cast<size_t>(shape.numAlgo * shape.numProto), tuner::kIgnoreCost);
  for (int a = 0; a < shape.numAlgo && a < kAlgos; ++a) {
    for (int p = 0; p < shape.numProto && p < kProtos; ++p) {
      if (usable.has(algoAt(a), protoAt(p))) t.cells[a * shape.numProto + p] = kSentinel;
    }
  }
  return t;
}

CellMask CostTable::usable() const {
  CellMask m;
  for (int a = 0; a < shape.numAlgo && a < kAlgos; ++a) {
    for (int p = 0; p < shape.numProto && p < kProtos; ++p) {
      if (at(a, p) >= 0.0f) m.set(algoAt(a), protoAt(p));
    }
  }
  return m;
}

const char* decisionName(DecisionKind k) {
  switch (k) {
    case DecisionKind::Select:
      return "select";
    case DecisionKind::Restrict:
      return "restrict";
    case DecisionKind::Default:
      break;
  }
  return "default";
}

bool Decision::operator==(const Decision& o) const {
  return kind == o.kind && cell == o.cell && allowed == o.allowed && channels == o.channels &&
         chunk == o.chunk;
}

Decision classifyCostTable(const CostTable& before, const CostTable& after, int nChannels) {
  Decision d;
  d.channels = nChannels > 0 ? nChannels : 0;
  bool restricted = false;
  for (int a = 0; a < before.shape.numAlgo && a < kAlgos; ++a) {
    for (int p = 0; p < before.shape.numProto && p < kProtos; ++p) {
      const float was = before.at(a, p), now = after.at(a, p);
      if (was > 0.0f && now == 0.0f && !d.cell) d.cell = Cell{algoAt(a), protoAt(p)};
      if (was >= 0.0f && now < 0.0f) restricted = true;
    }
  }
  if (d.cell) {
    d.kind = DecisionKind::Select;
    d.allowed.set(d.cell->algo, d.cell->proto);
  } else {
    d.kind = restricted ? DecisionKind::Restrict : DecisionKind::Default;
    d.allowed = after.usable();
  }
  return d;
}

Decision classifyV2(int algorithm, int protocol, int nChannels, const CellMask& usable) {
  Decision d;
  d.channels = nChannels > 0 ? nChannels : 0;
  if (algorithm >= 0 && algorithm < kAlgos && protocol >= 0 && protocol < kProtos) {
    d.kind = DecisionKind::Select;
    d.cell = Cell{algoAt(algorithm), protoAt(protocol)};
    d.allowed.set(d.cell->algo, d.cell->proto);
  } else {
    d.allowed = usable;
  }
  return d;
}

int decidingLine(const tuner::CompiledTable& table, const ProbeCall& call, const CellMask& usable,
                 const CostShape& shape) {
  const uint64_t pipeOps = call.pipeOps < 0 ? 0 : static_cast<uint64_t>(call.pipeOps);
  const tuner::Rule* hit = nullptr;
  if (call.abi == 2) {
    const tuner::V2Support support{
        call.coll, usable.anyOf(Algorithm::CollNetDirect) || usable.anyOf(Algorithm::CollNetChain),
        usable.anyOf(Algorithm::Nvls) || usable.anyOf(Algorithm::NvlsTree),
        static_cast<int>(call.nNodes)};
    hit = table.firstMatch(call.coll, call.nBytes, [&](const tuner::Rule& r) {
      if (!r.pipeOps.contains(pipeOps) || r.regBuff >= 0) return false;
      int algorithm = -1, protocol = -1, channels = 0;
      return tuner::applyV2(r, support, &algorithm, &protocol, &channels) !=
             tuner::V2Outcome::NotApplicable;
    });
  } else {
    // A rule that does not apply leaves the table untouched, so one scratch copy serves all.
    CostTable scratch = CostTable::filled(usable, shape);
    const tuner::CostTableView view{scratch.cells.data(), shape.numAlgo, shape.numProto};
    hit = table.firstMatch(call.coll, call.nBytes, [&](const tuner::Rule& r) {
      if (!r.pipeOps.contains(pipeOps)) return false;
      if (r.regBuff >= 0 && r.regBuff != call.regBuff) return false;
      int channels = 0;
      return tuner::applyToCostTable(r, view, &channels) == tuner::Outcome::Applied;
    });
  }
  return hit ? hit->line : 0;
}

std::vector<SizeRange> mergeRanges(const std::vector<Probe>& probes, uint64_t max) {
  std::vector<SizeRange> out;
  for (size_t i = 0; i < probes.size(); ++i) {
    const Probe& probe = probes[i];
    const uint64_t hi = i + 1 < probes.size() ? probes[i + 1].size - 1 : max;
    if (!out.empty() && out.back().decision == probe.decision) {
      out.back().hi = hi;
    } else {
      out.push_back(SizeRange{probe.size, hi, probe.decision, {}});
    }
    std::vector<int>& lines = out.back().ruleLines;
    if (probe.ruleLine != 0 &&
        std::find(lines.begin(), lines.end(), probe.ruleLine) == lines.end()) {
      lines.push_back(probe.ruleLine);
    }
  }
  return out;
}

}  // namespace pilot::cli
