// PCI paths between the devices NCCL moves data between, from the model topology/ detected.
#include <algorithm>
#include <map>

#include "context.h"

namespace pilot::doctor::detail {
namespace {

using topology::Machine;
using topology::PciKind;

bool validIndex(const Machine& m, int pci) {
  return pci >= 0 && static_cast<size_t>(pci) < m.pci.size();
}

/// pci's ancestors, nearest first (the model orders parents before children, so this ends).
std::vector<int> ancestors(const Machine& m, int pci) {
  std::vector<int> out;
  if (!validIndex(m, pci)) return out;
  for (int p = m.pci[pci].parent; validIndex(m, p) && out.size() < m.pci.size();
       p = m.pci[p].parent) {
    out.push_back(p);
  }
  return out;
}

bool isBridge(const Machine& m, int pci) {
  PciKind k = m.pci[pci].kind;
  return k == PciKind::RootPort || k == PciKind::Switch;
}

}  // namespace

BridgeRole bridgeRole(const Machine& m, int pci) {
  if (!validIndex(m, pci)) return BridgeRole::None;
  if (m.pci[pci].kind == PciKind::RootPort) return BridgeRole::RootPort;
  if (m.pci[pci].kind != PciKind::Switch) return BridgeRole::None;
  // Count switch ports between this one and its root port: upstream, downstream, upstream, ...
  int depth = 0;
  for (int p = m.pci[pci].parent; validIndex(m, p) && m.pci[p].kind == PciKind::Switch;
       p = m.pci[p].parent) {
    if (++depth > static_cast<int>(m.pci.size())) break;
  }
  return depth % 2 == 0 ? BridgeRole::SwitchUpstream : BridgeRole::SwitchDownstream;
}

const char* bridgeRoleName(BridgeRole role) {
  switch (role) {
    case BridgeRole::RootPort:
      return "root port";
    case BridgeRole::SwitchUpstream:
      return "switch upstream port";
    case BridgeRole::SwitchDownstream:
      return "switch downstream port";
    case BridgeRole::None:
      break;
  }
  return "device";
}

std::vector<int> bridgesBetween(const Machine& m, int pciA, int pciB) {
  std::vector<int> out;
  if (!validIndex(m, pciA) || !validIndex(m, pciB) || pciA == pciB) return out;
  const std::vector<int> upA = ancestors(m, pciA), upB = ancestors(m, pciB);
  int meet = -1;
  for (int a : upA) {
    if (std::find(upB.begin(), upB.end(), a) != upB.end()) {
      meet = a;
      break;
    }
  }
  // Under different host bridges the traffic goes up through the CPUs whatever ACS says: no
  // bridge decides it. Meeting at a host bridge means the root complex routes it: every bridge
  // on both sides is crossed. Meeting at a switch port: only the ports below it.
  if (meet < 0) return out;
  for (const std::vector<int>* side : {&upA, &upB}) {
    for (int p : *side) {
      if (p == meet) break;
      if (isBridge(m, p) && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
  }
  return out;
}

std::vector<PathBridge> bridgesOnNcclPaths(const Context& ctx) {
  std::vector<PathBridge> out;
  if (!ctx.machine) return out;
  const Machine& m = *ctx.machine;
  std::map<int, size_t> byPci;
  auto addPath = [&](int pciA, int pciB, const std::string& what, int nic) {
    for (int bridge : bridgesBetween(m, pciA, pciB)) {
      auto [it, fresh] = byPci.emplace(bridge, out.size());
      if (fresh) out.push_back(PathBridge{bridge, {}, {}});
      out[it->second].paths.push_back(what);
      if (nic >= 0) out[it->second].nics.push_back(nic);
    }
  };
  for (const topology::GpuNicPair& pair : ctx.pairs) {
    for (int nic : pair.nics) {
      if (m.nics[nic].pci < 0) continue;
      addPath(m.gpus[pair.gpu].pci, m.nics[nic].pci,
              ctx.gpuName(pair.gpu) + " <-> " + ctx.nicName(nic), nic);
    }
  }
  for (size_t a = 0; a < m.gpus.size(); ++a) {
    for (size_t b = a + 1; b < m.gpus.size(); ++b) {
      topology::PathType path = topology::classifyPath(m, m.gpus[a].pci, m.gpus[b].pci);
      if (path != topology::PathType::PIX && path != topology::PathType::PXB) continue;
      addPath(m.gpus[a].pci, m.gpus[b].pci,
              ctx.gpuName(static_cast<int>(a)) + " <-> " + ctx.gpuName(static_cast<int>(b)), -1);
    }
  }
  std::sort(out.begin(), out.end(), [&](const PathBridge& x, const PathBridge& y) {
    return *m.pci[x.pci].busId < *m.pci[y.pci].busId;
  });
  return out;
}

}  // namespace pilot::doctor::detail
