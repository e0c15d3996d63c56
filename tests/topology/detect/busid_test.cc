#include <gtest/gtest.h>

#include "pilot/topology/model.h"

namespace pilot::topology {
namespace {

TEST(BusId, ParsesNcclSpellingAndRoundTrips) {
  auto id = BusId::parse("0000:3b:00.0");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->domain, 0u);
  EXPECT_EQ(id->bus, 0x3b);
  EXPECT_EQ(id->device, 0);
  EXPECT_EQ(id->function, 0);
  EXPECT_EQ(id->str(), "0000:3b:00.0");
  for (const char* text : {"0000:00:00.0", "ffff:ff:1f.7", "0001:c1:0a.3", "00a1:9b:00.1"}) {
    auto parsed = BusId::parse(text);
    ASSERT_TRUE(parsed) << text;
    EXPECT_EQ(parsed->str(), text);
  }
}

TEST(BusId, AcceptsNvmlEightDigitDomainsAndUppercase) {
  auto id = BusId::parse("00000000:3B:00.0");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->str(), "0000:3b:00.0");
  EXPECT_EQ(BusId::parse("0000:C1:1F.7")->str(), "0000:c1:1f.7");
  EXPECT_EQ(BusId::parse("0000FFFF:01:00.0")->str(), "ffff:01:00.0");
}

TEST(BusId, RejectsDomainsAboveFfff) {
  EXPECT_FALSE(BusId::parse("10000:00:00.0"));     // VMD
  EXPECT_FALSE(BusId::parse("00010000:e1:00.0"));  // the same, NVML-style
}

TEST(BusId, RejectsMalformedText) {
  for (const char* text :
       {"", "3b:00.0", "0000:3b:00", "0000:3b:00.", "0000:3b:0.0", "0000:3b:000.0", "0000:3b:20.0",
        "0000:3b:00.8", "0000:3g:00.0", " 0000:3b:00.0", "0000:3b:00.0 ", "000000000:3b:00.0",
        ":3b:00.0", "0000-3b:00.0", "0000:3b.00.0"}) {
    EXPECT_FALSE(BusId::parse(text)) << "'" << text << "'";
  }
}

TEST(BusId, OrdersByDomainBusDeviceFunction) {
  auto a = *BusId::parse("0000:3b:00.0");
  auto b = *BusId::parse("0000:3b:00.1");
  auto c = *BusId::parse("0000:3c:00.0");
  auto d = *BusId::parse("0001:00:00.0");
  EXPECT_TRUE(a < b);
  EXPECT_TRUE(b < c);
  EXPECT_TRUE(c < d);
  EXPECT_FALSE(b < a);
  EXPECT_FALSE(a < a);
  EXPECT_EQ(a, *BusId::parse("00000000:3B:00.0"));
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace pilot::topology
