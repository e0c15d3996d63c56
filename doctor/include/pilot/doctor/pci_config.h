// A PCI function's configuration space as sysfs hands it out (/sys/bus/pci/devices/BDF/config):
// the 64-byte header, the capability list it points to (from 0x34) and the PCIe extended
// capability list from 0x100. The bytes are hostile input: a recorded tree may hold anything, an
// unprivileged read stops at 64 bytes, a device may return all ones. Every pointer is bounded,
// every list walk has a step limit, and nothing here reads past what was given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/core/result.h"

namespace pilot::doctor {

/// Sizes the kernel hands out: the header an unprivileged reader sees, conventional PCI
/// config space, PCIe extended config space.
constexpr size_t kPciHeaderBytes = 64;
constexpr size_t kPciConfigBytes = 256;
constexpr size_t kPcieConfigBytes = 4096;

/// Capability ids (PCI Local Bus spec, PCIe base spec).
constexpr uint16_t kCapPcie = 0x10;      ///< PCI Express capability (standard list)
constexpr uint16_t kExtCapAcs = 0x000D;  ///< Access Control Services (extended list)
constexpr uint16_t kExtCapAts = 0x000F;  ///< Address Translation Services (extended list)

struct PciCapability {
  uint16_t id = 0;
  uint16_t offset = 0;  ///< where its header sits in config space
  uint8_t version = 0;  ///< extended capabilities only
};

/// The PCIe capability's Device/Port Type field.
enum class PciePortType {
  Endpoint,          ///< 0x0 (and 0x1, legacy endpoint)
  RootPort,          ///< 0x4
  SwitchUpstream,    ///< 0x5
  SwitchDownstream,  ///< 0x6
  Other,             ///< bridges to PCI, root complex integrated endpoints, event collectors
};
const char* portTypeName(PciePortType type);

struct PcieCapability {
  PciePortType portType = PciePortType::Other;
  /// Link Capabilities (max) and Link Status (current): generation 1..6 and lanes; 0 = none.
  int maxGeneration = 0, maxWidth = 0;
  int currentGeneration = 0, currentWidth = 0;
};

/// ACS capability and control registers (offsets +4 and +6 of the capability). Both use the
/// same bit layout: bit 0 source validation, 1 translation blocking, 2 P2P request redirect,
/// 3 P2P completion redirect, 4 upstream forwarding, 5 P2P egress control, 6 direct translated P2P.
struct AcsRegisters {
  uint16_t offset = 0;  ///< of the capability header
  uint16_t capability = 0;
  uint16_t control = 0;
};
namespace acs {
constexpr uint16_t kSourceValidation = 1u << 0;
constexpr uint16_t kTranslationBlocking = 1u << 1;
constexpr uint16_t kRequestRedirect = 1u << 2;
constexpr uint16_t kCompletionRedirect = 1u << 3;
constexpr uint16_t kUpstreamForwarding = 1u << 4;
constexpr uint16_t kEgressControl = 1u << 5;
constexpr uint16_t kDirectTranslated = 1u << 6;
/// The bits that send peer-to-peer traffic up to the root complex (or validate it there):
/// what NVIDIA's guidance says to clear on bare metal.
constexpr uint16_t kRedirectingBits = kSourceValidation | kRequestRedirect | kCompletionRedirect |
                                      kUpstreamForwarding | kEgressControl;
}  // namespace acs

/// lspci's spelling of the seven bits: "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+
/// UpstreamFwd+ EgressCtrl- DirectTrans-".
std::string describeAcsBits(uint16_t bits);

struct AtsRegisters {
  uint16_t offset = 0;
  bool enabled = false;  ///< ATS Control bit 15
};

/// What could be read. `problems` says what was wrong with the bytes (a pointer out of range, a
/// loop, a truncated list), one line each, so a caller can show why a capability is missing.
struct PciConfigSpace {
  std::string bytes;  ///< at most kPcieConfigBytes, as given
  uint16_t vendor = 0, device = 0;
  uint8_t headerType = 0;  ///< bits 0..6: 0 endpoint, 1 PCI-to-PCI bridge, 2 CardBus
  std::vector<PciCapability> capabilities;  ///< standard list, in list order
  std::vector<PciCapability> extended;      ///< extended list, in list order
  std::vector<std::string> problems;

  /// Whether the extended list could be read at all (the bytes reach past 0x100).
  bool hasExtendedSpace() const { return bytes.size() > kPciConfigBytes; }
  std::optional<uint16_t> read16(size_t offset) const;
  std::optional<uint32_t> read32(size_t offset) const;
  const PciCapability* find(uint16_t id) const;          ///< standard list
  const PciCapability* findExtended(uint16_t id) const;  ///< extended list
};

/// Fails (with the reason) when there is not even a header: fewer than 64 bytes, or a vendor id
/// of 0xffff / 0x0000 (nothing answered). Lists that cannot be walked give problems, not errors.
Expected<PciConfigSpace> parsePciConfig(std::string_view bytes);

/// The PCIe capability, when the standard list has one that fits in the bytes.
std::optional<PcieCapability> pcieCapability(const PciConfigSpace& config);
/// The ACS registers, when the extended list has an ACS capability whose registers fit.
std::optional<AcsRegisters> acsRegisters(const PciConfigSpace& config);
std::optional<AtsRegisters> atsRegisters(const PciConfigSpace& config);

}  // namespace pilot::doctor
