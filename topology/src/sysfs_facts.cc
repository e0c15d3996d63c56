// The public face of detection's own sysfs readers (detect_internal.h) for tools that judge a
// machine: nothing here reads or parses differently from detection.
#include "pilot/topology/sysfs_facts.h"

#include "detect_internal.h"
#include "pilot/core/text.h"

namespace pilot::topology {

std::optional<std::string> pciDevicePath(const SysfsRoot& sysfs, const BusId& busId) {
  return sysfs.resolve("/sys/bus/pci/devices/" + busId.str());
}

std::optional<PciLinkState> readPciLinkState(const SysfsRoot& sysfs, const BusId& busId) {
  std::optional<std::string> dir = pciDevicePath(sysfs, busId);
  if (!dir) return std::nullopt;
  auto width = [&](const char* file) {
    std::optional<std::string> text = sysfs.readLine(*dir + "/" + file);
    std::optional<uint64_t> lanes = text ? text::parseUnsigned(*text) : std::nullopt;
    return lanes && *lanes <= 32 ? static_cast<int>(*lanes) : 0;  // 255 = unknown on some kernels
  };
  PciLinkState link;
  link.currentSpeed = sysfs.readLine(*dir + "/current_link_speed").value_or("");
  link.maxSpeed = sysfs.readLine(*dir + "/max_link_speed").value_or("");
  link.currentGeneration = detail::pcieGeneration(link.currentSpeed);
  link.maxGeneration = detail::pcieGeneration(link.maxSpeed);
  link.currentWidth = width("current_link_width");
  link.maxWidth = width("max_link_width");
  return link;
}

int pcieGenerationOf(std::string_view speed) {
  return detail::pcieGeneration(speed);
}

std::string pcieSpeedText(int generation) {
  return detail::pcieSpeedName(generation);
}

std::optional<std::vector<unsigned>> parseCpuListText(std::string_view cpulist) {
  return detail::parseCpuList(cpulist);
}

}  // namespace pilot::topology
