// sysfs facts about PCI functions that the model (model.h) does not keep, for tools that judge a
// machine rather than describe it to NCCL (`nccl-pilot doctor`): where a function lives, its
// current link next to its maximum, CPU lists. Reads go through the SysfsRoot like detection's.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/topology/model.h"
#include "pilot/topology/sources.h"

namespace pilot::topology {

/// /sys/bus/pci/devices/<bdf> with its links resolved, as a path inside the root
/// ("/sys/devices/pci0000:15/0000:15:01.0/..."); nullopt when the function is not there.
std::optional<std::string> pciDevicePath(const SysfsRoot& sysfs, const BusId& busId);

/// One PCI function's link as the kernel reports it: current_link_{speed,width} (what the link
/// trained to) and max_link_{speed,width} (what the function can do). Generations 1..6 (0 when
/// unreadable or "Unknown"), widths in lanes (0 when unreadable); the kernel's text is kept for
/// evidence.
struct PciLinkState {
  int currentGeneration = 0;
  int maxGeneration = 0;
  int currentWidth = 0;
  int maxWidth = 0;
  std::string currentSpeed;  ///< e.g. "2.5 GT/s PCIe"; "" unreadable
  std::string maxSpeed;
};
/// nullopt when the function is not in sysfs.
std::optional<PciLinkState> readPciLinkState(const SysfsRoot& sysfs, const BusId& busId);

/// PCIe generation (1..6) of a link speed in either kernel spelling ("16.0 GT/s PCIe" or
/// "16 GT/s"); 0 for "Unknown", "" and anything else. Detection's own reading.
int pcieGenerationOf(std::string_view speed);
/// NCCL's spelling of a generation ("32.0 GT/s PCIe"); "" when out of range.
std::string pcieSpeedText(int generation);

/// The CPUs of a Linux cpulist ("0-63,128-191"), as detection reads them; nullopt if it is not one.
std::optional<std::vector<unsigned>> parseCpuListText(std::string_view cpulist);

}  // namespace pilot::topology
