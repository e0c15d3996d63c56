// Configuration-space parsing. Layouts from the PCI Local Bus and PCIe base specifications (the
// same ones lspci and setpci read); nothing is trusted: every read is bounds-checked against the
// bytes given, and both list walks stop at a visited offset or after the most entries the space
// can hold.
#include "pilot/doctor/pci_config.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace pilot::doctor {
namespace {

constexpr size_t kStatusRegister = 0x06;
constexpr uint16_t kStatusCapabilityList = 1u << 4;
constexpr size_t kHeaderTypeRegister = 0x0e;
constexpr size_t kCapabilityPointer = 0x34;         // header types 0 and 1
constexpr size_t kCardBusCapabilityPointer = 0x14;  // header type 2
constexpr int kMaxStandardCapabilities = 48;        // (256 - 64) / 4: every dword a capability
constexpr size_t kExtendedStart = 0x100;
constexpr int kMaxExtendedCapabilities = (kPcieConfigBytes - kPciConfigBytes) / 8;

std::string hex(unsigned value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%0*x", digits, value);
  return buffer;
}

void walkStandard(PciConfigSpace& config) {
  std::optional<uint16_t> status = config.read16(kStatusRegister);
  if (!status || !(*status & kStatusCapabilityList)) return;
  const size_t pointerAt =
      (config.headerType & 0x7f) == 2 ? kCardBusCapabilityPointer : kCapabilityPointer;
  size_t offset = static_cast<uint8_t>(config.bytes[pointerAt]) & 0xfc;
  std::set<size_t> seen;
  for (int step = 0; offset != 0; ++step) {
    if (step >= kMaxStandardCapabilities || !seen.insert(offset).second) {
      config.problems.push_back("capability list loops at " + hex(offset, 2));
      return;
    }
    if (offset < kPciHeaderBytes || offset + 2 > kPciConfigBytes) {
      config.problems.push_back("capability pointer " + hex(offset, 2) + " is outside 0x40..0xff");
      return;
    }
    if (offset + 2 > config.bytes.size()) {
      config.problems.push_back("capability list continues at " + hex(offset, 2) + " beyond the " +
                                std::to_string(config.bytes.size()) +
                                " bytes read (an unprivileged read stops at 64)");
      return;
    }
    PciCapability cap;
    cap.id = static_cast<uint8_t>(config.bytes[offset]);
    cap.offset = static_cast<uint16_t>(offset);
    config.capabilities.push_back(cap);
    offset = static_cast<uint8_t>(config.bytes[offset + 1]) & 0xfc;
  }
}

void walkExtended(PciConfigSpace& config) {
  if (!config.hasExtendedSpace()) return;
  size_t offset = kExtendedStart;
  std::set<size_t> seen;
  for (int step = 0; offset != 0; ++step) {
    if (step >= kMaxExtendedCapabilities || !seen.insert(offset).second) {
      config.problems.push_back("extended capability list loops at " + hex(offset, 3));
      return;
    }
    if (offset < kExtendedStart || offset + 4 > kPcieConfigBytes) {
      config.problems.push_back("extended capability pointer " + hex(offset, 3) +
                                " is outside 0x100..0xffc");
      return;
    }
    std::optional<uint32_t> header = config.read32(offset);
    if (!header) {
      config.problems.push_back("extended capability list continues at " + hex(offset, 3) +
                                " beyond the " + std::to_string(config.bytes.size()) +
                                " bytes read");
      return;
    }
    // An empty list reads as 0; a function that does not answer reads as all ones.
    if (offset == kExtendedStart && (*header == 0 || *header == 0xffffffffu)) return;
    if (*header == 0xffffffffu) {
      config.problems.push_back("extended capability at " + hex(offset, 3) + " reads all ones");
      return;
    }
    PciCapability cap;
    cap.id = static_cast<uint16_t>(*header & 0xffff);
    cap.version = static_cast<uint8_t>((*header >> 16) & 0xf);
    cap.offset = static_cast<uint16_t>(offset);
    config.extended.push_back(cap);
    offset = (*header >> 20) & 0xffc;
  }
}

}  // namespace

const char* portTypeName(PciePortType type) {
  switch (type) {
    case PciePortType::Endpoint:
      return "endpoint";
    case PciePortType::RootPort:
      return "root port";
    case PciePortType::SwitchUpstream:
      return "switch upstream port";
    case PciePortType::SwitchDownstream:
      return "switch downstream port";
    case PciePortType::Other:
      break;
  }
  return "other PCIe function";
}

std::string describeAcsBits(uint16_t bits) {
  static const struct {
    uint16_t bit;
    const char* name;
  } kNames[] = {{acs::kSourceValidation, "SrcValid"},      {acs::kTranslationBlocking, "TransBlk"},
                {acs::kRequestRedirect, "ReqRedir"},       {acs::kCompletionRedirect, "CmpltRedir"},
                {acs::kUpstreamForwarding, "UpstreamFwd"}, {acs::kEgressControl, "EgressCtrl"},
                {acs::kDirectTranslated, "DirectTrans"}};
  std::string out;
  for (const auto& n : kNames) {
    if (!out.empty()) out += ' ';
    out += n.name;
    out += (bits & n.bit) ? '+' : '-';
  }
  return out;
}

std::optional<uint16_t> PciConfigSpace::read16(size_t offset) const {
  if (offset > bytes.size() || bytes.size() - offset < 2) return std::nullopt;
  return static_cast<uint16_t>(static_cast<uint8_t>(bytes[offset]) |
                               static_cast<uint8_t>(bytes[offset + 1]) << 8);
}

std::optional<uint32_t> PciConfigSpace::read32(size_t offset) const {
  std::optional<uint16_t> lo = read16(offset);
  std::optional<uint16_t> hi = read16(offset + 2);
  if (!lo || !hi) return std::nullopt;
  return static_cast<uint32_t>(*lo) | static_cast<uint32_t>(*hi) << 16;
}

const PciCapability* PciConfigSpace::find(uint16_t id) const {
  auto it = std::find_if(capabilities.begin(), capabilities.end(),
                         [id](const PciCapability& c) { return c.id == id; });
  return it == capabilities.end() ? nullptr : &*it;
}

const PciCapability* PciConfigSpace::findExtended(uint16_t id) const {
  auto it = std::find_if(extended.begin(), extended.end(),
                         [id](const PciCapability& c) { return c.id == id; });
  return it == extended.end() ? nullptr : &*it;
}

Expected<PciConfigSpace> parsePciConfig(std::string_view bytes) {
  if (bytes.size() < kPciHeaderBytes) {
    return Error{"config space is " + std::to_string(bytes.size()) +
                 " bytes, shorter than the 64-byte header"};
  }
  PciConfigSpace config;
  config.bytes.assign(bytes.substr(0, std::min(bytes.size(), kPcieConfigBytes)));
  config.vendor = *config.read16(0);
  config.device = *config.read16(2);
  if (config.vendor == 0xffff || config.vendor == 0x0000) {
    return Error{"config space vendor id is " + hex(config.vendor, 4) + ": nothing answered"};
  }
  config.headerType = static_cast<uint8_t>(config.bytes[kHeaderTypeRegister]);
  walkStandard(config);
  walkExtended(config);
  return config;
}

std::optional<PcieCapability> pcieCapability(const PciConfigSpace& config) {
  const PciCapability* cap = config.find(kCapPcie);
  if (cap == nullptr) return std::nullopt;
  std::optional<uint16_t> flags = config.read16(cap->offset + 0x02u);
  std::optional<uint32_t> linkCap = config.read32(cap->offset + 0x0cu);
  std::optional<uint16_t> linkStatus = config.read16(cap->offset + 0x12u);
  if (!flags || !linkCap || !linkStatus) return std::nullopt;
  PcieCapability pcie;
  switch ((*flags >> 4) & 0xf) {
    case 0x0:
    case 0x1:
      pcie.portType = PciePortType::Endpoint;
      break;
    case 0x4:
      pcie.portType = PciePortType::RootPort;
      break;
    case 0x5:
      pcie.portType = PciePortType::SwitchUpstream;
      break;
    case 0x6:
      pcie.portType = PciePortType::SwitchDownstream;
      break;
    default:
      pcie.portType = PciePortType::Other;
  }
  auto generation = [](unsigned code) {
    return code >= 1 && code <= 6 ? static_cast<int>(code) : 0;
  };
  pcie.maxGeneration = generation(*linkCap & 0xf);
  pcie.maxWidth = static_cast<int>((*linkCap >> 4) & 0x3f);
  pcie.currentGeneration = generation(*linkStatus & 0xf);
  pcie.currentWidth = static_cast<int>((*linkStatus >> 4) & 0x3f);
  return pcie;
}

std::optional<AcsRegisters> acsRegisters(const PciConfigSpace& config) {
  const PciCapability* cap = config.findExtended(kExtCapAcs);
  if (cap == nullptr) return std::nullopt;
  std::optional<uint16_t> capability = config.read16(cap->offset + 4u);
  std::optional<uint16_t> control = config.read16(cap->offset + 6u);
  if (!capability || !control) return std::nullopt;
  return AcsRegisters{cap->offset, *capability, *control};
}

std::optional<AtsRegisters> atsRegisters(const PciConfigSpace& config) {
  const PciCapability* cap = config.findExtended(kExtCapAts);
  if (cap == nullptr) return std::nullopt;
  std::optional<uint16_t> control = config.read16(cap->offset + 6u);
  if (!control) return std::nullopt;
  return AtsRegisters{cap->offset, (*control & 0x8000u) != 0};
}

}  // namespace pilot::doctor
