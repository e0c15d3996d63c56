// NCCL's device-list syntax (NCCL_SOCKET_IFNAME, NCCL_IB_HCA): prefixes, '^', '=', ports.
#include "pilot/core/nccl_list.h"

#include <gtest/gtest.h>

namespace pilot {
namespace {

TEST(NcclNameList, EmptyMatchesEverything) {
  EXPECT_TRUE(NcclNameList::parse("").matches("eth0"));
}

TEST(NcclNameList, PrefixesExclusionAndExactNames) {
  const NcclNameList prefixes = NcclNameList::parse("eth,ens");
  EXPECT_TRUE(prefixes.matches("eth0"));
  EXPECT_TRUE(prefixes.matches("ens3"));
  EXPECT_FALSE(prefixes.matches("ib0"));
  const NcclNameList excluded = NcclNameList::parse("^docker,lo");
  EXPECT_FALSE(excluded.matches("docker0"));
  EXPECT_FALSE(excluded.matches("lo"));
  EXPECT_TRUE(excluded.matches("eth0"));
  const NcclNameList exact = NcclNameList::parse("=eth0");
  EXPECT_TRUE(exact.matches("eth0"));
  EXPECT_FALSE(exact.matches("eth01"));
  const NcclNameList both = NcclNameList::parse("^=mlx5_1");
  EXPECT_TRUE(both.matches("mlx5_10"));
  EXPECT_FALSE(both.matches("mlx5_1"));
}

TEST(NcclNameList, PortsNarrowAnEntry) {
  const NcclNameList list = NcclNameList::parse("mlx5_0:1, mlx5_1");
  ASSERT_EQ(list.entries.size(), 2u);
  EXPECT_EQ(list.entries[0].port, 1);
  EXPECT_EQ(list.entries[1].name, "mlx5_1");
  EXPECT_EQ(list.entries[1].port, -1);
  EXPECT_TRUE(list.matches("mlx5_0", 1));
  EXPECT_FALSE(list.matches("mlx5_0", 2));
  EXPECT_TRUE(list.matches("mlx5_1", 2));
  EXPECT_TRUE(list.matches("mlx5_0"));  // no port asked: the name decides (IP interfaces)
  EXPECT_EQ(NcclNameList::parse("mlx5_0:x").entries[0].port, -1);  // unreadable port: any
}

}  // namespace
}  // namespace pilot
