// GPU <-> NIC pairing by PCIe distance. Deterministic: only the tree, bus ids and names decide,
// never the order detection found things in, so every rank of a job computes the same pairs.
#include <algorithm>
#include <cstdio>
#include <map>

#include "pilot/core/text.h"
#include "pilot/topology/affinity.h"

namespace pilot::topology {
namespace {

const BusId& busOf(const Machine& m, int pci) {
  static const BusId kNone{};
  const bool known = pci >= 0 && pci < static_cast<int>(m.pci.size()) && m.pci[pci].busId;
  return known ? *m.pci[pci].busId : kNone;
}

std::string nicLabel(const Machine& m, int nic) {
  const Nic& n = m.nics[nic];
  if (n.pci < 0) return n.name;
  const std::string bus = busOf(m, n.pci).str();
  return n.name.empty() ? bus : n.name + " (" + bus + ")";
}

std::string nicName(const Machine& m, int nic) {
  const Nic& n = m.nics[nic];
  return n.name.empty() && n.pci >= 0 ? busOf(m, n.pci).str() : n.name;
}

std::vector<int> chain(const Machine& m, int pci) {
  std::vector<int> out;
  for (int i = pci; i >= 0; i = m.pci[i].parent) out.push_back(i);
  return out;
}

int commonAncestor(const Machine& m, int a, int b) {
  const std::vector<int> ca = chain(m, a);
  for (int i : chain(m, b)) {
    if (std::find(ca.begin(), ca.end(), i) != ca.end()) return i;
  }
  return -1;
}

/// "pci0000:00": Linux names a root complex after its root bus, the bus its children sit on.
std::string hostBridgeName(const Machine& m, int hb) {
  for (size_t i = 0; i < m.pci.size(); ++i) {
    if (m.pci[i].parent == hb && m.pci[i].busId) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "pci%04x:%02x", m.pci[i].busId->domain, m.pci[i].busId->bus);
      return buf;
    }
  }
  return "host bridge";
}

int topOf(const Machine& m, int pci) {
  return chain(m, pci).back();
}

bool hasSwitchAbove(const Machine& m, int pci) {
  for (int i = m.pci[pci].parent; i >= 0; i = m.pci[i].parent) {
    if (m.pci[i].kind == PciKind::Switch) return true;
  }
  return false;
}

std::string describeNode(const Machine& m, int i) {
  const PciNode& n = m.pci[i];
  const std::string bus = n.busId ? n.busId->str() : "";
  switch (n.kind) {
    case PciKind::HostBridge:
      return "host bridge " + hostBridgeName(m, i);
    case PciKind::RootPort:
      return "root port " + bus;
    case PciKind::Switch:
      return (n.synthetic ? "synthetic PCIe switch " : "PCIe switch ") + bus;
    case PciKind::Endpoint:
      return "device " + bus;
  }
  return bus;
}

std::string reason(const Machine& m, int gpuPci, int nic, PathType path) {
  const int nicPci = m.nics[nic].pci;
  const std::string name = nicName(m, nic);
  const int common = commonAncestor(m, gpuPci, nicPci);
  const std::string head = std::string(pathName(path)) + ": ";
  switch (path) {
    case PathType::PIX:
      return head + "same " + (common >= 0 ? describeNode(m, common) : "PCIe bridge") + " as " +
             name;
    case PathType::PXB:
      return head + (common >= 0 ? describeNode(m, common) : "PCIe switches") + " above " + name +
             ", through several bridges";
    case PathType::PHB: {
      const bool flat = !hasSwitchAbove(m, gpuPci) && !hasSwitchAbove(m, nicPci);
      const std::string where =
          common >= 0 ? "under " + describeNode(m, common)
                      : "attached to the CPU of NUMA node " + std::to_string(numaNodeOf(m, gpuPci));
      return head + (flat ? "no PCIe switch, " : "") + "both " + where + " with " + name;
    }
    case PathType::NODE:
      return head + "different host bridges on NUMA node " + std::to_string(numaNodeOf(m, gpuPci)) +
             ": GPU under " + describeNode(m, topOf(m, gpuPci)) + ", " + name + " under " +
             describeNode(m, topOf(m, nicPci));
    case PathType::SYS:
      return head + "no NIC on NUMA node " + std::to_string(numaNodeOf(m, gpuPci)) + ", " + name +
             " is on node " + std::to_string(numaNodeOf(m, nicPci));
  }
  return head;
}

/// "0-3" or "0,2,5-6".
std::string indexRanges(const std::vector<int>& sorted) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(sorted[i]);
    if (j > i) out += "-" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return out;
}

std::string nicList(const Machine& m, const std::vector<int>& nics) {
  std::string out;
  for (int n : nics) out += (out.empty() ? "" : ", ") + nicName(m, n);
  return out;
}

std::string groupNote(const Machine& m, const std::vector<int>& gpus,
                      const std::vector<int>& nics) {
  const std::string list = nicList(m, nics);
  if (gpus.size() == 1) return nics.size() > 1 ? "; rails " + list : "";
  const std::string who = "; GPUs " + indexRanges(gpus);
  if (nics.size() >= gpus.size()) return who + " split " + list + " in bus order";
  return who + " share " + list + (nics.size() > 1 ? " contiguously in bus order" : "");
}

std::vector<int> eligibleImpl(const Machine& m) {
  std::vector<int> rdma, other;
  for (int i = 0; i < static_cast<int>(m.nics.size()); ++i) {
    const Nic& n = m.nics[i];
    if (n.pci < 0 || n.pci >= static_cast<int>(m.pci.size()) || !m.pci[n.pci].busId) continue;
    // A port that is down carries nothing; NCCL's IB transport skips it too.
    if (text::equalsIgnoreCase(n.state, "DOWN")) continue;
    (n.rdma ? rdma : other).push_back(i);
  }
  std::vector<int> out = rdma.empty() ? other : rdma;
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    const BusId &ba = busOf(m, m.nics[a].pci), &bb = busOf(m, m.nics[b].pci);
    if (ba != bb) return ba < bb;
    return m.nics[a].name < m.nics[b].name;
  });
  return out;
}

std::vector<GpuNicPair> pairImpl(const Machine& m) {
  // Walking up a tree that is not parent-before-child might never end.
  for (size_t i = 0; i < m.pci.size(); ++i) {
    if (m.pci[i].parent < -1 || m.pci[i].parent >= static_cast<int>(i)) return {};
  }
  const std::vector<int> nics = eligibleImpl(m);
  if (nics.empty()) return {};

  // Best path type per GPU and the NICs at it; GPUs with the same best set form one group.
  std::map<std::vector<int>, std::vector<int>> groups;
  std::vector<PathType> best(m.gpus.size(), PathType::SYS);
  for (int g = 0; g < static_cast<int>(m.gpus.size()); ++g) {
    const int gpuPci = m.gpus[g].pci;
    if (gpuPci < 0 || gpuPci >= static_cast<int>(m.pci.size())) continue;
    std::vector<int> set;
    for (int n : nics) {
      const PathType p = classifyPath(m, gpuPci, m.nics[n].pci);
      if (set.empty() || p < best[g]) {
        best[g] = p;
        set.clear();
      }
      if (p == best[g]) set.push_back(n);
    }
    groups[set].push_back(g);
  }

  std::vector<GpuNicPair> pairs;
  for (auto& [set, gpus] : groups) {
    std::stable_sort(gpus.begin(), gpus.end(), [&](int a, int b) {
      return busOf(m, m.gpus[a].pci) < busOf(m, m.gpus[b].pci);
    });
    std::vector<int> byIndex = gpus;
    std::sort(byIndex.begin(), byIndex.end());
    const std::string note = groupNote(m, byIndex, set);
    const size_t g = gpus.size(), n = set.size();
    for (size_t i = 0; i < g; ++i) {
      GpuNicPair pair;
      pair.gpu = gpus[i];
      pair.path = best[gpus[i]];
      if (n >= g) {
        for (size_t k = i * n / g; k < (i + 1) * n / g; ++k) pair.nics.push_back(set[k]);
      } else {
        pair.nics.push_back(set[i * n / g]);
      }
      pair.why = reason(m, m.gpus[pair.gpu].pci, pair.nics.front(), pair.path) + note;
      pairs.push_back(std::move(pair));
    }
  }
  std::sort(pairs.begin(), pairs.end(),
            [](const GpuNicPair& a, const GpuNicPair& b) { return a.gpu < b.gpu; });
  return pairs;
}

}  // namespace

std::vector<int> eligibleNics(const Machine& m) {
  try {
    return eligibleImpl(m);
  } catch (...) {
    return {};
  }
}

std::vector<GpuNicPair> pairGpusWithNics(const Machine& m) {
  // Only allocation can throw here; the plugin must never see an exception.
  try {
    return pairImpl(m);
  } catch (...) {
    return {};
  }
}

namespace {

std::string describeImpl(const Machine& m, const std::vector<GpuNicPair>& pairs) {
  if (pairs.empty()) {
    return m.gpus.empty() ? "no pairs: no GPU\n" : "no pairs: no NIC that can carry NCCL traffic\n";
  }
  auto valid = [&](int nic) { return nic >= 0 && nic < static_cast<int>(m.nics.size()); };
  std::string out;
  for (const GpuNicPair& p : pairs) {
    if (p.gpu < 0 || p.gpu >= static_cast<int>(m.gpus.size())) continue;  // not this machine's
    out += "GPU " + std::to_string(p.gpu) + " " + busOf(m, m.gpus[p.gpu].pci).str() + " ->";
    for (size_t i = 0; i < p.nics.size(); ++i) {
      out += (i ? ", " : " ") + (valid(p.nics[i]) ? nicLabel(m, p.nics[i]) : "?");
    }
    out += " | " + p.why + "\n";
  }
  return out;
}

}  // namespace

std::string describePairs(const Machine& m, const std::vector<GpuNicPair>& pairs) {
  try {
    return describeImpl(m, pairs);
  } catch (...) {
    return "";  // out of memory: nothing to say
  }
}

}  // namespace pilot::topology
