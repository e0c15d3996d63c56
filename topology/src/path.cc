// PCIe path classification in `nvidia-smi topo -m` terms, on the machine model.
//
// A PCIe switch shows up as several bridges (one upstream port, one downstream port per link),
// so "at most one bridge" means "at most one switch": we count switches, not bridge objects.
// Root ports count as part of the host bridge, as in NCCL, whose sysfs walk never sees them.
#include <algorithm>
#include <vector>

#include "pilot/topology/model.h"

namespace pilot::topology {
namespace {

bool valid(const Machine& m, int i) {
  return i >= 0 && static_cast<size_t>(i) < m.pci.size();
}

/// i, its parent, its grandparent, ... (bounded, so a corrupt parent cycle cannot hang us).
std::vector<int> chainUp(const Machine& m, int i) {
  std::vector<int> chain;
  while (valid(m, i) && chain.size() <= m.pci.size()) {
    chain.push_back(i);
    i = m.pci[i].parent;
  }
  return chain;
}

/// Downstream and upstream ports alternate below a root port (NCCL keeps every second bridge
/// level for the same reason): a switch bridge with an even number of switch bridges above it
/// is an upstream port, i.e. the switch itself.
int switchOf(const Machine& m, int i) {
  int switchesAbove = 0;
  int p = m.pci[i].parent;
  for (size_t guard = 0; valid(m, p) && m.pci[p].kind == PciKind::Switch && guard < m.pci.size();
       ++guard) {
    ++switchesAbove;
    p = m.pci[p].parent;
  }
  return switchesAbove % 2 == 0 ? i : m.pci[i].parent;
}

}  // namespace

int numaNodeOf(const Machine& m, int pci) {
  for (int node : chainUp(m, pci)) {
    if (m.pci[node].numaNode >= 0) return m.pci[node].numaNode;
  }
  return -1;
}

const char* pathName(PathType p) {
  switch (p) {
    case PathType::PIX:
      return "PIX";
    case PathType::PXB:
      return "PXB";
    case PathType::PHB:
      return "PHB";
    case PathType::NODE:
      return "NODE";
    case PathType::SYS:
      return "SYS";
  }
  return "SYS";
}

PathType classifyPath(const Machine& m, int pciA, int pciB) {
  if (!valid(m, pciA) || !valid(m, pciB)) return PathType::SYS;
  if (pciA == pciB) return PathType::PIX;
  std::vector<int> upA = chainUp(m, pciA);
  std::vector<int> upB = chainUp(m, pciB);

  size_t meetA = upA.size(), meetB = upB.size();
  for (size_t i = 0; i < upA.size() && meetA == upA.size(); ++i) {
    auto found = std::find(upB.begin(), upB.end(), upA[i]);
    if (found != upB.end()) {
      meetA = i;
      meetB = static_cast<size_t>(found - upB.begin());
    }
  }
  if (meetA == upA.size()) {
    // Different host bridges. Unknown NUMA on both sides counts as the same node: that is what
    // NCCL does with numaid -1, and a machine that hides NUMA usually has one.
    return numaNodeOf(m, pciA) == numaNodeOf(m, pciB) ? PathType::NODE : PathType::SYS;
  }

  // The bridges the path crosses: everything strictly above the two ends up to where they meet.
  std::vector<int> crossed;
  for (size_t i = 1; i <= meetA; ++i) crossed.push_back(upA[i]);
  for (size_t i = 1; i < meetB; ++i) crossed.push_back(upB[i]);
  crossed.erase(
      std::remove_if(crossed.begin(), crossed.end(), [&](int n) { return n == pciA || n == pciB; }),
      crossed.end());

  std::vector<int> switches;
  for (int n : crossed) {
    PciKind kind = m.pci[n].kind;
    if (kind == PciKind::HostBridge || kind == PciKind::RootPort) return PathType::PHB;
    if (kind != PciKind::Switch) continue;
    int sw = switchOf(m, n);
    if (std::find(switches.begin(), switches.end(), sw) == switches.end()) switches.push_back(sw);
  }
  return switches.size() <= 1 ? PathType::PIX : PathType::PXB;
}

const CpuNode* Machine::cpuByNuma(int numaId) const {
  for (const CpuNode& cpu : cpus) {
    if (cpu.numaId == numaId) return &cpu;
  }
  return nullptr;
}

}  // namespace pilot::topology
