// NCCL topology XML writer. NCCL's parser is not a real XML parser (research/topology.md §1.1):
// no prolog, no tabs, one tag per line, double-quoted values, at most 253 characters each. We
// write only <system>/<cpu>/<pci>; NCCL detects <gpu>/<nic>/<net> itself.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "detect_internal.h"
#include "pilot/core/text.h"
#include "pilot/topology/nccl_xml.h"

namespace pilot::topology {
namespace {

// NCCL's kvDictPciGen, in its order: the first entry that is a prefix of the value wins.
struct SpeedEntry {
  const char* text;
  int generation;
};
constexpr SpeedEntry kNcclSpeeds[] = {
    {"2.5 GT/s", 1},       {"5 GT/s", 2},         {"8 GT/s", 3},         {"16 GT/s", 4},
    {"32 GT/s", 5},        {"2.5 GT/s PCIe", 1},  {"5.0 GT/s PCIe", 2},  {"8.0 GT/s PCIe", 3},
    {"16.0 GT/s PCIe", 4}, {"32.0 GT/s PCIe", 5}, {"64.0 GT/s PCIe", 6},
};

// Unknown link facts: NCCL itself falls back to Gen3 x16 for an unreadable speed, which
// undersells every GPU server of the last five years; the parent's speed (the link the device
// hangs off) is the better guess, else Gen4. Width 0 already means 16 to NCCL; we say so.
constexpr const char* kDefaultSpeed = "16.0 GT/s PCIe";
constexpr int kDefaultWidth = 16;
// NCCL's MAX_STR_LEN is 255 with the terminator, and its reader fails once a value reaches 254.
constexpr size_t kMaxValueLength = 253;

enum class Role { Bridge, Gpu, Nic };

struct OutNode {
  OutNode(int source, BusId b, Role r) : src(source), bus(b), role(r) {}
  int src = -1;  // index into Machine::pci
  BusId bus;
  Role role = Role::Bridge;
  int parent = -1;  // index into the OutNode vector; -1 = under the cpu `numa`
  int numa = -1;
  std::vector<int> children;
};

std::string hex(unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, value);
  return buf;
}

/// Whether NCCL reads the value: at most 253 characters once escaped. A longer one (a vendor of
/// many '<' read from a file: tests/fuzz/nccl_xml_fuzz) would make it refuse the whole file.
bool ncclReads(const std::string& value) {
  return text::escapeXml(value).size() <= kMaxValueLength;
}

/// A value NCCL cannot read is left out (NCCL fills a missing CPU fact from the machine).
void attr(std::string& line, const char* key, const std::string& value) {
  if (!ncclReads(value)) return;
  line += ' ';
  line += key;
  line += "=\"";
  line += text::escapeXml(value);
  line += '"';
}

bool validTree(const Machine& m) {
  for (size_t i = 0; i < m.pci.size(); ++i) {
    const int p = m.pci[i].parent;
    if (p >= static_cast<int>(i) || p < -1) return false;
  }
  return true;
}

int effectiveNuma(const Machine& m, int idx) {
  for (int i = idx; i >= 0; i = m.pci[i].parent) {
    if (m.pci[i].numaNode >= 0) return m.pci[i].numaNode;
  }
  return -1;
}

bool reachesHostBridge(const Machine& m, int idx) {
  for (int i = m.pci[idx].parent; i >= 0; i = m.pci[i].parent) {
    if (m.pci[i].kind == PciKind::HostBridge) return true;
  }
  return false;
}

/// Bridges NCCL would keep above endpoint `idx`. Its sysfs walk keeps every second bus-id level
/// (device, skip, keep, ...) up to the host bridge: the switch upstream ports; root ports and
/// downstream ports fall out. Synthetic switches exist only in our files, so they are always
/// kept and do not count as a level. A tree with no host bridge is already in NCCL's shape.
void markKeptBridges(const Machine& m, int idx, std::vector<bool>& keep) {
  const bool fullTree = reachesHostBridge(m, idx);
  int level = 0;
  for (int i = m.pci[idx].parent; i >= 0; i = m.pci[i].parent) {
    const PciNode& n = m.pci[i];
    if (n.kind == PciKind::HostBridge) break;
    if (n.synthetic) {
      keep[i] = true;
      continue;
    }
    ++level;
    if (n.kind == PciKind::RootPort || !n.busId) continue;
    if (!fullTree || level % 2 == 0) keep[i] = true;
  }
}

std::string linkSpeedFor(const Machine& m, int idx) {
  for (int i = idx; i >= 0; i = m.pci[i].parent) {
    const int gen = parseLinkSpeedGeneration(m.pci[i].linkSpeed);
    if (gen > 0) return ncclLinkSpeed(gen);
  }
  return kDefaultSpeed;
}

uint32_t classFor(const Machine& m, const OutNode& o) {
  if (o.role == Role::Bridge) return 0x060400;  // NCCL needs exactly this for a switch
  const PciNode& n = m.pci[o.src];
  // NCCL takes a <pci> for a GPU or NIC by its class prefix (0x03, 0x02) and ignores it as one
  // otherwise, so a device the model calls a GPU or NIC keeps its class only when that says so
  // (a NIC of class 0x04 read from a file did not survive writing: tests/fuzz/nccl_xml_fuzz).
  if (n.classCode >> 16 == (o.role == Role::Gpu ? 0x03u : 0x02u)) return n.classCode;
  if (o.role == Role::Gpu) return 0x030200;
  for (const Nic& nic : m.nics) {
    if (nic.pci == o.src && nic.linkLayer == LinkLayer::InfiniBand) return 0x020700;
  }
  return 0x020000;
}

std::string pciLine(const Machine& m, const OutNode& o) {
  const PciNode& n = m.pci[o.src];
  std::string line = "<pci";
  attr(line, "busid", o.bus.str());
  attr(line, "class", hex(classFor(m, o), 6));
  const std::pair<const char*, uint16_t> ids[] = {{"vendor", n.vendor},
                                                  {"device", n.device},
                                                  {"subsystem_vendor", n.subsystemVendor},
                                                  {"subsystem_device", n.subsystemDevice}};
  for (const auto& [key, value] : ids) {
    if (value != 0) attr(line, key, hex(value, 4));
  }
  attr(line, "link_speed", linkSpeedFor(m, o.src));
  attr(line, "link_width", std::to_string(n.linkWidth > 0 ? n.linkWidth : kDefaultWidth));
  return line;
}

/// NCCL's arch spellings; uname's are accepted too.
std::string ncclArch(const std::string& arch) {
  if (arch == "aarch64") return "arm64";
  if (arch == "ppc64le") return "ppc64";
  return arch;
}

bool isCpumap(const std::string& s) {
  if (s.empty() || s.size() > kMaxValueLength) return false;
  return s.find_first_not_of("0123456789abcdef,") == std::string::npos;
}

/// NCCL requires arch (and vendor/family/model on x86) on every <cpu>, also those with no local
/// GPU, which it does not fill. They are machine-wide facts, so a NUMA node the model knows
/// nothing about borrows them from another; numaid and affinity stay per node.
std::string cpuLine(const Machine& m, int numa) {
  const CpuNode* own = m.cpuByNuma(numa);
  CpuNode facts = own ? *own : CpuNode{};
  if (!ncclReads(facts.arch)) facts.arch.clear();  // unknown, so borrowed as such
  if (!ncclReads(facts.vendor)) facts.vendor.clear();
  for (const CpuNode& c : m.cpus) {
    if (facts.arch.empty() && ncclReads(c.arch)) facts.arch = c.arch;
    if (facts.vendor.empty() && ncclReads(c.vendor)) facts.vendor = c.vendor;
    if (facts.familyId < 0) facts.familyId = c.familyId;
    if (facts.modelId < 0) facts.modelId = c.modelId;
  }
  const std::string arch = ncclArch(facts.arch.empty() ? detail::compiledArch() : facts.arch);
  std::string line = "<cpu";
  attr(line, "numaid", std::to_string(numa));
  // An over-long mask (over ~900 CPUs) would make NCCL reject the whole file; NCCL reads the
  // mask from sysfs itself when it is missing.
  if (own && isCpumap(own->affinity)) attr(line, "affinity", own->affinity);
  if (!arch.empty()) attr(line, "arch", arch);
  if (arch == "x86_64") {
    if (!facts.vendor.empty()) attr(line, "vendor", facts.vendor);
    if (facts.familyId >= 0) attr(line, "familyid", std::to_string(facts.familyId));
    if (facts.modelId >= 0) attr(line, "modelid", std::to_string(facts.modelId));
  }
  return line;
}

struct Plan {
  std::vector<OutNode> nodes;
  std::map<int, std::vector<int>> cpus;  // numa -> top-level node indices
};

bool byBus(const std::vector<OutNode>& nodes, int a, int b) {
  return nodes[a].bus < nodes[b].bus;
}

Expected<Plan> plan(const Machine& m) {
  // Endpoints: GPUs, and NICs at their function-0 bus id (ports merged).
  std::map<BusId, std::pair<int, Role>> endpoints;
  auto addEndpoint = [&](int idx, Role role) -> Status {
    if (idx < 0 || idx >= static_cast<int>(m.pci.size()) || !m.pci[idx].busId) {
      return Error{"a GPU or NIC refers to a PCI device without a bus id"};
    }
    const BusId bus = role == Role::Nic ? ncclNicBusId(*m.pci[idx].busId) : *m.pci[idx].busId;
    if (bus.domain > 0xffff) return Error{"PCI domain of " + bus.str() + " does not fit NCCL"};
    auto it = endpoints.find(bus);
    // Two functions of one NIC: describe the device by its lowest function.
    if (it == endpoints.end() || *m.pci[idx].busId < *m.pci[it->second.first].busId) {
      endpoints[bus] = {idx, it == endpoints.end() ? role : it->second.second};
    }
    return Status::success();
  };
  for (const Gpu& g : m.gpus) {
    if (Status s = addEndpoint(g.pci, Role::Gpu); !s) return Error{s.error()};
  }
  for (const Nic& n : m.nics) {
    if (n.pci < 0) continue;  // virtual NIC: NCCL places it from the plugin's properties
    if (Status s = addEndpoint(n.pci, Role::Nic); !s) return Error{s.error()};
  }

  std::vector<bool> keep(m.pci.size(), false);
  for (const auto& [bus, ep] : endpoints) markKeptBridges(m, ep.first, keep);
  // A GPU or NIC is written as itself even when another device hangs below it.
  for (const auto& [bus, ep] : endpoints) keep[ep.first] = false;

  Plan p;
  std::vector<int> outOf(m.pci.size(), -1);
  for (size_t i = 0; i < m.pci.size(); ++i) {
    if (!keep[i] || !m.pci[i].busId) continue;
    outOf[i] = static_cast<int>(p.nodes.size());
    p.nodes.emplace_back(static_cast<int>(i), *m.pci[i].busId, Role::Bridge);
  }
  for (const auto& [bus, ep] : endpoints) {
    p.nodes.emplace_back(ep.first, bus, ep.second);
  }
  std::set<BusId> seen;
  for (int o = 0; o < static_cast<int>(p.nodes.size()); ++o) {
    OutNode& n = p.nodes[o];
    if (!seen.insert(n.bus).second) {
      return Error{"bus id " + n.bus.str() + " would appear twice in the NCCL XML"};
    }
    for (int i = m.pci[n.src].parent; i >= 0 && n.parent < 0; i = m.pci[i].parent) {
      if (outOf[i] >= 0 && outOf[i] != o) n.parent = outOf[i];
    }
    if (n.parent >= 0) {
      p.nodes[n.parent].children.push_back(o);
    } else {
      n.numa = effectiveNuma(m, n.src);
      p.cpus[n.numa].push_back(o);
    }
  }
  for (OutNode& n : p.nodes) {
    std::sort(n.children.begin(), n.children.end(),
              [&](int a, int b) { return byBus(p.nodes, a, b); });
  }
  for (auto& [numa, top] : p.cpus) {
    std::sort(top.begin(), top.end(), [&](int a, int b) { return byBus(p.nodes, a, b); });
  }
  return p;
}

void emit(const Machine& m, const Plan& p, int o, int indent, std::string& out) {
  const OutNode& n = p.nodes[o];
  out.append(indent, ' ');
  out += pciLine(m, n);
  if (n.children.empty()) {
    out += "/>\n";
    return;
  }
  out += ">\n";
  for (int c : n.children) emit(m, p, c, indent + 2, out);
  out.append(indent, ' ');
  out += "</pci>\n";
}

}  // namespace

const char* ncclLinkSpeed(int generation) {
  static const char* const kNames[] = {"2.5 GT/s PCIe",  "5.0 GT/s PCIe",  "8.0 GT/s PCIe",
                                       "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe"};
  if (generation < 1 || generation > 6) return "";
  return kNames[generation - 1];
}

int parseLinkSpeedGeneration(const std::string& linkSpeed) {
  for (const SpeedEntry& e : kNcclSpeeds) {
    if (linkSpeed.compare(0, std::char_traits<char>::length(e.text), e.text) == 0) {
      return e.generation;
    }
  }
  return 0;
}

BusId ncclNicBusId(const BusId& nic) {
  BusId b = nic;
  b.function = 0;
  return b;
}

namespace {

Expected<std::string> writeImpl(const Machine& machine) {
  if (!validTree(machine)) return Error{"PCI tree is not in parent-before-child order"};
  Expected<Plan> planned = plan(machine);
  if (!planned) return Error{planned.error()};
  const Plan& p = *planned;

  // Cpus in numaid order, the unknown node (-1) last.
  std::vector<int> numas;
  for (const auto& [numa, top] : p.cpus) numas.push_back(numa);
  std::stable_partition(numas.begin(), numas.end(), [](int n) { return n >= 0; });

  const size_t count = 1 + numas.size() + p.nodes.size();
  if (count > static_cast<size_t>(kMaxXmlNodes)) {
    return Error{"topology needs " + std::to_string(count) + " XML nodes, NCCL accepts at most " +
                 std::to_string(kNcclMaxXmlNodes) +
                 " per rank including the <gpu>/<nic>/<net> nodes it adds; refusing more than " +
                 std::to_string(kMaxXmlNodes)};
  }

  std::string out = "<system version=\"1\">\n";
  for (int numa : numas) {
    out += "  " + cpuLine(machine, numa) + ">\n";
    for (int o : p.cpus.at(numa)) emit(machine, p, o, 4, out);
    out += "  </cpu>\n";
  }
  out += "</system>\n";
  return out;
}

}  // namespace

Expected<std::string> writeNcclXml(const Machine& machine) {
  // Only allocation can throw here; the plugin must never see an exception.
  try {
    return writeImpl(machine);
  } catch (...) {
    return Error{"out of memory while writing the NCCL XML"};
  }
}

}  // namespace pilot::topology
