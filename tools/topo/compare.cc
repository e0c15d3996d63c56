#include "topo/compare.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <optional>

#include "pilot/topology/nccl_xml.h"

namespace pilot::cli {
namespace {

using topology::BusId;
using topology::Machine;
using topology::PathType;

std::optional<BusId> busOf(const Machine& m, int pci) {
  if (pci < 0 || static_cast<size_t>(pci) >= m.pci.size()) return std::nullopt;
  return m.pci[pci].busId;
}

/// GPU bus id -> its PCI node.
std::map<BusId, int> gpuIndex(const Machine& m) {
  std::map<BusId, int> out;
  for (const topology::Gpu& g : m.gpus) {
    if (auto bus = busOf(m, g.pci)) out.emplace(*bus, g.pci);
  }
  return out;
}

/// The key a NIC is matched by: NCCL's bus id for it (function 0, so ports and functions of one
/// card meet), else "name:<name>" for a NIC without PCI device.
std::string nicKey(const Machine& m, const topology::Nic& n) {
  if (auto bus = busOf(m, n.pci)) return topology::ncclNicBusId(*bus).str();
  return "name:" + n.name;
}

struct NicSide {
  std::string label;  ///< "mlx5_0 (0000:1b:00.0)"
  int pci = -1;
};

std::map<std::string, NicSide> nicIndex(const Machine& m) {
  std::map<std::string, NicSide> out;
  for (const topology::Nic& n : m.nics) {
    auto bus = busOf(m, n.pci);
    const std::string label = n.name + (bus ? " (" + bus->str() + ")" : "");
    out.emplace(nicKey(m, n), NicSide{label, n.pci});  // first port/function names the card
  }
  return out;
}

}  // namespace

bool TopoComparison::differs() const {
  if (!gpusOnlyOurs.empty() || !gpusOnlyDump.empty() || !nicsOnlyOurs.empty() ||
      !nicsOnlyDump.empty()) {
    return true;
  }
  for (const PairPaths& p : pairs) {
    if (p.differs()) return true;
  }
  return false;
}

TopoComparison compareMachines(const Machine& ours, const std::vector<topology::GpuNicPair>& pairs,
                               const Machine& dump) {
  TopoComparison c;
  const auto ourGpus = gpuIndex(ours), dumpGpus = gpuIndex(dump);
  for (const auto& [bus, pci] : ourGpus) {
    if (!dumpGpus.count(bus)) c.gpusOnlyOurs.push_back(bus.str());
  }
  for (const auto& [bus, pci] : dumpGpus) {
    if (!ourGpus.count(bus)) c.gpusOnlyDump.push_back(bus.str());
  }
  const auto ourNics = nicIndex(ours), dumpNics = nicIndex(dump);
  for (const auto& [key, side] : ourNics) {
    if (!dumpNics.count(key)) c.nicsOnlyOurs.push_back(side.label);
  }
  for (const auto& [key, side] : dumpNics) {
    if (!ourNics.count(key)) c.nicsOnlyDump.push_back(side.label);
  }

  // Which (GPU, NIC card) combinations are our pairs: those rows are always shown.
  std::map<std::pair<BusId, std::string>, bool> paired;
  for (const topology::GpuNicPair& pair : pairs) {
    auto gpuBus = busOf(ours, ours.gpus.at(pair.gpu).pci);
    if (!gpuBus) continue;
    for (int n : pair.nics) paired[{*gpuBus, nicKey(ours, ours.nics.at(n))}] = true;
  }
  for (const auto& [gpuBus, ourGpuPci] : ourGpus) {
    auto theirGpu = dumpGpus.find(gpuBus);
    if (theirGpu == dumpGpus.end()) continue;
    for (const auto& [key, ourNic] : ourNics) {
      auto theirNic = dumpNics.find(key);
      if (theirNic == dumpNics.end() || ourNic.pci < 0 || theirNic->second.pci < 0) continue;
      PairPaths row;
      row.gpu = gpuBus.str();
      row.nic = ourNic.label;
      row.ours = topology::classifyPath(ours, ourGpuPci, ourNic.pci);
      row.theirs = topology::classifyPath(dump, theirGpu->second, theirNic->second.pci);
      row.paired = paired.count({gpuBus, key}) != 0;
      if (row.paired || row.differs()) c.pairs.push_back(row);
    }
  }
  return c;
}

void printComparisonText(std::ostream& out, const TopoComparison& c, const std::string& dumpPath,
                         bool repaired) {
  out << "\nComparison with " << dumpPath << " (ours: the machine "
      << (repaired ? "after repair" : "as written for NCCL") << "):\n";
  auto list = [&](const char* what, const std::vector<std::string>& items) {
    if (items.empty()) return;
    out << "  " << what << ":";
    for (const std::string& item : items) out << " " << item;
    out << "\n";
  };
  list("GPUs only here", c.gpusOnlyOurs);
  list("GPUs only in the dump", c.gpusOnlyDump);
  list("NICs only here", c.nicsOnlyOurs);
  list("NICs only in the dump", c.nicsOnlyDump);
  if (c.pairs.empty()) {
    out << "  no GPU-NIC pair present on both sides\n";
  } else {
    size_t nicWidth = 3;
    for (const PairPaths& p : c.pairs) nicWidth = std::max(nicWidth, p.nic.size());
    out << "  " << std::left << std::setw(14) << "GPU" << std::setw(static_cast<int>(nicWidth) + 2)
        << "NIC" << std::setw(6) << "ours"
        << "dump\n";
    for (const PairPaths& p : c.pairs) {
      std::string remark = p.differs() ? "differs" : "";
      if (!p.paired) remark += remark.empty() ? "(not a pair)" : " (not a pair)";
      out << "  " << std::setw(14) << p.gpu << std::setw(static_cast<int>(nicWidth) + 2) << p.nic
          << std::setw(6) << topology::pathName(p.ours);
      if (remark.empty()) {
        out << topology::pathName(p.theirs) << "\n";
      } else {
        out << std::setw(6) << topology::pathName(p.theirs) << remark << "\n";
      }
    }
  }
  out << "result: " << (c.differs() ? "differs" : "same") << "\n";
}

nlohmann::ordered_json comparisonJson(const TopoComparison& c, const std::string& dumpPath) {
  using json = nlohmann::ordered_json;
  json rows = json::array();
  for (const PairPaths& p : c.pairs) {
    rows.push_back({{"gpu", p.gpu},
                    {"nic", p.nic},
                    {"ours", topology::pathName(p.ours)},
                    {"dump", topology::pathName(p.theirs)},
                    {"paired", p.paired},
                    {"differs", p.differs()}});
  }
  json out;
  out["dump"] = dumpPath;
  out["gpus_only_ours"] = c.gpusOnlyOurs;
  out["gpus_only_dump"] = c.gpusOnlyDump;
  out["nics_only_ours"] = c.nicsOnlyOurs;
  out["nics_only_dump"] = c.nicsOnlyDump;
  out["pairs"] = std::move(rows);
  out["differs"] = c.differs();
  return out;
}

}  // namespace pilot::cli
