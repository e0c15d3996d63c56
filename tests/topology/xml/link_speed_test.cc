// NCCL's link_speed vocabulary and the NIC bus id NCCL uses.
#include <gtest/gtest.h>

#include "pilot/topology/nccl_xml.h"

namespace pilot::topology {
namespace {

TEST(LinkSpeed, GenerationsSpellLikeKernel57AndLater) {
  EXPECT_STREQ(ncclLinkSpeed(1), "2.5 GT/s PCIe");
  EXPECT_STREQ(ncclLinkSpeed(2), "5.0 GT/s PCIe");
  EXPECT_STREQ(ncclLinkSpeed(3), "8.0 GT/s PCIe");
  EXPECT_STREQ(ncclLinkSpeed(4), "16.0 GT/s PCIe");
  EXPECT_STREQ(ncclLinkSpeed(5), "32.0 GT/s PCIe");
  EXPECT_STREQ(ncclLinkSpeed(6), "64.0 GT/s PCIe");
  EXPECT_STREQ(ncclLinkSpeed(0), "");
  EXPECT_STREQ(ncclLinkSpeed(7), "");
  EXPECT_STREQ(ncclLinkSpeed(-1), "");
  for (int g = 1; g <= 6; ++g) EXPECT_EQ(parseLinkSpeedGeneration(ncclLinkSpeed(g)), g);
}

TEST(LinkSpeed, ParsesWithNcclsPrefixMatch) {
  // Kernel <= 5.6 spelling.
  EXPECT_EQ(parseLinkSpeedGeneration("2.5 GT/s"), 1);
  EXPECT_EQ(parseLinkSpeedGeneration("5 GT/s"), 2);
  EXPECT_EQ(parseLinkSpeedGeneration("8 GT/s"), 3);
  EXPECT_EQ(parseLinkSpeedGeneration("16 GT/s"), 4);
  EXPECT_EQ(parseLinkSpeedGeneration("32 GT/s"), 5);
  // A prefix is enough: aws' p5 file says "32 GT/s PCIe/s".
  EXPECT_EQ(parseLinkSpeedGeneration("32 GT/s PCIe/s"), 5);
  EXPECT_EQ(parseLinkSpeedGeneration("8.0 GT/s PCIe trailing"), 3);
  // Not in NCCL's table: NCCL falls back to Gen3 with an INFO line; we say "unknown".
  EXPECT_EQ(parseLinkSpeedGeneration("64 GT/s"), 0);
  EXPECT_EQ(parseLinkSpeedGeneration("64 GT/s PCIe"), 0);
  EXPECT_EQ(parseLinkSpeedGeneration("5.0 GT/s"), 0);
  EXPECT_EQ(parseLinkSpeedGeneration("Unknown"), 0);
  EXPECT_EQ(parseLinkSpeedGeneration(""), 0);
  EXPECT_EQ(parseLinkSpeedGeneration(" 8 GT/s"), 0);
  EXPECT_EQ(parseLinkSpeedGeneration("8 gt/s"), 0);
  EXPECT_EQ(parseLinkSpeedGeneration("31.5"), 0);  // hwloc's linkspeed is GB/s, not this
}

TEST(NicBusId, FunctionForcedToZero) {
  const BusId port2 = *BusId::parse("0000:16:00.1");
  EXPECT_EQ(ncclNicBusId(port2).str(), "0000:16:00.0");
  EXPECT_EQ(ncclNicBusId(*BusId::parse("0001:a3:02.7")).str(), "0001:a3:02.0");
  EXPECT_EQ(ncclNicBusId(*BusId::parse("0000:16:00.0")), *BusId::parse("0000:16:00.0"));
}

TEST(Limits, OurNodeCapLeavesRoomForNccl) {
  EXPECT_EQ(kNcclMaxXmlNodes, 256);
  EXPECT_LT(kMaxXmlNodes, kNcclMaxXmlNodes);
}

}  // namespace
}  // namespace pilot::topology
