// NCCL topology XML (the NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format): a writer that emits only
// what NCCL's strict parser accepts (research/topology.md §1), and a reader for NCCL's dumps and
// vendor files into the same model.
#pragma once

#include <string>

#include "pilot/core/result.h"
#include "pilot/topology/model.h"

namespace pilot::topology {

/// NCCL keeps at most 256 XML nodes per rank; we refuse to write more than this.
constexpr int kMaxXmlNodes = 200;

/// <system version="1">, one <cpu> per NUMA node holding the PCI tree below it: switches (real
/// and synthetic) as <pci> with class/link_speed/link_width, GPUs and NICs as self-closing
/// <pci> endpoints (NCCL detects <gpu>/<nic>/<net> itself). Root ports are skipped, as NCCL's
/// own sysfs walk does. Never keep/rank/dev/gdr; no prolog; no tabs; one tag per line.
Expected<std::string> writeNcclXml(const Machine& machine);

/// Reads NCCL XML (comments allowed, either quote style) into a Machine: cpu -> CpuNode,
/// pci -> PciNode (bridges 0x0604xx -> Switch), gpu -> Gpu (sm, nvlink), nic/net -> Nic.
/// Errors name the line and what NCCL would have said.
Expected<Machine> readNcclXml(const std::string& text, const std::string& source);

/// NCCL's link_speed table spelling for a PCIe generation (1..6); "" for unknown.
const char* ncclLinkSpeed(int generation);
/// The generation NCCL's prefix match would read from a link_speed string (0 = unknown).
int parseLinkSpeedGeneration(const std::string& linkSpeed);

}  // namespace pilot::topology
