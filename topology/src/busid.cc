// PCI addresses in NCCL's spelling. NCCL matches GPUs to topology-file nodes by an exact string
// compare, so str() must produce exactly "%04x:%02x:%02x.%x" (research/topology.md §1.3).
#include <cstdio>
#include <tuple>

#include "pilot/topology/model.h"

namespace pilot::topology {
namespace {

std::optional<uint32_t> parseHexField(const std::string& text, size_t begin, size_t end) {
  if (begin >= end) return std::nullopt;
  uint32_t value = 0;
  for (size_t i = begin; i < end; ++i) {
    char c = text[i];
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    value = value * 16 + static_cast<uint32_t>(digit);
  }
  return value;
}

}  // namespace

std::optional<BusId> BusId::parse(const std::string& text) {
  // "dddd:bb:dd.f"; NVML writes an 8-digit domain ("00000000:3B:00.0").
  size_t firstColon = text.find(':');
  if (firstColon == std::string::npos || firstColon == 0 || firstColon > 8) return std::nullopt;
  size_t secondColon = firstColon + 3;
  size_t dot = secondColon + 3;
  if (text.size() != dot + 2 || text[secondColon] != ':' || text[dot] != '.') return std::nullopt;
  auto domain = parseHexField(text, 0, firstColon);
  auto bus = parseHexField(text, firstColon + 1, secondColon);
  auto device = parseHexField(text, secondColon + 1, dot);
  auto function = parseHexField(text, dot + 1, dot + 2);
  // Domains above 0xffff (VMD) do not fit NCCL's 12-character bus ids.
  if (!domain || !bus || !device || !function || *domain > 0xffff || *device > 0x1f ||
      *function > 7)
    return std::nullopt;
  BusId id;
  id.domain = *domain;
  id.bus = static_cast<uint8_t>(*bus);
  id.device = static_cast<uint8_t>(*device);
  id.function = static_cast<uint8_t>(*function);
  return id;
}

std::string BusId::str() const {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%04x:%02x:%02x.%x", static_cast<unsigned>(domain & 0xffff),
                static_cast<unsigned>(bus), static_cast<unsigned>(device),
                static_cast<unsigned>(function));
  return buffer;
}

bool BusId::operator<(const BusId& o) const {
  return std::tie(domain, bus, device, function) < std::tie(o.domain, o.bus, o.device, o.function);
}

bool BusId::operator==(const BusId& o) const {
  return domain == o.domain && bus == o.bus && device == o.device && function == o.function;
}

}  // namespace pilot::topology
