// Helpers shared by the detection sources (sysfs, hwloc) and their tests. Not public API: the
// model (model.h) and the entry points (sources.h) are.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/topology/model.h"
#include "pilot/topology/sources.h"

namespace pilot::topology::detail {

/// The most CPUs a machine may have in our model: bounds what a garbage cpumap, cpulist or
/// hwloc export can make us allocate (and an os_index an export may give a PU or NUMA node).
constexpr unsigned kMaxCpus = 1u << 16;

// ---- pure helpers (detect.cc) ----

/// PCIe generation (1..6) of a sysfs max_link_speed string, either spelling: "16.0 GT/s PCIe"
/// (kernel >= 5.7) or "16 GT/s" (older); 0 for "Unknown", "", garbage.
int pcieGeneration(std::string_view speed);
/// NCCL's link_speed table spelling of a generation ("16.0 GT/s PCIe"); "" for unknown.
const char* pcieSpeedName(int generation);

struct PcieLink {
  std::string speed;  ///< NCCL spelling or ""
  int width = 0;      ///< lanes or 0
};
/// Guesses generation and width from hwloc's `linkspeed` (current GB/s, encoding included).
PcieLink estimateLinkFromHwloc(double gigabytesPerSecond);

/// "x86_64", "arm64", "ppc64": the architecture this library was compiled for (NCCL does the same).
const char* compiledArch();

/// Linux cpumap format ("00000000,ffffffff"): 32-bit words, most significant first. At least
/// `words` words are written, more if a cpu needs them.
std::string cpumapFromCpus(const std::vector<unsigned>& cpus, size_t words);
/// The cpus of a cpumap string; nullopt if it is not one.
std::optional<std::vector<unsigned>> parseCpumap(std::string_view cpumap);
/// The cpus of a cpulist string ("0-63,128-191"); nullopt if it is not one.
std::optional<std::vector<unsigned>> parseCpuList(std::string_view cpulist);
/// A non-negative decimal number such as "2.5" or "200", read without the C locale.
std::optional<double> parseDecimal(std::string_view s);
/// "0x030200" or "030200" -> 0x030200.
std::optional<uint32_t> parseHex(std::string_view s);
/// A node GUID as sysfs and hwloc write it ("ec0d:9a03:0078:6b40") in NCCL's spelling
/// ("0xec0d9a0300786b40"); "" if it is not one.
std::string nodeGuid(std::string_view colonHex);

/// A PCI node under construction: node.parent indexes the draft list. node.kind is
/// HostBridge, Endpoint, or Switch for any PCI-to-PCI bridge (RootPort is decided on assembly).
struct PciDraft {
  PciNode node;
  bool wanted = false;  ///< a GPU or NIC: kept, with all its ancestors
};

/// Appends the wanted drafts and their ancestors to machine.pci, parents first (roots ordered by
/// their lowest bus id, children by bus id), bridges under a host bridge (or under nothing)
/// becoming RootPort. Returns draft index -> machine index (-1 = dropped).
///
/// Only GPUs, NICs and their ancestors are kept: NCCL refuses topologies of more than 256 XML
/// nodes, and a big server lists several hundred PCI functions that NCCL never uses.
std::vector<int> appendKeptPci(const std::vector<PciDraft>& drafts, Machine& machine);

/// Common finishing: NUMA ids of PCI nodes filled from their neighbours, a CPU entry for every
/// NUMA id a PCI root uses, cpus/gpus/nics sorted. Adds notes for what it had to assume.
void finalizeMachine(Machine& machine);

// ---- sysfs facts (sysfs_detect.cc), also used to complete a live hwloc topology ----

/// NCCL's rule: min(own, parent's) max_link_speed and max_link_width; `parentPath` empty when the
/// parent is the host bridge (which has no link files).
PcieLink readSysfsLink(const SysfsRoot& sysfs, const std::string& devicePath,
                       const std::string& parentPath);

struct CpuIdentity {
  std::string vendor;
  int family = -1;
  int model = -1;
  bool hypervisorFlag = false;  ///< x86 "hypervisor" CPU flag: running under a hypervisor
};
/// vendor_id, cpu family, model and the hypervisor flag of the first processor in /proc/cpuinfo.
CpuIdentity readCpuInfo(const SysfsRoot& sysfs, std::vector<std::string>& notes);

/// The evidence that this is a virtual machine, from the hypervisor CPU flag and DMI strings
/// (/sys/class/dmi/id); "" on bare metal or when nothing is readable.
std::string hypervisorEvidence(bool cpuFlag, const std::string& dmiVendor,
                               const std::string& dmiProduct);
std::string readHypervisor(const SysfsRoot& sysfs, std::vector<std::string>& notes);

/// Port state, link layer, rate, node GUID and netdev of /sys/class/infiniband/<nic.name>,
/// choosing the first ACTIVE port (else the first port).
void readRdmaDevice(const SysfsRoot& sysfs, Nic& nic, std::vector<std::string>& notes);

/// readSysfsLink for a device named by bus id; nullopt when sysfs does not have it.
std::optional<PcieLink> readSysfsLinkOf(const SysfsRoot& sysfs, const BusId& busId);

/// operstate, speed and type of /sys/class/net/<nic.netdev> (plain Ethernet NICs).
void readNetdev(const SysfsRoot& sysfs, Nic& nic);

}  // namespace pilot::topology::detail
