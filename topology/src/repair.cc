// Flat-VM repair. A hypervisor that passes GPUs and NICs through behind emulated root ports (or
// straight onto the root bus) hides the host's PCIe switches, so NCCL sees PHB and turns GPU
// Direct RDMA off. NCCL's maintainers recommend re-creating the switches with bus ids that exist
// nowhere (NVIDIA/nccl#1843), as Azure's files do with ffff:ff:NN.0.
#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>

#include "pilot/core/text.h"
#include "pilot/topology/affinity.h"
#include "pilot/topology/nccl_xml.h"

namespace pilot::topology {
namespace {

// A PCI device number has 5 bits; BusId::parse (and so our reader) holds to that.
constexpr int kMaxSyntheticDevice = 0x1f;

/// Directly under a host bridge or a root port (or the CPU, in a tree read from NCCL XML), with
/// no switch anywhere above: only then is a made-up switch an honest picture.
bool flat(const Machine& m, int pci) {
  const int parent = m.pci[pci].parent;
  if (parent >= 0 && m.pci[parent].kind != PciKind::HostBridge &&
      m.pci[parent].kind != PciKind::RootPort) {
    return false;
  }
  for (int i = parent; i >= 0; i = m.pci[i].parent) {
    if (m.pci[i].kind == PciKind::Switch) return false;
  }
  return true;
}

bool validPci(const Machine& m, int pci) {
  return pci >= 0 && pci < static_cast<int>(m.pci.size()) && m.pci[pci].busId;
}

bool qualifies(const Machine& m, const GpuNicPair& p) {
  if (p.path != PathType::PHB && p.path != PathType::NODE) return false;
  if (p.gpu < 0 || p.gpu >= static_cast<int>(m.gpus.size()) || p.nics.empty()) return false;
  const int gpuPci = m.gpus[p.gpu].pci;
  if (!validPci(m, gpuPci) || !flat(m, gpuPci)) return false;
  for (int n : p.nics) {
    if (n < 0 || n >= static_cast<int>(m.nics.size())) return false;
    const int nicPci = m.nics[n].pci;
    if (!validPci(m, nicPci) || !flat(m, nicPci)) return false;
    if (numaNodeOf(m, nicPci) != numaNodeOf(m, gpuPci)) return false;
  }
  return true;
}

int findRoot(std::vector<int>& up, int i) {
  while (up[i] != i) i = up[i] = up[up[i]];
  return i;
}

/// Parent-before-child order again after reparenting: depth-first from the roots, children in
/// their old order, each synthetic switch just before its first child.
void reorder(Machine& m, const std::vector<long>& key) {
  const int n = static_cast<int>(m.pci.size());
  std::vector<std::vector<int>> children(n);
  std::vector<int> roots;
  for (int i = 0; i < n; ++i)
    (m.pci[i].parent < 0 ? roots : children[m.pci[i].parent]).push_back(i);
  auto byKey = [&](int a, int b) { return key[a] < key[b]; };
  std::sort(roots.begin(), roots.end(), byKey);
  std::vector<int> order;
  std::vector<int> stack(roots.rbegin(), roots.rend());
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    order.push_back(i);
    std::sort(children[i].begin(), children[i].end(), byKey);
    stack.insert(stack.end(), children[i].rbegin(), children[i].rend());
  }
  std::vector<int> newIndex(n, -1);
  for (int k = 0; k < n; ++k) newIndex[order[k]] = k;
  std::vector<PciNode> pci;
  for (int old : order) {
    pci.push_back(m.pci[old]);
    if (pci.back().parent >= 0) pci.back().parent = newIndex[pci.back().parent];
  }
  m.pci = std::move(pci);
  for (Gpu& g : m.gpus) g.pci = g.pci >= 0 ? newIndex[g.pci] : -1;
  for (Nic& x : m.nics) x.pci = x.pci >= 0 ? newIndex[x.pci] : -1;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

/// The qualifying pairs, grouped so that pairs sharing a NIC device (any of its functions) end
/// up under one switch; groups in the order of their first pair.
std::vector<std::vector<const GpuNicPair*>> groupPairs(const Machine& m,
                                                       const std::vector<GpuNicPair>& pairs) {
  std::vector<const GpuNicPair*> chosen;
  for (const GpuNicPair& p : pairs) {
    if (qualifies(m, p)) chosen.push_back(&p);
  }
  std::vector<int> up(chosen.size());
  std::iota(up.begin(), up.end(), 0);
  std::map<BusId, int> ownerOfDevice;
  for (int c = 0; c < static_cast<int>(chosen.size()); ++c) {
    for (int n : chosen[c]->nics) {
      auto [it, fresh] = ownerOfDevice.emplace(ncclNicBusId(*m.pci[m.nics[n].pci].busId), c);
      if (!fresh) up[findRoot(up, c)] = findRoot(up, it->second);
    }
  }
  std::map<int, std::vector<int>> byRoot;
  for (int c = 0; c < static_cast<int>(chosen.size()); ++c) byRoot[findRoot(up, c)].push_back(c);
  std::vector<std::vector<int>> ordered;
  for (auto& [root, members] : byRoot) ordered.push_back(members);
  std::sort(ordered.begin(), ordered.end());  // by first member
  std::vector<std::vector<const GpuNicPair*>> groups;
  for (const std::vector<int>& members : ordered) {
    groups.emplace_back();
    for (int c : members) groups.back().push_back(chosen[c]);
  }
  return groups;
}

/// Every function of each NIC device, whether or not it has a Nic entry of its own.
std::vector<int> nicFunctions(const Machine& m, const std::set<int>& nics) {
  std::vector<int> out;
  for (int n : nics) {
    const int pci = m.nics[n].pci;
    const BusId dev = ncclNicBusId(*m.pci[pci].busId);
    for (int i = 0; i < static_cast<int>(m.pci.size()); ++i) {
      const PciNode& f = m.pci[i];
      if (f.busId && ncclNicBusId(*f.busId) == dev && f.parent == m.pci[pci].parent &&
          f.kind == PciKind::Endpoint && std::find(out.begin(), out.end(), i) == out.end()) {
        out.push_back(i);
      }
    }
  }
  return out;
}

/// The next ffff:ff:NN.0 no node uses; nullopt when all are taken.
std::optional<BusId> nextSyntheticBus(int& nn, std::set<BusId>& used) {
  BusId bus{0xffff, 0xff, 0, 0};
  while (++nn <= kMaxSyntheticDevice) {
    bus.device = static_cast<uint8_t>(nn);
    if (used.insert(bus).second) return bus;
  }
  return std::nullopt;
}

/// Appends a synthetic switch for one group and moves its GPUs and NIC functions under it.
/// `key` orders nodes for the final reordering: the switch goes just before its first child.
std::string insertSwitch(Machine& m, const std::vector<const GpuNicPair*>& group, BusId bus,
                         std::vector<long>& key) {
  std::vector<int> gpuNodes;
  std::set<int> nicIdx;
  std::set<PathType> was;
  for (const GpuNicPair* p : group) {
    gpuNodes.push_back(m.gpus[p->gpu].pci);
    was.insert(p->path);
    nicIdx.insert(p->nics.begin(), p->nics.end());
  }
  std::vector<int> moved = gpuNodes;
  for (int f : nicFunctions(m, nicIdx)) moved.push_back(f);

  PciNode sw;
  sw.kind = PciKind::Switch;
  sw.synthetic = true;
  sw.busId = bus;
  sw.classCode = 0x060400;
  // GPU and NIC come from different root ports: the switch hangs where their chains meet.
  const int gpuParent = m.pci[gpuNodes.front()].parent;
  sw.parent = gpuParent >= 0 && m.pci[gpuParent].kind == PciKind::RootPort ? m.pci[gpuParent].parent
                                                                           : gpuParent;
  sw.numaNode = numaNodeOf(m, gpuNodes.front());
  int gen = 0;
  long firstChild = static_cast<long>(key.size()) * 2;
  for (int i : moved) {
    gen = std::max(gen, parseLinkSpeedGeneration(m.pci[i].linkSpeed));
    sw.linkWidth = std::max(sw.linkWidth, m.pci[i].linkWidth);
    firstChild = std::min(firstChild, key[i]);
  }
  sw.linkSpeed = ncclLinkSpeed(gen);
  const int swIndex = static_cast<int>(m.pci.size());
  m.pci.push_back(sw);
  key.push_back(firstChild - 1);
  for (int i : moved) {
    m.pci[i].parent = swIndex;
    if (m.pci[i].numaNode < 0) m.pci[i].numaNode = sw.numaNode;
  }

  std::vector<std::string> gpuText, nicText, wasText;
  for (int g : gpuNodes) gpuText.push_back(m.pci[g].busId->str());
  for (int n : nicIdx) {
    const std::string b = m.pci[m.nics[n].pci].busId->str();
    nicText.push_back(m.nics[n].name.empty() ? b : m.nics[n].name + " (" + b + ")");
  }
  for (PathType p : was) wasText.push_back(pathName(p));
  return bus.str() + " groups " + (gpuText.size() > 1 ? "GPUs " : "GPU ") + join(gpuText) +
         " with " + join(nicText) + ": was " + join(wasText) + ", now PIX";
}

RepairResult repairImpl(const Machine& machine, const std::vector<GpuNicPair>& pairs) {
  RepairResult r{machine, false, {}};
  Machine& m = r.machine;
  for (size_t i = 0; i < m.pci.size(); ++i) {
    if (m.pci[i].parent >= static_cast<int>(i) || m.pci[i].parent < -1) {
      r.actions.push_back("not repaired: the PCI tree is not in parent-before-child order");
      return r;
    }
  }
  std::set<BusId> used;
  for (const PciNode& p : m.pci) {
    if (p.busId) used.insert(*p.busId);
  }
  std::vector<long> key(m.pci.size());
  for (size_t i = 0; i < key.size(); ++i) key[i] = 2 * static_cast<long>(i) + 1;
  int nn = 0;
  for (const std::vector<const GpuNicPair*>& group : groupPairs(m, pairs)) {
    std::optional<BusId> bus = nextSyntheticBus(nn, used);
    if (!bus) {
      r.actions.push_back("not repaired further: no free synthetic bus id ffff:ff:NN.0 left");
      break;
    }
    r.actions.push_back(insertSwitch(m, group, *bus, key));
  }
  if (m.pci.size() != machine.pci.size()) {
    reorder(m, key);
    r.repaired = true;
  }
  return r;
}

}  // namespace

RepairResult repairFlatTopology(const Machine& machine, const std::vector<GpuNicPair>& pairs) {
  // Only allocation can throw here; the plugin must never see an exception.
  try {
    return repairImpl(machine, pairs);
  } catch (...) {
    return RepairResult{machine, false, {"not repaired: out of memory"}};
  }
}

std::optional<RepairPolicy> parseRepairPolicy(std::string_view text) {
  std::string v = text::toLower(text::trim(text));
  if (v == "auto") return RepairPolicy::Auto;
  if (v == "on" || v == "1" || v == "true" || v == "yes") return RepairPolicy::On;
  if (v == "off" || v == "0" || v == "false" || v == "no") return RepairPolicy::Off;
  return std::nullopt;
}

std::string virtualizationEvidence(const Machine& machine) {
  if (!machine.hypervisor.empty()) return machine.hypervisor;
  for (const PciNode& node : machine.pci) {
    if (node.kind == PciKind::Endpoint || node.synthetic) continue;
    switch (node.vendor) {
      case 0x1b36:
        return "emulated QEMU PCIe bridge " + (node.busId ? node.busId->str() : std::string());
      case 0x1414:
        return "emulated Hyper-V bridge " + (node.busId ? node.busId->str() : std::string());
      case 0x15ad:
        return "emulated VMware bridge " + (node.busId ? node.busId->str() : std::string());
      case 0x5853:
        return "emulated Xen bridge " + (node.busId ? node.busId->str() : std::string());
      default:
        break;
    }
  }
  return "";
}

bool shouldRepair(RepairPolicy policy, const Machine& machine, std::string* why) {
  std::string evidence = virtualizationEvidence(machine);
  bool run = policy == RepairPolicy::On || (policy == RepairPolicy::Auto && !evidence.empty());
  if (why != nullptr) {
    if (policy == RepairPolicy::Off)
      *why = "repair off";
    else if (policy == RepairPolicy::On)
      *why = "repair forced on";
    else if (run)
      *why = "virtual machine (" + evidence + ")";
    else
      *why = "bare metal as far as detection can tell: flat paths are real, no repair";
  }
  return run;
}

}  // namespace pilot::topology
