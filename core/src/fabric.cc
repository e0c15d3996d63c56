#include "pilot/core/fabric.h"

#include "pilot/core/text.h"

namespace pilot {

const char* fabricName(Fabric fabric) {
  switch (fabric) {
    case Fabric::InfiniBand:
      return "ib";
    case Fabric::RoCE:
      return "roce";
    case Fabric::Ethernet:
      return "ethernet";
  }
  return "ethernet";
}

std::optional<Fabric> parseFabric(std::string_view name) {
  const std::string_view n = text::trim(name);
  if (text::equalsIgnoreCase(n, "ib") || text::equalsIgnoreCase(n, "infiniband"))
    return Fabric::InfiniBand;
  if (text::equalsIgnoreCase(n, "roce")) return Fabric::RoCE;
  if (text::equalsIgnoreCase(n, "ethernet") || text::equalsIgnoreCase(n, "eth"))
    return Fabric::Ethernet;
  return std::nullopt;
}

}  // namespace pilot
