// The machine from hwloc: live, or from an `lstopo --of xml` export. hwloc gives the PCI tree
// with NUMA locality, CPU identity and OS devices (mlx5_0, ib0, nvml0); sysfs adds, when live,
// what hwloc lacks: max link speed/width and RDMA port rate/link layer.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "detect_internal.h"
#include "hwloc_library.h"
#include "hwloc_xml_check.h"
#include "pilot/core/file.h"
#include "pilot/core/text.h"

namespace pilot::topology {
namespace {

constexpr size_t kMaxXmlBytes = size_t{256} << 20;
constexpr int kMaxHwlocDepth = 256;  // an XML file could nest objects without end
constexpr unsigned kMaxPorts = 32;

// In C++ hwloc's attribute structs are nested in the union.
using PciAttr = hwloc_obj_attr_u::hwloc_pcidev_attr_s;
using BridgeAttr = hwloc_obj_attr_u::hwloc_bridge_attr_s;

// ---- reading the XML file ----

Expected<std::string> readXmlFile(const std::string& file) {
  struct stat st;
  if (stat(file.c_str(), &st) != 0)
    return Error{"cannot read hwloc XML " + file + ": " + std::strerror(errno)};
  if (!S_ISREG(st.st_mode)) return Error{"hwloc XML " + file + " is not a regular file"};
  std::string content;
  int openErrno = 0;
  switch (readFileUpTo(file, kMaxXmlBytes, &content, &openErrno)) {
    case ReadOutcome::Ok:
      return content;
    case ReadOutcome::CannotOpen:
      return Error{"cannot read hwloc XML " + file + ": " + std::strerror(openErrno)};
    case ReadOutcome::TooLarge:
      return Error{"hwloc XML " + file + " is larger than 256 MiB; not reading it"};
    case ReadOutcome::ReadError:
      break;
  }
  return Error{"cannot read hwloc XML " + file + ": read error"};
}

/// The value of `attribute` inside the first `<element ...>` tag, or "" when absent.
std::string tagAttribute(const std::string& xml, const std::string& element,
                         const std::string& attribute, size_t* valueBegin = nullptr) {
  size_t tag = xml.find("<" + element);
  if (tag == std::string::npos) return "";
  size_t tagEnd = xml.find('>', tag);
  std::string key = " " + attribute + "=\"";
  size_t at = xml.find(key, tag);
  if (at == std::string::npos || at > tagEnd) return "";
  size_t begin = at + key.size();
  size_t end = xml.find('"', begin);
  if (end == std::string::npos) return "";
  if (valueBegin != nullptr) *valueBegin = begin;
  return xml.substr(begin, end - begin);
}

/// hwloc 3.x writes format "3.0", which hwloc 2.x refuses outright. For what we read the formats
/// differ in one way: OS device types became a bitmask (Storage 1, Memory 2, GPU 4, CoProc 8,
/// Network 16, OpenFabrics 32, DMA 64; an mlx5 port is Network|OpenFabrics = 48) where 2.x has
/// an enum. Rewriting the version and those numbers lets hwloc 2.x read the file; what else 3.x
/// adds (CPU kinds, memory attributes, topology-level infos) hwloc 2.x skips as unknown tags.
std::string downgradeFormat3(std::string xml) {
  size_t versionAt = 0;
  std::string version = tagAttribute(xml, "topology", "version", &versionAt);
  xml.replace(versionAt, version.size(), "2.0");
  const std::string key = " osdev_type=\"";
  for (size_t at = xml.find(key); at != std::string::npos; at = xml.find(key, at + 1)) {
    size_t begin = at + key.size();
    size_t end = xml.find('"', begin);
    if (end == std::string::npos) break;
    std::optional<uint64_t> bits =
        text::parseUnsigned(std::string_view(xml).substr(begin, end - begin));
    if (!bits) continue;
    hwloc_obj_osdev_type_t type = (*bits & 32)   ? HWLOC_OBJ_OSDEV_OPENFABRICS
                                  : (*bits & 16) ? HWLOC_OBJ_OSDEV_NETWORK
                                  : (*bits & 8)  ? HWLOC_OBJ_OSDEV_COPROC
                                  : (*bits & 4)  ? HWLOC_OBJ_OSDEV_GPU
                                  : (*bits & 64) ? HWLOC_OBJ_OSDEV_DMA
                                                 : HWLOC_OBJ_OSDEV_BLOCK;
    xml.replace(begin, end - begin, std::to_string(static_cast<int>(type)));
  }
  return xml;
}

/// Makes the export readable by hwloc 2.x, or says why it is not an export we can use.
Expected<std::string> prepareXml(const std::string& file, std::vector<std::string>& notes) {
  Expected<std::string> xml = readXmlFile(file);
  if (!xml.ok()) return xml;
  if (xml->find("<topology") == std::string::npos)
    return Error{"hwloc XML " + file + " has no <topology> element; is it an lstopo XML export?"};
  if (const std::string why = unsafeHwlocXml(*xml); !why.empty())
    return Error{"hwloc XML " + file + " " + why +
                 "; not loading it (hwloc 2.x may crash on what lstopo does not write)"};
  // hwloc 1.x files carry no version; 2.x write "2.0".
  std::string version = tagAttribute(*xml, "topology", "version");
  int major = version.empty() ? 1 : std::atoi(version.c_str());
  if (major <= 2) return xml;
  if (major == 3) {
    notes.push_back("hwloc XML format " + version + " (hwloc 3.x) converted for hwloc 2.x");
    return downgradeFormat3(std::move(*xml));
  }
  return Error{"hwloc XML " + file + " has format version " + version +
               ", which hwloc 2.x cannot read"};
}

// ---- walking the topology ----

const char* infoOf(hwloc_obj_t obj, const char* name) {
  if (obj == nullptr) return nullptr;
  for (unsigned i = 0; i < obj->infos_count; ++i) {
    if (obj->infos[i].name != nullptr && std::strcmp(obj->infos[i].name, name) == 0)
      return obj->infos[i].value;
  }
  return nullptr;
}

int infoInt(hwloc_obj_t obj, const char* name) {
  const char* value = infoOf(obj, name);
  std::optional<int64_t> n = value ? text::parseSigned(text::trim(value)) : std::nullopt;
  return n && *n >= 0 && *n < (1 << 20) ? static_cast<int>(*n) : -1;
}

/// An enum field of an hwloc object as the number it holds: hwloc copies osdev_type and
/// bridge_type from an XML file as given, so the field may hold a value its enum does not have,
/// and loading it as the enum would be undefined (UBSan, under tests/fuzz/hwloc_xml_fuzz).
template <typename Enum>
int numberIn(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int));
  int value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

bool isIoObject(hwloc_obj_t obj) {
  return obj->type == HWLOC_OBJ_BRIDGE || obj->type == HWLOC_OBJ_PCI_DEVICE ||
         obj->type == HWLOC_OBJ_OS_DEVICE;
}

/// IB port states as the kernel numbers them (ports/N/state "4: ACTIVE").
std::string ibPortState(int state) {
  static const char* const kNames[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  if (state >= 0 && state < static_cast<int>(std::size(kNames))) return kNames[state];
  return "";
}

std::string archFromHwloc(const char* architecture, const std::string& vendor) {
  std::string arch = architecture ? architecture : "";
  if (arch == "x86_64") return "x86_64";
  if (arch == "aarch64" || arch == "arm64") return "arm64";
  if (arch.rfind("ppc64", 0) == 0) return "ppc64";
  if (vendor == "GenuineIntel" || vendor == "AuthenticAMD" || vendor == "CentaurHauls" ||
      vendor == "  Shanghai  ")
    return "x86_64";
  return arch.empty() ? detail::compiledArch() : arch;
}

class Walker {
 public:
  Walker(const HwlocLibrary& lib, const SysfsRoot* live, std::vector<std::string>& notes)
      : lib_(lib), live_(live), notes_(notes) {}

  void run(hwloc_obj_t root, Machine& m) {
    root_ = root;
    firstPackage_ = findPackage(root, 0);
    int last = root->cpuset ? lib_.bitmapLast(root->cpuset) : -1;
    cpumapWords_ = last >= 0 ? static_cast<size_t>(last) / 32 + 1 : 1;
    visit(root, -1, -1, nullptr, 0);
    std::vector<int> map = detail::appendKeptPci(drafts_, m);
    for (Gpu& gpu : gpus_) gpu.pci = map[gpu.pci];
    for (Nic& nic : nics_) nic.pci = map[nic.pci];
    m.gpus = std::move(gpus_);
    m.nics = std::move(nics_);
    m.cpus = std::move(cpus_);
  }

 private:
  void visit(hwloc_obj_t obj, int numa, int pciParent, hwloc_obj_t package, int depth) {
    if (depth > kMaxHwlocDepth) return;
    if (!isIoObject(obj)) numa = numaOf(obj);
    if (obj->type == HWLOC_OBJ_PACKAGE) package = obj;
    if (obj->type == HWLOC_OBJ_NUMANODE) addNumaNode(obj, package);
    if (obj->type == HWLOC_OBJ_BRIDGE) pciParent = addBridge(obj, numa, pciParent);
    if (obj->type == HWLOC_OBJ_PCI_DEVICE) pciParent = addPciDevice(obj, numa, pciParent);
    for (hwloc_obj_t c = obj->first_child; c; c = c->next_sibling)
      visit(c, numa, pciParent, package, depth + 1);
    for (hwloc_obj_t c = obj->memory_first_child; c; c = c->next_sibling)
      visit(c, numa, pciParent, package, depth + 1);
    for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling)
      visit(c, numa, pciParent, package, depth + 1);
  }

  static hwloc_obj_t findPackage(hwloc_obj_t obj, int depth) {
    if (obj->type == HWLOC_OBJ_PACKAGE) return obj;
    for (hwloc_obj_t c = obj->first_child; c && depth < kMaxHwlocDepth; c = c->next_sibling) {
      if (hwloc_obj_t found = findPackage(c, depth + 1)) return found;
    }
    return nullptr;
  }

  /// The NUMA node of a non-I/O object: its nodeset's only member, else unknown.
  int numaOf(hwloc_obj_t obj) const {
    if (obj->nodeset == nullptr || lib_.bitmapWeight(obj->nodeset) != 1) return -1;
    return lib_.bitmapFirst(obj->nodeset);
  }

  std::string cpumap(hwloc_const_bitmap_t set) const {
    std::vector<unsigned> cpus;
    if (set != nullptr && lib_.bitmapWeight(set) >= 0) {
      for (int i = lib_.bitmapFirst(set); i >= 0 && static_cast<unsigned>(i) < detail::kMaxCpus;
           i = lib_.bitmapNext(set, i))
        cpus.push_back(static_cast<unsigned>(i));
    }
    return detail::cpumapFromCpus(cpus, cpumapWords_);
  }

  void addNumaNode(hwloc_obj_t obj, hwloc_obj_t package) {
    CpuNode cpu;
    cpu.numaId = static_cast<int>(obj->os_index);
    // CPUVendor & co. sit on the Package; a NUMA node outside any package (some Intel SNC and
    // AMD layouts) takes the first package's, and some exports keep them on the Machine.
    hwloc_obj_t identity = package ? package : firstPackage_;
    if (!infoOf(identity, "CPUVendor") && infoOf(root_, "CPUVendor")) identity = root_;
    cpu.vendor = infoOf(identity, "CPUVendor") ? infoOf(identity, "CPUVendor") : "";
    cpu.familyId = infoInt(identity, "CPUFamilyNumber");
    cpu.modelId = infoInt(identity, "CPUModelNumber");
    cpu.arch =
        live_ ? detail::compiledArch() : archFromHwloc(infoOf(root_, "Architecture"), cpu.vendor);
    cpu.affinity = cpumap(obj->cpuset);
    cpus_.push_back(std::move(cpu));
  }

  int addDraft(PciNode node, int numa, int pciParent, float linkspeed) {
    node.numaNode = numa;
    node.parent = pciParent;
    std::optional<detail::PcieLink> link;
    if (live_ && node.busId) link = detail::readSysfsLinkOf(*live_, *node.busId);
    if (!link) link = detail::estimateLinkFromHwloc(linkspeed);
    node.linkSpeed = link->speed;
    node.linkWidth = link->width;
    drafts_.push_back({std::move(node), false});
    return static_cast<int>(drafts_.size()) - 1;
  }

  static std::optional<BusId> busIdOf(const PciAttr& pci) {
    if (pci.dev > 0x1f || pci.func > 7) return std::nullopt;
    BusId id;
    id.domain = pci.domain;
    id.bus = pci.bus;
    id.device = pci.dev;
    id.function = pci.func;
    return id;
  }

  static void copyIds(const PciAttr& pci, PciNode& node) {
    node.classCode = static_cast<uint32_t>(pci.class_id) << 8;  // hwloc drops the prog-if byte
    node.vendor = pci.vendor_id;
    node.device = pci.device_id;
    node.subsystemVendor = pci.subvendor_id;
    node.subsystemDevice = pci.subdevice_id;
  }

  int addBridge(hwloc_obj_t obj, int numa, int pciParent) {
    const BridgeAttr& bridge = obj->attr->bridge;
    PciNode node;
    if (numberIn(bridge.upstream_type) == HWLOC_OBJ_BRIDGE_HOST) {
      node.kind = PciKind::HostBridge;
      node.classCode = 0x060000;
      return addDraft(std::move(node), numa, pciParent, 0);
    }
    node.busId = busIdOf(bridge.upstream.pci);
    if (!node.busId) return pciParent;
    node.kind = PciKind::Switch;  // RootPort when its parent is a host bridge (appendKeptPci)
    copyIds(bridge.upstream.pci, node);
    return addDraft(std::move(node), numa, pciParent, bridge.upstream.pci.linkspeed);
  }

  int addPciDevice(hwloc_obj_t obj, int numa, int pciParent) {
    const PciAttr& pci = obj->attr->pcidev;
    PciNode node;
    node.busId = busIdOf(pci);
    if (!node.busId) return pciParent;
    copyIds(pci, node);
    int draft = addDraft(std::move(node), numa, pciParent, pci.linkspeed);
    if ((pci.class_id >> 8) == 0x03 && pci.vendor_id == 0x10de) {
      drafts_[draft].wanted = true;
      Gpu gpu;
      gpu.pci = draft;
      gpus_.push_back(std::move(gpu));
    }
    addNics(obj, draft);
    return draft;
  }

  void addNics(hwloc_obj_t pciObj, int draft) {
    std::vector<hwloc_obj_t> fabrics, networks;
    for (hwloc_obj_t c = pciObj->io_first_child; c; c = c->next_sibling) {
      if (c->type != HWLOC_OBJ_OS_DEVICE || c->name == nullptr) continue;
      if (numberIn(c->attr->osdev.type) == HWLOC_OBJ_OSDEV_OPENFABRICS) fabrics.push_back(c);
      if (numberIn(c->attr->osdev.type) == HWLOC_OBJ_OSDEV_NETWORK) networks.push_back(c);
    }
    for (hwloc_obj_t fabric : fabrics) nics_.push_back(rdmaNic(fabric, networks, draft));
    if (fabrics.empty()) {
      for (hwloc_obj_t net : networks) nics_.push_back(ethernetNic(net, draft));
    }
    if (!fabrics.empty() || !networks.empty()) drafts_[draft].wanted = true;
  }

  Nic rdmaNic(hwloc_obj_t fabric, const std::vector<hwloc_obj_t>& networks, int draft) {
    Nic nic;
    nic.name = fabric->name;
    nic.rdma = true;
    nic.pci = draft;
    int chosen = 0, chosenState = -1;
    for (unsigned p = 1; p <= kMaxPorts; ++p) {
      int state = infoInt(fabric, ("Port" + std::to_string(p) + "State").c_str());
      if (state < 0) continue;
      if (chosen == 0 || (state == 4 && chosenState != 4)) {
        chosen = static_cast<int>(p);
        chosenState = state;
      }
    }
    nic.port = chosen > 0 ? chosen : 1;
    nic.state = ibPortState(chosenState);
    std::string port = "Port" + std::to_string(nic.port);
    const char* layer = infoOf(fabric, (port + "LinkLayer").c_str());
    const char* lid = infoOf(fabric, (port + "LID").c_str());
    if (layer != nullptr) {
      nic.linkLayer = std::strcmp(layer, "InfiniBand") == 0 ? LinkLayer::InfiniBand
                      : std::strcmp(layer, "Ethernet") == 0 ? LinkLayer::Ethernet
                                                            : LinkLayer::Unknown;
    } else if (lid != nullptr) {
      // hwloc records no link layer, but the subnet manager gives every active IB port a LID
      // and RoCE ports have none, so an ACTIVE port's LID tells them apart.
      std::optional<uint32_t> value = detail::parseHex(lid);
      if (value && *value != 0) nic.linkLayer = LinkLayer::InfiniBand;
      if (value && *value == 0 && chosenState == 4) nic.linkLayer = LinkLayer::Ethernet;
    }
    const char* guid = infoOf(fabric, "NodeGUID");
    nic.guid = guid ? detail::nodeGuid(guid) : "";
    for (hwloc_obj_t net : networks) {
      const char* netPort = infoOf(net, "Port");
      if (nic.netdev.empty() || (netPort && std::atoi(netPort) == nic.port)) nic.netdev = net->name;
    }
    if (live_) detail::readRdmaDevice(*live_, nic, notes_);
    return nic;
  }

  Nic ethernetNic(hwloc_obj_t net, int draft) {
    Nic nic;
    nic.name = net->name;
    nic.netdev = net->name;
    nic.pci = draft;
    // "Address" is the link-layer address: 6 bytes for Ethernet, 20 for IPoIB.
    const char* address = infoOf(net, "Address");
    size_t length = address ? std::strlen(address) : 0;
    nic.linkLayer = length == 17   ? LinkLayer::Ethernet
                    : length == 59 ? LinkLayer::InfiniBand
                                   : LinkLayer::Unknown;
    if (live_) detail::readNetdev(*live_, nic);
    return nic;
  }

  const HwlocLibrary& lib_;
  const SysfsRoot* live_;
  std::vector<std::string>& notes_;
  hwloc_obj_t root_ = nullptr;
  hwloc_obj_t firstPackage_ = nullptr;
  size_t cpumapWords_ = 1;
  std::vector<detail::PciDraft> drafts_;
  std::vector<Gpu> gpus_;
  std::vector<Nic> nics_;
  std::vector<CpuNode> cpus_;
};

/// Destroys the topology on every path out.
struct TopologyGuard {
  const HwlocLibrary& lib;
  hwloc_topology_t topology = nullptr;
  ~TopologyGuard() {
    if (topology != nullptr) lib.topologyDestroy(topology);
  }
};

}  // namespace

Expected<Machine> detectWithHwloc(const HwlocLibrary& lib, const DetectOptions& options) {
  const bool live = options.hwlocXml.empty();
  Machine m;
  m.source = live ? "hwloc live" : "hwloc XML " + options.hwlocXml;
  std::string xml;
  if (!live) {
    Expected<std::string> prepared = prepareXml(options.hwlocXml, m.notes);
    if (!prepared.ok()) return Error{prepared.error()};
    xml = std::move(*prepared);
    if (xml.size() >= static_cast<size_t>(INT32_MAX))
      return Error{"hwloc XML " + options.hwlocXml + " is too large"};
  }
  const std::string what = live ? std::string("hwloc") : "hwloc XML " + options.hwlocXml;

  TopologyGuard guard{lib};
  if (lib.topologyInit(&guard.topology) != 0) return Error{what + ": hwloc_topology_init failed"};
  // I/O objects are filtered out by default; we need every bridge to count switches.
  if (lib.setIoTypesFilter(guard.topology, HWLOC_TYPE_FILTER_KEEP_ALL) != 0)
    return Error{what + ": cannot enable I/O objects"};
  if (live) {
    // The whole machine, not only this process' cgroup: NCCL reads the full NUMA cpumaps from
    // sysfs, and ranks in different cgroups must describe the same <cpu> or fusion duplicates it.
    if (lib.setFlags(guard.topology, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0)
      return Error{what + ": cannot set topology flags"};
  } else if (lib.setXmlBuffer(guard.topology, xml.c_str(), static_cast<int>(xml.size()) + 1) != 0) {
    return Error{what + " was rejected by hwloc: " + std::strerror(errno)};
  }
  if (lib.topologyLoad(guard.topology) != 0)
    return Error{what + " could not be loaded: " + std::strerror(errno)};
  hwloc_obj_t root = lib.getObjByDepth(guard.topology, 0, 0);
  if (root == nullptr) return Error{what + ": topology has no root object"};

  SysfsRoot sysfs(options.sysfsRoot);
  Walker walker(lib, live ? &sysfs : nullptr, m.notes);
  walker.run(root, m);
  if (live) {
    std::vector<std::string> ignored;
    m.hypervisor = detail::readHypervisor(sysfs, ignored);
  } else {
    m.hypervisor = detail::hypervisorEvidence(
        false, infoOf(root, "DMISysVendor") ? infoOf(root, "DMISysVendor") : "",
        infoOf(root, "DMIProductName") ? infoOf(root, "DMIProductName") : "");
  }
  if (!live) {
    m.notes.push_back(
        "PCIe link speed and width estimated from hwloc's current link rate (an "
        "XML export has no max_link_speed/max_link_width)");
  }
  detail::finalizeMachine(m);
  return m;
}

}  // namespace pilot::topology
