// The machine from sysfs alone (the fallback, and how tests replay recorded trees), plus the
// sysfs facts a live hwloc topology lacks. Every read goes through SysfsRoot.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "detect_internal.h"
#include "pilot/core/text.h"

namespace pilot::topology {
namespace {

const std::string kPciDevices = "/sys/bus/pci/devices";
const std::string kInfiniband = "/sys/class/infiniband";
const std::string kNet = "/sys/class/net";
const std::string kNodes = "/sys/devices/system/node";

/// "dddd:bb:dd.f" with any number of domain digits (VMD domains have five).
bool looksLikeBdf(std::string_view s) {
  size_t n = s.size();
  if (n < 9 || s[n - 2] != '.' || s[n - 5] != ':' || s[n - 8] != ':') return false;
  for (size_t i = 0; i < n; ++i) {
    if (i == n - 2 || i == n - 5 || i == n - 8) continue;
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

std::string parentDir(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string lastComponent(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// A resolved sysfs device path split into its host bridge and the PCI functions below it.
struct PciPath {
  std::string hostBridge;  ///< "pci0000:3a": the component above the first bus id
  std::vector<std::pair<BusId, std::string>> chain;  ///< root port first; last = the device
};

/// Parses "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0[/virtio0/...]". Components after
/// the last bus id are cut (a virtio netdev's "device" is virtio0, a child of the PCI function);
/// the chain is the run of bus ids that ends there, so a nested root complex (VMD, Hyper-V's
/// pciXXXX:00 under a VMBus device) starts a new chain, as in NCCL's walk.
std::optional<PciPath> parsePciPath(const std::string& resolved, std::string* why) {
  std::vector<std::string> parts;
  for (std::string_view p : text::split(resolved, '/')) {
    if (!p.empty()) parts.emplace_back(p);
  }
  size_t end = parts.size();
  while (end > 0 && !looksLikeBdf(parts[end - 1])) --end;
  if (end == 0) {
    *why = resolved + " is not below a PCI device";
    return std::nullopt;
  }
  size_t begin = end;
  while (begin > 0 && looksLikeBdf(parts[begin - 1])) --begin;
  if (begin == 0) {
    *why = resolved + " has no host bridge above its PCI devices";
    return std::nullopt;
  }
  PciPath path;
  path.hostBridge = parts[begin - 1];
  std::string prefix;
  for (size_t i = 0; i < begin; ++i) prefix += "/" + parts[i];
  for (size_t i = begin; i < end; ++i) {
    prefix += "/" + parts[i];
    std::optional<BusId> id = BusId::parse(parts[i]);
    if (!id) {
      *why = "PCI device " + parts[i] + " has a domain above 0xffff (VMD?), which NCCL's " +
             "bus ids cannot express";
      return std::nullopt;
    }
    path.chain.emplace_back(*id, prefix);
  }
  return path;
}

/// Builds PCI drafts for the devices we want and their ancestors, reading each one's files once.
class PciScan {
 public:
  PciScan(const SysfsRoot& sysfs, std::vector<std::string>& notes) : sysfs_(sysfs), notes_(notes) {}

  /// The draft index of the device at the end of `path`, created with its ancestors if needed.
  int add(const PciPath& path) {
    int parent = hostBridge(path.hostBridge);
    for (size_t k = 0; k < path.chain.size(); ++k) {
      const auto& [busId, dir] = path.chain[k];
      bool isAncestor = k + 1 < path.chain.size();
      auto found = byBusId_.find(busId);
      if (found == byBusId_.end()) {
        std::string parentPath = k > 0 ? path.chain[k - 1].second : "";
        found = byBusId_.emplace(busId, create(busId, dir, parentPath, parent)).first;
      }
      parent = found->second;
      if (isAncestor) markBridge(parent, dir);
    }
    return parent;
  }

  std::vector<detail::PciDraft>& drafts() { return drafts_; }

 private:
  int hostBridge(const std::string& name) {
    auto found = hostBridges_.find(name);
    if (found != hostBridges_.end()) return found->second;
    detail::PciDraft draft;
    draft.node.kind = PciKind::HostBridge;
    draft.node.classCode = 0x060000;
    drafts_.push_back(std::move(draft));
    int index = static_cast<int>(drafts_.size()) - 1;
    hostBridges_.emplace(name, index);
    return index;
  }

  int create(const BusId& busId, const std::string& dir, const std::string& parentPath,
             int parent) {
    detail::PciDraft draft;
    PciNode& node = draft.node;
    node.busId = busId;
    node.parent = parent;
    std::optional<std::string> cls = sysfs_.readLine(dir + "/class");
    node.classCode = cls ? detail::parseHex(*cls).value_or(0) : 0;  // the listing noted it
    node.vendor = static_cast<uint16_t>(readHex(dir + "/vendor"));
    node.device = static_cast<uint16_t>(readHex(dir + "/device"));
    node.subsystemVendor = static_cast<uint16_t>(readHex(dir + "/subsystem_vendor"));
    node.subsystemDevice = static_cast<uint16_t>(readHex(dir + "/subsystem_device"));
    node.kind = (node.classCode >> 8) == 0x0604 ? PciKind::Switch : PciKind::Endpoint;
    node.numaNode = readNuma(dir + "/numa_node");
    detail::PcieLink link = detail::readSysfsLink(sysfs_, dir, parentPath);
    node.linkSpeed = link.speed;
    node.linkWidth = link.width;
    drafts_.push_back(std::move(draft));
    return static_cast<int>(drafts_.size()) - 1;
  }

  /// Anything with PCI functions below it is a bridge, whatever its class file says.
  void markBridge(int index, const std::string& dir) {
    PciNode& node = drafts_[index].node;
    if (node.kind != PciKind::Endpoint) return;
    node.kind = PciKind::Switch;
    if (node.classCode == 0) {
      node.classCode = 0x060400;
      notes_.push_back(sysfs_.path(dir) +
                       " has devices below it; taken as a PCI bridge (0x060400)");
    }
  }

  uint32_t readHex(const std::string& file) {
    std::optional<std::string> line = sysfs_.readLine(file);
    return line ? detail::parseHex(*line).value_or(0) : 0;
  }

  int readNuma(const std::string& file) {
    std::optional<std::string> line = sysfs_.readLine(file);
    if (!line) return -1;
    std::optional<int64_t> numa = text::parseSigned(*line);
    if (!numa || *numa < -1 || *numa > 4095) {
      notes_.push_back(sysfs_.path(file) + ": '" + line->substr(0, 32) +
                       "' is not a NUMA node; taken as -1");
      return -1;
    }
    return static_cast<int>(*numa);
  }

  const SysfsRoot& sysfs_;
  std::vector<std::string>& notes_;
  std::vector<detail::PciDraft> drafts_;
  std::map<BusId, int> byBusId_;
  std::map<std::string, int> hostBridges_;
};

int parseRateMbps(const std::string& rate) {
  // "200 Gb/sec (4X HDR)", "2.5 Gb/sec (1X SDR)"
  std::vector<std::string_view> words = text::splitWhitespace(rate);
  if (words.size() < 2 || words[1] != "Gb/sec") return 0;
  std::optional<double> gbps = detail::parseDecimal(words[0]);
  if (!gbps || *gbps > 1e6) return 0;
  return static_cast<int>(std::lround(*gbps * 1000));
}

LinkLayer parseLinkLayer(const std::string& value) {
  if (value == "InfiniBand") return LinkLayer::InfiniBand;
  if (value == "Ethernet") return LinkLayer::Ethernet;
  return LinkLayer::Unknown;
}

std::vector<CpuNode> readCpus(const SysfsRoot& sysfs, std::vector<std::string>& notes) {
  detail::CpuIdentity id = detail::readCpuInfo(sysfs, notes);
  CpuNode base;
  base.arch = detail::compiledArch();
  base.vendor = id.vendor;
  base.familyId = id.family;
  base.modelId = id.model;
  std::vector<CpuNode> cpus;
  for (const std::string& entry : sysfs.list(kNodes)) {
    std::optional<uint64_t> numa =
        entry.rfind("node", 0) == 0 ? text::parseUnsigned(entry.substr(4)) : std::nullopt;
    if (!numa || *numa > 4095) continue;
    CpuNode cpu = base;
    cpu.numaId = static_cast<int>(*numa);
    std::string file = kNodes + "/" + entry + "/cpumap";
    std::optional<std::string> cpumap = sysfs.readLine(file);
    if (cpumap && detail::parseCpumap(*cpumap)) {
      cpu.affinity = *cpumap;
    } else {
      notes.push_back(sysfs.path(file) + " is missing or not a cpumap; affinity left empty");
    }
    cpus.push_back(std::move(cpu));
  }
  if (cpus.empty()) {
    notes.push_back("no NUMA nodes in " + sysfs.path(kNodes) + "; one CPU entry with numaid -1");
    CpuNode cpu = base;
    std::optional<std::string> online = sysfs.readLine("/sys/devices/system/cpu/online");
    std::optional<std::vector<unsigned>> list =
        online ? detail::parseCpuList(*online) : std::nullopt;
    if (list && !list->empty()) cpu.affinity = detail::cpumapFromCpus(*list, 0);
    cpus.push_back(std::move(cpu));
  }
  return cpus;
}

}  // namespace

namespace detail {

PcieLink readSysfsLink(const SysfsRoot& sysfs, const std::string& devicePath,
                       const std::string& parentPath) {
  // NCCL takes the slower and narrower end of the link: min(own, parent). An unreadable speed
  // does not count; a width of 0 does (SR-IOV VFs report none, and NCCL then reads x16).
  PcieLink link;
  int generation = 0;
  std::optional<int> width;
  for (const std::string& dir : {devicePath, parentPath}) {
    if (dir.empty()) continue;
    std::optional<std::string> speed = sysfs.readLine(dir + "/max_link_speed");
    int g = speed ? pcieGeneration(*speed) : 0;
    if (g > 0 && (generation == 0 || g < generation)) generation = g;
    std::optional<std::string> lanes = sysfs.readLine(dir + "/max_link_width");
    std::optional<uint64_t> w = lanes ? text::parseUnsigned(*lanes) : std::nullopt;
    if (w) {
      int value = *w <= 32 ? static_cast<int>(*w) : 0;  // 255 = "unknown" on some kernels
      width = width ? std::min(*width, value) : value;
    }
  }
  link.speed = pcieSpeedName(generation);
  link.width = width.value_or(0);
  return link;
}

std::optional<PcieLink> readSysfsLinkOf(const SysfsRoot& sysfs, const BusId& busId) {
  std::optional<std::string> dir = sysfs.resolve(kPciDevices + "/" + busId.str());
  if (!dir) return std::nullopt;
  std::string parent = parentDir(*dir);
  return readSysfsLink(sysfs, *dir, looksLikeBdf(lastComponent(parent)) ? parent : "");
}

CpuIdentity readCpuInfo(const SysfsRoot& sysfs, std::vector<std::string>& notes) {
  CpuIdentity id;
  std::optional<std::string> cpuinfo = sysfs.readAll("/proc/cpuinfo", 1 << 20);
  if (!cpuinfo) {
    notes.push_back("cannot read " + sysfs.path("/proc/cpuinfo") + "; CPU vendor unknown");
    return id;
  }
  bool inBlock = false;
  for (std::string_view line : text::split(*cpuinfo, '\n')) {
    if (text::trim(line).empty()) {
      if (inBlock) break;  // only the first processor
      continue;
    }
    inBlock = true;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = text::trim(line.substr(0, colon));
    std::string_view value = text::trim(line.substr(colon + 1));
    std::optional<uint64_t> number = text::parseUnsigned(value);
    if (key == "vendor_id") id.vendor = std::string(value);
    if (key == "cpu family" && number && *number < 4096) id.family = static_cast<int>(*number);
    if (key == "model" && number && *number < 4096) id.model = static_cast<int>(*number);
    if (key == "flags") {
      for (std::string_view flag : text::splitWhitespace(value)) {
        if (flag == "hypervisor") id.hypervisorFlag = true;
      }
    }
  }
  return id;
}

std::string hypervisorEvidence(bool cpuFlag, const std::string& dmiVendor,
                               const std::string& dmiProduct) {
  // DMI strings that only virtual machines carry (bare-metal vendors write their own names).
  static const char* const kVirtualVendors[] = {"QEMU",       "KVM",    "VMware",    "Xen",
                                                "Amazon EC2", "Google", "OpenStack", "Parallels",
                                                "innotek",    "BHYVE",  "Bochs"};
  std::string evidence;
  auto add = [&](const std::string& what) { evidence += (evidence.empty() ? "" : ", ") + what; };
  if (cpuFlag) add("CPU flag hypervisor");
  const std::string dmi = dmiVendor + " " + dmiProduct;
  bool virtualDmi = dmi.find("Virtual Machine") != std::string::npos;  // Hyper-V, Azure
  for (const char* v : kVirtualVendors) virtualDmi = virtualDmi || dmi.find(v) != std::string::npos;
  if (virtualDmi) add("DMI " + std::string(text::trim(dmi)));
  return evidence;
}

std::string readHypervisor(const SysfsRoot& sysfs, std::vector<std::string>& notes) {
  CpuIdentity id = readCpuInfo(sysfs, notes);
  return hypervisorEvidence(id.hypervisorFlag,
                            sysfs.readLine("/sys/class/dmi/id/sys_vendor").value_or(""),
                            sysfs.readLine("/sys/class/dmi/id/product_name").value_or(""));
}

void readRdmaDevice(const SysfsRoot& sysfs, Nic& nic, std::vector<std::string>& notes) {
  const std::string base = kInfiniband + "/" + nic.name;
  std::vector<int> ports;
  for (const std::string& p : sysfs.list(base + "/ports")) {
    std::optional<uint64_t> n = text::parseUnsigned(p);
    if (n && *n > 0 && *n < 256) ports.push_back(static_cast<int>(*n));
  }
  std::sort(ports.begin(), ports.end());
  if (ports.empty()) {
    notes.push_back("RDMA device " + nic.name + " has no readable ports in " + sysfs.path(base));
    return;
  }
  auto stateOf = [&](int port) {
    std::string dir = base + "/ports/" + std::to_string(port);
    std::string state = sysfs.readLine(dir + "/state").value_or("");  // "4: ACTIVE"
    size_t colon = state.find(':');
    return colon == std::string::npos ? state : std::string(text::trim(state.substr(colon + 1)));
  };
  nic.port = ports.front();
  for (int port : ports) {
    if (stateOf(port) == "ACTIVE") {
      nic.port = port;
      break;
    }
  }
  std::string dir = base + "/ports/" + std::to_string(nic.port);
  nic.state = stateOf(nic.port);
  nic.linkLayer = parseLinkLayer(sysfs.readLine(dir + "/link_layer").value_or(""));
  std::string rate = sysfs.readLine(dir + "/rate").value_or("");
  nic.speedMbps = parseRateMbps(rate);
  if (nic.speedMbps == 0 && !rate.empty())
    notes.push_back(sysfs.path(dir) + "/rate: cannot read '" + rate.substr(0, 40) + "'");
  std::string guid = detail::nodeGuid(sysfs.readLine(base + "/node_guid").value_or(""));
  if (!guid.empty()) nic.guid = guid;

  // The netdev of the port (ib0, ens3): device/net/*, matched by dev_port when there are several.
  std::vector<std::string> netdevs = sysfs.list(base + "/device/net");
  for (const std::string& netdev : netdevs) {
    std::optional<std::string> devPort =
        sysfs.readLine(base + "/device/net/" + netdev + "/dev_port");
    bool matches = devPort && text::parseUnsigned(*devPort) == uint64_t(nic.port - 1);
    if (nic.netdev.empty() || netdevs.size() == 1 || matches) nic.netdev = netdev;
    if (matches) break;
  }
}

void readNetdev(const SysfsRoot& sysfs, Nic& nic) {
  const std::string base = kNet + "/" + nic.netdev;
  std::string state = sysfs.readLine(base + "/operstate").value_or("");
  if (!state.empty()) {
    for (char& c : state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    nic.state = state;  // "UP", "DOWN", "UNKNOWN", like the RDMA port states' spelling
  }
  std::optional<std::string> speed = sysfs.readLine(base + "/speed");
  std::optional<int64_t> mbps = speed ? text::parseSigned(*speed) : std::nullopt;
  if (mbps && *mbps > 0 && *mbps < (int64_t{1} << 30)) nic.speedMbps = static_cast<int>(*mbps);
  std::string type = sysfs.readLine(base + "/type").value_or("");
  if (type == "1") nic.linkLayer = LinkLayer::Ethernet;     // ARPHRD_ETHER
  if (type == "32") nic.linkLayer = LinkLayer::InfiniBand;  // ARPHRD_INFINIBAND (IPoIB)
}

}  // namespace detail

Expected<Machine> detectFromSysfs(const SysfsRoot& sysfs) {
  try {
    if (!sysfs.resolve(kPciDevices))
      return Error{"cannot read " + sysfs.path(kPciDevices) + ": no such directory"};
    Machine m;
    m.source = "sysfs " + sysfs.root();
    std::vector<std::string> ignored;  // readCpus reports an unreadable cpuinfo already
    m.hypervisor = detail::readHypervisor(sysfs, ignored);
    PciScan scan(sysfs, m.notes);
    std::string why;

    for (const std::string& name : sysfs.list(kPciDevices)) {
      std::optional<std::string> dir = sysfs.resolve(kPciDevices + "/" + name);
      if (!dir) {
        m.notes.push_back(sysfs.path(kPciDevices + "/" + name) +
                          " cannot be resolved (dangling link or symlink loop)");
        continue;
      }
      std::optional<PciPath> path = parsePciPath(*dir, &why);
      if (!path) {
        m.notes.push_back(why);
        continue;
      }
      // GPUs: display/3D class (0x03xxxx) from NVIDIA.
      std::optional<std::string> cls = sysfs.readLine(*dir + "/class");
      std::optional<std::string> vendor = sysfs.readLine(*dir + "/vendor");
      std::optional<uint32_t> classCode = cls ? detail::parseHex(*cls) : std::nullopt;
      bool gpu = classCode && (*classCode >> 16) == 0x03 && vendor &&
                 detail::parseHex(*vendor) == std::optional<uint32_t>(0x10de);
      if (!classCode) m.notes.push_back(sysfs.path(*dir) + "/class is missing or unreadable");
      if (!gpu) continue;
      int draft = scan.add(*path);
      scan.drafts()[draft].wanted = true;
      Gpu g;
      g.pci = draft;
      m.gpus.push_back(std::move(g));
    }

    // RDMA devices: one Nic each.
    std::vector<BusId> rdmaBusIds;
    for (const std::string& name : sysfs.list(kInfiniband)) {
      Nic nic;
      nic.name = name;
      nic.rdma = true;
      std::optional<std::string> dir = sysfs.resolve(kInfiniband + "/" + name + "/device");
      std::optional<PciPath> path = dir ? parsePciPath(*dir, &why) : std::nullopt;
      if (!dir) why = sysfs.path(kInfiniband + "/" + name + "/device") + " cannot be resolved";
      if (path) {
        nic.pci = scan.add(*path);
        scan.drafts()[nic.pci].wanted = true;
        rdmaBusIds.push_back(path->chain.back().first);
      } else {
        m.notes.push_back("RDMA device " + name + " has no PCI device: " + why);
      }
      detail::readRdmaDevice(sysfs, nic, m.notes);
      m.nics.push_back(std::move(nic));
    }

    // Plain Ethernet: interfaces with a PCI device not already covered by an RDMA device.
    // Virtual interfaces (lo, docker0, veth*, bonds) have no "device" link.
    for (const std::string& name : sysfs.list(kNet)) {
      std::optional<std::string> dir = sysfs.resolve(kNet + "/" + name + "/device");
      if (!dir) continue;
      std::optional<PciPath> path = parsePciPath(*dir, &why);
      if (!path) {
        m.notes.push_back("network interface " + name + " skipped: " + why);
        continue;
      }
      const BusId& busId = path->chain.back().first;
      if (std::find(rdmaBusIds.begin(), rdmaBusIds.end(), busId) != rdmaBusIds.end()) continue;
      Nic nic;
      nic.name = name;
      nic.netdev = name;
      nic.pci = scan.add(*path);
      scan.drafts()[nic.pci].wanted = true;
      detail::readNetdev(sysfs, nic);
      m.nics.push_back(std::move(nic));
    }

    std::vector<int> map = detail::appendKeptPci(scan.drafts(), m);
    for (Gpu& g : m.gpus) g.pci = map[g.pci];
    for (Nic& n : m.nics) n.pci = n.pci >= 0 ? map[n.pci] : -1;
    m.cpus = readCpus(sysfs, m.notes);
    detail::finalizeMachine(m);
    return m;
  } catch (const std::exception& e) {
    return Error{"sysfs detection under " + sysfs.root() + " failed: " + e.what()};
  } catch (...) {
    return Error{"sysfs detection under " + sysfs.root() + " failed"};
  }
}

}  // namespace pilot::topology
