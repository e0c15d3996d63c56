// libFuzzer target: arbitrary bytes as a PCI configuration space (what sysfs `config` files of a
// recorded tree, or a misbehaving device, may hold). For every input:
//  1. parsing neither crashes nor reads past the bytes (ASan/UBSan watch), and is deterministic;
//  2. every capability found lies inside the bytes: standard ones in 0x40..0xff, extended ones
//     in 0x100..0xffc; a list cut short says why; the lists are bounded (48, 480 entries);
//  3. the decoded registers are in range: generations 0..6, widths 0..63, ACS registers inside.
// Any violation aborts with the details on stderr.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pilot/doctor/pci_config.h"

using namespace pilot::doctor;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "pci_config_fuzz: %s\n", what.c_str());
  std::abort();
}

void check(const PciConfigSpace& c, std::string_view input) {
  const size_t size = c.bytes.size();
  if (size > kPcieConfigBytes || size != std::min(input.size(), kPcieConfigBytes))
    die("kept " + std::to_string(size) + " of " + std::to_string(input.size()) + " bytes");
  if (c.capabilities.size() > 48) die("standard list not bounded");
  if (c.extended.size() > 480) die("extended list not bounded");
  for (const PciCapability& cap : c.capabilities) {
    if (cap.offset < 0x40 || cap.offset > 0xfe || cap.offset + 2u > size)
      die("standard capability at " + std::to_string(cap.offset) + " outside the bytes");
  }
  for (const PciCapability& cap : c.extended) {
    if (cap.offset < 0x100 || cap.offset > 0xffc || cap.offset + 4u > size)
      die("extended capability at " + std::to_string(cap.offset) + " outside the bytes");
  }
  if (auto pcie = pcieCapability(c)) {
    if (pcie->maxGeneration < 0 || pcie->maxGeneration > 6 || pcie->currentGeneration < 0 ||
        pcie->currentGeneration > 6 || pcie->maxWidth > 63 || pcie->currentWidth > 63)
      die("PCIe link fields out of range");
  }
  if (auto acs = acsRegisters(c)) {
    if (acs->offset + 8u > size) die("ACS registers outside the bytes");
    if (describeAcsBits(acs->control).size() < 7 * 9) die("ACS description too short");
  }
  if (auto ats = atsRegisters(c)) {
    if (ats->offset + 8u > size) die("ATS registers outside the bytes");
  }
  for (const std::string& p : c.problems) {
    if (p.empty() || p.size() > 200)
      die("a problem line of " + std::to_string(p.size()) + " chars");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  pilot::Expected<PciConfigSpace> a = parsePciConfig(input);
  pilot::Expected<PciConfigSpace> b = parsePciConfig(input);
  if (a.ok() != b.ok()) die("parsing is not deterministic");
  if (!a.ok()) {
    if (a.error().empty()) die("an error without a reason");
    const unsigned vendor =
        size >= 2 ? static_cast<unsigned>(data[0]) | static_cast<unsigned>(data[1]) << 8 : 0;
    if (size >= kPciHeaderBytes && vendor != 0x0000 && vendor != 0xffff)
      die("a full header was refused: " + a.error());
    return 0;
  }
  if (a->capabilities.size() != b->capabilities.size() ||
      a->extended.size() != b->extended.size() || a->problems != b->problems)
    die("parsing is not deterministic");
  check(*a, input);
  return 0;
}
