// The configuration-space parser on the recorded trees' bytes and on hostile ones: truncated,
// header-only (an unprivileged read), all ones, looping lists, pointers out of range.
#include "pilot/doctor/pci_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace pilot::doctor {
namespace {

std::string configOf(const std::string& tree, const std::string& bdf) {
  std::ifstream f(
      std::string(PILOT_DOCTOR_DATA) + "/" + tree + "/sys/bus/pci/devices/" + bdf + "/config",
      std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string blank(size_t size) {
  std::string b(size, '\0');
  b[0] = '\x86';  // vendor 0x8086
  b[1] = '\x80';
  return b;
}

void put16(std::string& b, size_t off, uint16_t v) {
  b[off] = static_cast<char>(v & 0xff);
  b[off + 1] = static_cast<char>(v >> 8);
}
void put32(std::string& b, size_t off, uint32_t v) {
  put16(b, off, static_cast<uint16_t>(v & 0xffff));
  put16(b, off + 2, static_cast<uint16_t>(v >> 16));
}

TEST(PciConfig, AcsOnTheSwitchPortAboveTheFaultyGpu) {
  const std::string bytes = configOf("baremetal-faulty", "0000:17:00.0");
  ASSERT_EQ(bytes.size(), 4096u);
  Expected<PciConfigSpace> config = parsePciConfig(bytes);
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->vendor, 0x1000);
  EXPECT_EQ(config->device, 0xc030);
  EXPECT_EQ(config->headerType & 0x7f, 1);
  EXPECT_TRUE(config->problems.empty());
  std::optional<PcieCapability> pcie = pcieCapability(*config);
  ASSERT_TRUE(pcie);
  EXPECT_EQ(pcie->portType, PciePortType::SwitchDownstream);
  EXPECT_EQ(pcie->maxGeneration, 5);
  EXPECT_EQ(pcie->maxWidth, 16);
  std::optional<AcsRegisters> acs = acsRegisters(*config);
  ASSERT_TRUE(acs);
  EXPECT_EQ(acs->offset, 0x148);
  EXPECT_EQ(acs->capability, 0x005f);
  EXPECT_EQ(acs->control, acs::kSourceValidation | acs::kRequestRedirect |
                              acs::kCompletionRedirect | acs::kUpstreamForwarding);
  EXPECT_EQ(describeAcsBits(acs->control),
            "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-");
}

TEST(PciConfig, RepairedPortHasAcsOffAndTheNicItsLinkStatus) {
  Expected<PciConfigSpace> port = parsePciConfig(configOf("baremetal-repaired", "0000:17:00.0"));
  ASSERT_TRUE(port.ok());
  ASSERT_TRUE(acsRegisters(*port));
  EXPECT_EQ(acsRegisters(*port)->control, 0);
  // The faulty NIC's Link Status agrees with its sysfs files: x8 of x16 at Gen5.
  Expected<PciConfigSpace> nic = parsePciConfig(configOf("baremetal-faulty", "0000:19:00.0"));
  ASSERT_TRUE(nic.ok());
  std::optional<PcieCapability> pcie = pcieCapability(*nic);
  ASSERT_TRUE(pcie);
  EXPECT_EQ(pcie->portType, PciePortType::Endpoint);
  EXPECT_EQ(pcie->currentWidth, 8);
  EXPECT_EQ(pcie->maxWidth, 16);
  EXPECT_EQ(pcie->currentGeneration, 5);
  std::optional<AtsRegisters> ats = atsRegisters(*nic);
  ASSERT_TRUE(ats);
  EXPECT_FALSE(ats->enabled);
  EXPECT_FALSE(acsRegisters(*nic));
  // Upstream ports carry no ACS capability.
  Expected<PciConfigSpace> up = parsePciConfig(configOf("baremetal-faulty", "0000:16:00.0"));
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(pcieCapability(*up)->portType, PciePortType::SwitchUpstream);
  EXPECT_FALSE(acsRegisters(*up));
}

TEST(PciConfig, HeaderOnlyReadHasNoExtendedSpaceAndSaysWhereTheListStops) {
  Expected<PciConfigSpace> c = parsePciConfig(configOf("baremetal-broken-config", "0000:17:00.0"));
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->bytes.size(), 64u);
  EXPECT_FALSE(c->hasExtendedSpace());
  EXPECT_FALSE(acsRegisters(*c));
  ASSERT_EQ(c->problems.size(), 1u);
  EXPECT_NE(c->problems[0].find("beyond the 64 bytes read"), std::string::npos) << c->problems[0];
}

TEST(PciConfig, TruncatedAndSilentSpacesAreErrors) {
  Expected<PciConfigSpace> shortOne =
      parsePciConfig(configOf("baremetal-broken-config", "0000:17:01.0"));
  ASSERT_FALSE(shortOne.ok());
  EXPECT_EQ(shortOne.error(), "config space is 37 bytes, shorter than the 64-byte header");
  Expected<PciConfigSpace> ones =
      parsePciConfig(configOf("baremetal-broken-config", "0000:99:01.0"));
  ASSERT_FALSE(ones.ok());
  EXPECT_EQ(ones.error(), "config space vendor id is 0xffff: nothing answered");
  EXPECT_FALSE(parsePciConfig("").ok());
}

TEST(PciConfig, LoopingListsStopWithAProblem) {
  Expected<PciConfigSpace> c = parsePciConfig(configOf("baremetal-broken-config", "0000:99:00.0"));
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_EQ(c->problems.size(), 2u);
  EXPECT_EQ(c->problems[0], "capability list loops at 0x40");
  EXPECT_EQ(c->problems[1], "extended capability list loops at 0x100");
  EXPECT_EQ(c->capabilities.size(), 1u);
  EXPECT_EQ(c->extended.size(), 1u);
}

TEST(PciConfig, PointersOutOfRange) {
  std::string b = blank(4096);
  put16(b, 0x06, 0x0010);
  b[0x34] = 0x20;                                         // inside the header
  put32(b, 0x100, 0x000d | (1u << 16) | (0x040u << 20));  // ACS, then a pointer below 0x100
  Expected<PciConfigSpace> c = parsePciConfig(b);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->problems.size(), 2u);
  EXPECT_EQ(c->problems[0], "capability pointer 0x20 is outside 0x40..0xff");
  EXPECT_EQ(c->problems[1], "extended capability pointer 0x040 is outside 0x100..0xffc");
  ASSERT_TRUE(acsRegisters(*c));  // the ACS entry before the bad pointer still counts
  // An ACS header in the last dword: its registers do not fit.
  std::string tail = blank(4096);
  put32(tail, 0x100, 0x0001 | (1u << 16) | (0xffcu << 20));
  put32(tail, 0xffc, 0x000d | (1u << 16));
  Expected<PciConfigSpace> t = parsePciConfig(tail);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->findExtended(kExtCapAcs));
  EXPECT_FALSE(acsRegisters(*t));
}

TEST(PciConfig, ConventionalSpaceAndEmptyExtendedList) {
  std::string b = blank(256);
  Expected<PciConfigSpace> c = parsePciConfig(b);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->hasExtendedSpace());
  EXPECT_TRUE(c->capabilities.empty());  // status says there is no list
  std::string e = blank(4096);
  Expected<PciConfigSpace> empty = parsePciConfig(e);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->extended.empty());
  EXPECT_TRUE(empty->problems.empty());
  put32(e, 0x100, 0xffffffffu);
  EXPECT_TRUE(parsePciConfig(e)->extended.empty());
  // Longer than 4096 bytes: the rest is not config space.
  EXPECT_EQ(parsePciConfig(blank(5000))->bytes.size(), 4096u);
}

TEST(PciConfig, NoiseNeverReadsPastTheBytes) {
  // A deterministic sweep of sizes and noise: every capability found lies inside the bytes.
  uint32_t x = 7;
  for (size_t size : {0u, 1u, 63u, 64u, 65u, 255u, 256u, 257u, 300u, 4095u, 4096u}) {
    for (int round = 0; round < 50; ++round) {
      std::string b(size, '\0');
      for (char& c : b) {
        x = x * 1103515245u + 12345u;
        c = static_cast<char>(x >> 16);
      }
      if (size >= 2) b[0] = '\x01';
      Expected<PciConfigSpace> c = parsePciConfig(b);
      if (!c.ok()) continue;
      for (const PciCapability& cap : c->capabilities) EXPECT_LE(cap.offset + 2u, b.size());
      for (const PciCapability& cap : c->extended) EXPECT_LE(cap.offset + 4u, b.size());
      if (auto acs = acsRegisters(*c)) {
        EXPECT_LE(acs->offset + 8u, b.size());
      }
      (void)pcieCapability(*c);
      (void)atsRegisters(*c);
    }
  }
}

}  // namespace
}  // namespace pilot::doctor
