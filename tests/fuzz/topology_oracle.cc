#include "topology_oracle.h"

#include <set>
#include <string>

#include "fuzz_support.h"
#include "nccl_rules.h"
#include "pilot/topology/nccl_xml.h"

namespace fuzz {
namespace {

using namespace pilot::topology;

BusId busOf(const Machine& m, int pci) {
  return *m.pci[pci].busId;
}

bool hasGpuAt(const Machine& m, const BusId& bus) {
  for (const Gpu& g : m.gpus) {
    if (busOf(m, g.pci) == bus) return true;
  }
  return false;
}

bool hasNicAt(const Machine& m, const BusId& bus) {
  for (const Nic& n : m.nics) {
    if (n.pci >= 0 && busOf(m, n.pci) == bus) return true;
  }
  return false;
}

/// Every GPU, and every NIC not at a GPU's bus id, is written with a class that says what it is
/// (NICs at function 0: ncclNicBusId), so it reads back as one.
void checkKeptEndpoints(const Machine& m, const Machine& back) {
  std::set<BusId> gpuBuses;
  for (const Gpu& g : m.gpus) {
    gpuBuses.insert(busOf(m, g.pci));
    if (!hasGpuAt(back, busOf(m, g.pci)))
      die("GPU " + busOf(m, g.pci).str() + " lost in the NCCL XML round trip");
  }
  for (const Nic& n : m.nics) {
    if (n.pci < 0) continue;
    const BusId bus = ncclNicBusId(busOf(m, n.pci));
    if (!gpuBuses.count(bus) && !hasNicAt(back, bus))
      die("NIC " + bus.str() + " lost in the NCCL XML round trip");
  }
}

}  // namespace

void checkMachine(const Machine& m, int maxDepth, size_t maxValue) {
  const int n = static_cast<int>(m.pci.size());
  for (int i = 0; i < n; ++i) {
    const PciNode& p = m.pci[i];
    if (p.parent < -1 || p.parent >= i) die("PCI node " + std::to_string(i) + " before its parent");
    if (p.busId && (p.busId->domain > 0xffff || p.busId->device > 0x1f || p.busId->function > 7))
      die("bus id " + p.busId->str() + " NCCL cannot write");
    if (p.linkWidth < 0) die("a negative link width");
    int hops = 0;
    for (int a = p.parent; a >= 0; a = m.pci[a].parent) ++hops;
    if (hops > maxDepth) die("a PCI chain of " + std::to_string(hops) + " hops");
  }
  for (size_t i = 0; i < m.gpus.size(); ++i) {
    const int pci = m.gpus[i].pci;
    if (pci < 0 || pci >= n || !m.pci[pci].busId) die("a GPU without a PCI device");
    if (i > 0 && busOf(m, pci) < busOf(m, m.gpus[i - 1].pci)) die("GPUs not sorted by bus id");
  }
  for (size_t i = 0; i < m.nics.size(); ++i) {
    const Nic& nic = m.nics[i];
    if (nic.pci < -1 || nic.pci >= n || (nic.pci >= 0 && !m.pci[nic.pci].busId))
      die("a NIC with PCI index " + std::to_string(nic.pci));
    if (i == 0) continue;
    const Nic& prev = m.nics[i - 1];
    if (prev.pci < 0 && nic.pci >= 0) die("a virtual NIC before a PCI one");
    if (prev.pci >= 0 && nic.pci >= 0 && busOf(m, nic.pci) < busOf(m, prev.pci))
      die("NICs not sorted by bus id");
  }
  if (maxValue == 0) return;
  auto bounded = [&](const std::string& s, const char* what) {
    if (s.size() > maxValue) die(std::string(what) + " of " + std::to_string(s.size()) + " chars");
  };
  for (const CpuNode& c : m.cpus) {
    bounded(c.arch, "cpu arch");
    bounded(c.vendor, "cpu vendor");
    bounded(c.affinity, "cpu affinity");
  }
  for (const Nic& nic : m.nics) {
    bounded(nic.name, "nic name");
    bounded(nic.guid, "nic guid");
  }
}

void checkNcclXmlRoundTrip(const Machine& m) {
  pilot::Expected<std::string> text = writeNcclXml(m);
  if (!text.ok()) {
    const std::string& e = text.error();
    if (e.find("would appear twice") == std::string::npos &&
        e.find("XML nodes, NCCL accepts at most") == std::string::npos)
      die("the writer refused a model read from a file: " + e);
    return;
  }
  for (const std::string& v : test::checkNcclRules(*text, test::RulesMode::Nccl))
    die("NCCL would not take what we wrote: " + v + "\n" + *text);
  pilot::Expected<Machine> back = readNcclXml(*text, "written.xml");
  if (!back.ok()) die("what we wrote does not read back: " + back.error() + "\n" + *text);
  checkMachine(*back, kMaxPciHops, 253);
  checkKeptEndpoints(m, *back);
  pilot::Expected<std::string> again = writeNcclXml(*back);
  if (!again.ok() || *again != *text) {
    die("written, read and written again, the XML changed:\n" + *text + "---\n" +
        (again.ok() ? *again : again.error()));
  }
}

}  // namespace fuzz
