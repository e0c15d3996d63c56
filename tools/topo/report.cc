#include "topo/report.h"

#include <algorithm>
#include <cctype>

#include "pilot/core/text.h"
#include "pilot/topology/topo_file.h"

namespace pilot::cli {
namespace {

using topology::Gpu;
using topology::GpuNicPair;
using topology::LinkLayer;
using topology::Machine;
using topology::Nic;
using topology::PathType;

// nvidia-smi's own words (`nvidia-smi topo -m`), so the two outputs read the same.
constexpr const char* kLegend[][2] = {
    {"X", "Self"},
    {"SYS",
     "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., "
     "QPI/UPI)"},
    {"NODE",
     "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a "
     "NUMA node"},
    {"PHB", "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"},
    {"PXB",
     "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)"},
    {"PIX", "Connection traversing at most a single PCIe bridge"},
    {"NV#", "Connection traversing a bonded set of # NVLinks"},
};

std::string busIdOf(const Machine& m, int pci) {
  if (pci < 0 || static_cast<size_t>(pci) >= m.pci.size() || !m.pci[pci].busId) return "-";
  return m.pci[pci].busId->str();
}

/// The NICs the matrix shows: those with a PCI device (a virtual NIC has no place in it).
std::vector<int> matrixNics(const Machine& m) {
  std::vector<int> out;
  for (size_t i = 0; i < m.nics.size(); ++i) {
    if (m.nics[i].pci >= 0) out.push_back(static_cast<int>(i));
  }
  return out;
}

/// "NIC3", or the NIC's name when it is not in the matrix.
std::string nicLabel(const Machine& m, int nic) {
  const std::vector<int> shown = matrixNics(m);
  auto it = std::find(shown.begin(), shown.end(), nic);
  if (it == shown.end()) return m.nics[nic].name;
  return "NIC" + std::to_string(it - shown.begin());
}

int numaOf(const Machine& m, int pci) {
  for (int i = pci; i >= 0 && static_cast<size_t>(i) < m.pci.size(); i = m.pci[i].parent) {
    if (m.pci[i].numaNode >= 0) return m.pci[i].numaNode;
  }
  return -1;
}

std::string pathCell(const Machine& m, int pciA, int pciB) {
  if (pciA < 0 || pciB < 0) return "-";
  return topology::pathName(topology::classifyPath(m, pciA, pciB));
}

const char* linkLayerName(LinkLayer l) {
  switch (l) {
    case LinkLayer::InfiniBand:
      return "InfiniBand";
    case LinkLayer::Ethernet:
      return "Ethernet";
    case LinkLayer::Unknown:
      break;
  }
  return nullptr;
}

std::string nicNames(const Machine& m, const GpuNicPair& pair) {
  std::string s;
  for (int n : pair.nics) {
    if (!s.empty()) s += " + ";
    s += nicLabel(m, n) + " " + m.nics[n].name;
  }
  return s;
}

void printMatrix(std::ostream& out, const Machine& m) {
  const std::vector<int> nics = matrixNics(m);
  out << "\t";
  for (size_t g = 0; g < m.gpus.size(); ++g) out << "GPU" << g << "\t";
  for (size_t n = 0; n < nics.size(); ++n) out << "NIC" << n << "\t";
  out << "CPU Affinity\tNUMA Affinity\n";
  auto row = [&](const std::string& label, int pci, int selfGpu, int selfNic) {
    out << label;
    for (size_t g = 0; g < m.gpus.size(); ++g) {
      out << "\t";
      if (selfGpu == static_cast<int>(g)) {
        out << " X ";
      } else if (selfGpu >= 0) {
        out << gpuGpuCell(m, selfGpu, static_cast<int>(g));
      } else {
        out << pathCell(m, pci, m.gpus[g].pci);
      }
    }
    for (size_t n = 0; n < nics.size(); ++n) {
      out << "\t"
          << (selfNic == static_cast<int>(n) ? " X " : pathCell(m, pci, m.nics[nics[n]].pci));
    }
    if (selfGpu >= 0) {
      const int numa = numaOf(m, pci);
      const topology::CpuNode* cpu = m.cpuByNuma(numa);
      out << "\t" << (cpu != nullptr ? cpumapToList(cpu->affinity) : "N/A") << "\t"
          << (numa >= 0 ? std::to_string(numa) : "N/A");
    }
    out << "\n";
  };
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    row("GPU" + std::to_string(g), m.gpus[g].pci, static_cast<int>(g), -1);
  }
  for (size_t n = 0; n < nics.size(); ++n) {
    row("NIC" + std::to_string(n), m.nics[nics[n]].pci, -1, static_cast<int>(n));
  }
}

}  // namespace

const Machine& TopoView::forNccl() const {
  return repaired() ? repair->machine : detected;
}

TopoView buildTopoView(Machine detected, topology::RepairPolicy policy) {
  TopoView view;
  view.detected = std::move(detected);
  view.pairs = topology::pairGpusWithNics(view.detected);
  if (topology::shouldRepair(policy, view.detected, &view.repairWhy)) {
    view.repair = topology::repairFlatTopology(view.detected, view.pairs);
  }
  return view;
}

std::string cpumapToList(const std::string& cpumap) {
  std::vector<uint32_t> words;  // least significant first
  for (std::string_view word : text::split(text::trim(cpumap), ',')) {
    word = text::trim(word);
    if (word.empty() || word.size() > 8) return "N/A";
    uint32_t value = 0;
    for (char c : word) {
      const int digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                        : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                        : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                    : -1;
      if (digit < 0) return "N/A";
      value = value << 4 | static_cast<uint32_t>(digit);
    }
    words.insert(words.begin(), value);
  }
  std::string out;
  int start = -1;
  const int bits = static_cast<int>(words.size()) * 32;
  for (int cpu = 0; cpu <= bits; ++cpu) {
    const bool set = cpu < bits && (words[cpu / 32] >> (cpu % 32) & 1u) != 0;
    if (set && start < 0) start = cpu;
    if (!set && start >= 0) {
      if (!out.empty()) out += ",";
      out += std::to_string(start);
      if (cpu - 1 > start) out += "-" + std::to_string(cpu - 1);
      start = -1;
    }
  }
  return out.empty() ? "N/A" : out;
}

std::string gpuGpuCell(const Machine& m, int gpuA, int gpuB) {
  const Gpu& a = m.gpus[gpuA];
  const Gpu& b = m.gpus[gpuB];
  const auto busB = b.pci >= 0 ? m.pci[b.pci].busId : std::nullopt;
  auto isGpu = [&](const topology::BusId& bus) {
    for (const Gpu& g : m.gpus) {
      if (g.pci >= 0 && m.pci[g.pci].busId && *m.pci[g.pci].busId == bus) return true;
    }
    return false;
  };
  // Links to peers that are not GPUs go to NVSwitches (or to a peer a VM hides): every GPU
  // behind the switches reaches every other through them, as nvidia-smi reports.
  int direct = 0, switchedA = 0, switchedB = 0;
  for (const auto& [peer, count] : a.nvlinks) {
    if (busB && peer == *busB) direct += count;
    if (!isGpu(peer)) switchedA += count;
  }
  for (const auto& [peer, count] : b.nvlinks) {
    if (!isGpu(peer)) switchedB += count;
  }
  if (direct > 0) return "NV" + std::to_string(direct);
  if (switchedA > 0 && switchedB > 0) return "NV" + std::to_string(std::min(switchedA, switchedB));
  return pathCell(m, a.pci, b.pci);
}

void printTopoText(std::ostream& out, const TopoView& view) {
  const Machine& m = view.forNccl();
  out << "source: " << m.source << "\n";
  if (view.repaired()) {
    out << "showing the machine after the flat-VM repair (" << view.repair->actions.size()
        << " change(s), listed below); --repair off shows it as detected\n";
  }
  out << "\n";
  printMatrix(out, m);

  out << "\nLegend:\n\n";
  for (const auto& [key, text] : kLegend) {
    out << "  " << key << std::string(5 - std::string(key).size(), ' ') << "= " << text << "\n";
  }
  const std::vector<int> nics = matrixNics(m);
  if (!nics.empty()) {
    out << "\nNIC Legend:\n\n";
    for (size_t n = 0; n < nics.size(); ++n) {
      out << "  NIC" << n << ": " << m.nics[nics[n]].name << "\n";
    }
  }

  out << "\nGPU-NIC pairs (path before -> after repair):\n";
  if (view.pairs.empty()) out << "  none (no GPU, or no NIC that can carry NCCL traffic)\n";
  for (const GpuNicPair& pair : view.pairs) {
    const PathType after =
        view.repaired() ? topology::pairPathOn(view.detected, pair, m) : pair.path;
    out << "  GPU" << pair.gpu << " " << busIdOf(view.detected, view.detected.gpus[pair.gpu].pci)
        << " -> " << nicNames(view.detected, pair) << ": " << topology::pathName(pair.path);
    if (view.repair) out << " -> " << topology::pathName(after);
    out << "\n";
    if (!pair.why.empty()) out << "      " << pair.why << "\n";
  }
  if (view.repair) {
    out << "\nRepair (" << view.repairWhy
        << "):" << (view.repair->actions.empty() ? " nothing to repair" : "") << "\n";
    for (const std::string& action : view.repair->actions) out << "  " << action << "\n";
  } else {
    out << "\nRepair: none (" << view.repairWhy << ")\n";
  }
  if (!view.detected.notes.empty()) {
    out << "\nNotes:\n";
    for (const std::string& note : view.detected.notes) out << "  " << note << "\n";
  }
}

nlohmann::ordered_json topoJson(const TopoView& view) {
  using json = nlohmann::ordered_json;
  const Machine& m = view.forNccl();
  auto orNull = [](int v) { return v < 0 ? json(nullptr) : json(v); };
  json gpus = json::array();
  for (const Gpu& g : m.gpus) {
    gpus.push_back({{"busid", busIdOf(m, g.pci)},
                    {"sm", g.sm > 0 ? json(g.sm) : json(nullptr)},
                    {"numa", orNull(numaOf(m, g.pci))}});
  }
  json nics = json::array();
  for (const Nic& n : m.nics) {
    const char* layer = linkLayerName(n.linkLayer);
    nics.push_back({{"name", n.name},
                    {"busid", n.pci >= 0 ? json(busIdOf(m, n.pci)) : json(nullptr)},
                    {"netdev", n.netdev.empty() ? json(nullptr) : json(n.netdev)},
                    {"rdma", n.rdma},
                    {"state", n.state.empty() ? json(nullptr) : json(n.state)},
                    {"link_layer", layer != nullptr ? json(layer) : json(nullptr)},
                    {"speed_mbps", n.speedMbps > 0 ? json(n.speedMbps) : json(nullptr)}});
  }
  json pairs = json::array();
  for (const GpuNicPair& pair : view.pairs) {
    json names = json::array();
    for (int n : pair.nics) names.push_back(view.detected.nics[n].name);
    const PathType after =
        view.repaired() ? topology::pairPathOn(view.detected, pair, m) : pair.path;
    pairs.push_back({{"gpu", busIdOf(view.detected, view.detected.gpus[pair.gpu].pci)},
                     {"nics", names},
                     {"path", topology::pathName(after)},
                     {"path_before_repair", topology::pathName(pair.path)},
                     {"why", pair.why}});
  }
  json out;
  out["source"] = m.source;
  out["gpus"] = std::move(gpus);
  out["nics"] = std::move(nics);
  out["pairs"] = std::move(pairs);
  out["repaired"] = view.repaired();
  out["repair_reason"] = view.repairWhy;
  out["hypervisor"] = topology::virtualizationEvidence(view.detected);
  out["repair_actions"] = view.repair ? json(view.repair->actions) : json::array();
  out["notes"] = view.detected.notes;
  return out;
}

}  // namespace pilot::cli
