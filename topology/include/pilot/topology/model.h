// The machine model every topology source fills and every consumer (pairing, NCCL XML writer,
// `nccl-pilot topo`) reads. Plain data: sources build it, nothing mutates it afterwards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pilot::topology {

/// A PCI address in NCCL's spelling: "dddd:bb:dd.f", lowercase hex, 4-digit domain.
/// Domains above 0xffff (VMD) cannot be written for NCCL and are kept out of the model.
struct BusId {
  uint32_t domain = 0;
  uint8_t bus = 0;
  uint8_t device = 0;
  uint8_t function = 0;

  static std::optional<BusId> parse(const std::string& text);  ///< also accepts 8-digit domains
  std::string str() const;                                     ///< "0000:3b:00.0"
  bool operator<(const BusId& o) const;
  bool operator==(const BusId& o) const;
  bool operator!=(const BusId& o) const { return !(*this == o); }
};

/// One NUMA node with the CPU facts NCCL requires on <cpu>.
struct CpuNode {
  int numaId = -1;       ///< -1 = unknown (NCCL accepts it)
  std::string arch;      ///< "x86_64", "arm64", "ppc64"
  std::string vendor;    ///< "GenuineIntel", "AuthenticAMD", ...; empty on non-x86
  int familyId = -1;     ///< x86 CPUID family (decimal); -1 unknown
  int modelId = -1;      ///< x86 CPUID model (decimal); -1 unknown
  std::string affinity;  ///< Linux cpumap format: "ffffffff,00000000"
};

enum class PciKind {
  HostBridge,  ///< root complex (pci0000:00); no bus id of its own in NCCL's files
  RootPort,    ///< bridge directly under a host bridge (invisible to NCCL's sysfs walk)
  Switch,      ///< a switch port (upstream or downstream bridge below a root port)
  Endpoint,
};

/// Detection keeps only GPUs, NICs and their ancestors (NCCL's 256-node limit). Every tree
/// starts at a HostBridge (parent -1, no bus id, class 0x060000) when the source knows it (sysfs
/// always; hwloc always in practice); a RootPort is a bridge whose parent is a host bridge.
/// After detection every root's numaNode has a CpuNode (a numaid -1 entry spanning all CPUs if
/// need be), and devices reporting -1 on a machine with one NUMA node are placed on it.
struct PciNode {
  PciKind kind = PciKind::Endpoint;
  std::optional<BusId> busId;  ///< absent only for host bridges
  int parent = -1;             ///< index into Machine::pci; -1 = attached to cpu `numaNode`
  int numaNode = -1;           ///< owning NUMA node id (-1 unknown)
  uint32_t classCode = 0;      ///< 24-bit class, e.g. 0x030200 (3D controller), 0x060400 bridge
  uint16_t vendor = 0, device = 0, subsystemVendor = 0, subsystemDevice = 0;
  std::string linkSpeed;   ///< NCCL's table spelling, e.g. "16.0 GT/s PCIe"; "" unknown
  int linkWidth = 0;       ///< lanes; 0 unknown
  bool synthetic = false;  ///< invented by the flat-VM repair; does not exist on the host
};

struct Gpu {
  int pci = -1;      ///< index into Machine::pci
  int sm = 0;        ///< compute capability x10 (NVML); 0 unknown
  std::string name;  ///< e.g. "A100-SXM4-40GB" when known
  /// NVLink peers: (peer bus id, link count). Empty when NVML is absent.
  std::vector<std::pair<BusId, int>> nvlinks;
};

enum class LinkLayer { Unknown, InfiniBand, Ethernet };

struct Nic {
  int pci = -1;        ///< index into Machine::pci; -1 = virtual (no PCI device)
  std::string name;    ///< RDMA device (mlx5_0) when there is one, else interface (eth0)
  std::string netdev;  ///< kernel interface name (ib0, eth0), "" if none
  bool rdma = false;   ///< has an RDMA (verbs) device
  int port = 1;
  std::string state;  ///< "ACTIVE", "DOWN", ... ("" unknown)
  LinkLayer linkLayer = LinkLayer::Unknown;
  int speedMbps = 0;  ///< 0 unknown
  std::string guid;   ///< node GUID "0x..." ("" unknown)
};

struct Machine {
  std::string source;  ///< where it came from: "hwloc live", "hwloc XML <file>", "sysfs <root>"
  std::vector<CpuNode> cpus;
  std::vector<PciNode> pci;        ///< parents always precede children
  std::vector<Gpu> gpus;           ///< sorted by bus id
  std::vector<Nic> nics;           ///< sorted by bus id, then name
  std::vector<std::string> notes;  ///< what detection could not do (one line each)
  /// Non-empty when detection saw a virtual machine: the evidence ("CPU flag hypervisor,
  /// DMI QEMU"). Flat-VM repair only acts on its own on such machines.
  std::string hypervisor;

  const CpuNode* cpuByNuma(int numaId) const;
};

/// nvidia-smi topo -m vocabulary, best first.
enum class PathType { PIX, PXB, PHB, NODE, SYS };
const char* pathName(PathType p);

/// Classification as `nvidia-smi topo -m` defines it: PIX = at most one PCIe switch between
/// them (its upstream and downstream ports count as one), PXB = several switches but no host
/// bridge, PHB = through their shared host bridge or root port, NODE = different host bridges
/// on one NUMA node (both unknown counts as one node), SYS = across NUMA nodes (or one known and
/// one unknown). Indices into Machine::pci; an invalid index gives SYS.
PathType classifyPath(const Machine& m, int pciA, int pciB);

/// The NUMA node of the PCI object at index `pci` of Machine::pci: its own, or its nearest
/// ancestor's; -1 when none says or the index is invalid.
int numaNodeOf(const Machine& m, int pci);

}  // namespace pilot::topology
