// NCCL topology XML (the NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format): a writer that emits only
// what NCCL's strict parser accepts (research/topology.md §1), and a reader for NCCL's dumps and
// vendor files into the same model.
#pragma once

#include <string>

#include "pilot/core/result.h"
#include "pilot/topology/model.h"

namespace pilot::topology {

/// NCCL keeps at most 256 XML nodes per rank (NCCL_TOPO_XML_MAX_NODES, 2.21+).
constexpr int kNcclMaxXmlNodes = 256;
/// We refuse to write more than this: NCCL adds its own <gpu>/<nic>/<net> nodes to ours.
constexpr int kMaxXmlNodes = 200;

/// <system version="1">, one <cpu> per NUMA node holding the PCI tree below it: switches (real
/// and synthetic) as <pci> with class/link_speed/link_width, GPUs and NICs as self-closing
/// <pci> endpoints (NCCL detects <gpu>/<nic>/<net> itself). Host bridges, root ports and switch
/// downstream ports are skipped, as NCCL's own sysfs walk does (it keeps every second bridge
/// level above a device, i.e. switch upstream ports); a tree already in NCCL's shape (no host
/// bridge above, e.g. read from an NCCL XML file) keeps all its switches. NIC endpoints are
/// written at function 0 (ncclNicBusId), merging ports. Never keep/rank/dev/gdr/host_hash; no
/// prolog; no tabs; one tag per line. Errors past kMaxXmlNodes nodes.
Expected<std::string> writeNcclXml(const Machine& machine);

/// The bus id NCCL uses for a NIC: its IB transport reports pciPath with the function digit
/// forced to 0 (ports of a multi-port NIC merged), and our writer does the same. A net plugin
/// must report a pciPath whose last component is this id for NCCL to find the NIC in the file.
BusId ncclNicBusId(const BusId& nic);

/// Reads NCCL XML (comments allowed, either quote style) into a Machine: cpu -> CpuNode,
/// pci -> PciNode (bridges 0x0604xx -> Switch), gpu -> Gpu (sm, nvlink), nic/net -> Nic.
/// Errors name the line and what NCCL would have said.
Expected<Machine> readNcclXml(const std::string& text, const std::string& source);

/// NCCL's link_speed table spelling for a PCIe generation (1..6); "" for unknown.
const char* ncclLinkSpeed(int generation);
/// The generation NCCL's prefix match would read from a link_speed string (0 = unknown).
int parseLinkSpeedGeneration(const std::string& linkSpeed);

}  // namespace pilot::topology
