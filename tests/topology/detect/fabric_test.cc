// The fabric NCCL's data will cross (topology/fabric.h): from recorded trees and from port lists
// built here, with NCCL's switches (NCCL_IB_DISABLE, NCCL_NET, NCCL_IB_HCA).
#include "pilot/topology/fabric.h"

#include <gtest/gtest.h>

#include <map>

#include "test_support.h"

namespace pilot::topology {
namespace {

EnvLookup envOf(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

RdmaPort port(const std::string& device, int number, const std::string& state,
              const std::string& linkLayer) {
  RdmaPort p;
  p.device = device;
  p.port = number;
  p.state = state;
  p.linkLayer = linkLayer;
  return p;
}

TEST(Fabric, NamesRoundTrip) {
  for (Fabric f : {Fabric::InfiniBand, Fabric::RoCE, Fabric::Ethernet}) {
    EXPECT_EQ(parseFabric(fabricName(f)), f);
  }
  EXPECT_EQ(parseFabric("InfiniBand"), Fabric::InfiniBand);
  EXPECT_EQ(parseFabric(" ETH "), Fabric::Ethernet);
  EXPECT_EQ(parseFabric("omnipath"), std::nullopt);
  EXPECT_EQ(parseFabric(""), std::nullopt);
}

TEST(Fabric, RecordedBareMetalIbPortsAreInfiniBand) {
  const std::vector<RdmaPort> ports =
      listRdmaPorts(SysfsRoot(testing::dataRoot("baremetal-2gpu-2nic-switch")));
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].device, "mlx5_0");
  EXPECT_EQ(ports[0].port, 1);
  EXPECT_EQ(ports[0].state, "ACTIVE");
  EXPECT_EQ(ports[0].linkLayer, "InfiniBand");
  const FabricChoice c = chooseFabric(ports, envOf({}));
  EXPECT_TRUE(c.rdma);
  EXPECT_EQ(c.fabric, Fabric::InfiniBand);
  EXPECT_EQ(c.why, "mlx5_0 port 1 ACTIVE, InfiniBand");
}

TEST(Fabric, RecordedKvmRoceVfsAreRoce) {
  const FabricChoice c =
      detectFabric(envOf({{"NCCL_PILOT_SYSFS_ROOT", testing::dataRoot("kvm-flat-2gpu-2nic")}}));
  EXPECT_TRUE(c.rdma);
  EXPECT_EQ(c.fabric, Fabric::RoCE);
  EXPECT_EQ(c.why, "mlx5_0 port 1 ACTIVE, Ethernet");
}

TEST(Fabric, NoRdmaDeviceIsEthernet) {
  const FabricChoice c = chooseFabric({}, envOf({}));
  EXPECT_FALSE(c.rdma);
  EXPECT_EQ(c.fabric, Fabric::Ethernet);
  EXPECT_EQ(c.why, "no RDMA device");
  // A root without sys/class/infiniband at all reads the same.
  EXPECT_TRUE(listRdmaPorts(SysfsRoot(testing::dataRoot("nonexistent"))).empty());
}

TEST(Fabric, PortsDownAreEthernetAndSaySo) {
  const FabricChoice c = chooseFabric(
      {port("mlx5_0", 1, "DOWN", "InfiniBand"), port("mlx5_1", 1, "INIT", "InfiniBand")},
      envOf({}));
  EXPECT_FALSE(c.rdma);
  EXPECT_EQ(c.fabric, Fabric::Ethernet);
  EXPECT_EQ(c.why,
            "no RDMA port ACTIVE (mlx5_0 port 1 DOWN, InfiniBand; mlx5_1 port 1 INIT, InfiniBand)");
}

TEST(Fabric, IbIsPreferredOverRoceWhenBothAreActive) {
  const FabricChoice c = chooseFabric(
      {port("mlx5_0", 1, "ACTIVE", "Ethernet"), port("mlx5_1", 1, "ACTIVE", "InfiniBand")},
      envOf({}));
  EXPECT_EQ(c.fabric, Fabric::InfiniBand);
  EXPECT_EQ(c.why, "mlx5_1 port 1 ACTIVE, InfiniBand");
}

TEST(Fabric, IbDisableKeepsNcclOffRdma) {
  const std::vector<RdmaPort> ports = {port("mlx5_0", 1, "ACTIVE", "InfiniBand")};
  const FabricChoice off = chooseFabric(ports, envOf({{"NCCL_IB_DISABLE", "1"}}));
  EXPECT_FALSE(off.rdma);
  EXPECT_EQ(off.fabric, Fabric::Ethernet);
  EXPECT_EQ(off.why, "NCCL_IB_DISABLE=1: NCCL's IB transport is off");
  EXPECT_TRUE(chooseFabric(ports, envOf({{"NCCL_IB_DISABLE", "0"}})).rdma);
  EXPECT_TRUE(chooseFabric(ports, envOf({{"NCCL_IB_DISABLE", "no"}})).rdma);  // not a number
}

TEST(Fabric, NcclNetOtherThanIbKeepsNcclOffRdma) {
  const std::vector<RdmaPort> ports = {port("mlx5_0", 1, "ACTIVE", "InfiniBand")};
  EXPECT_FALSE(chooseFabric(ports, envOf({{"NCCL_NET", "Socket"}})).rdma);
  EXPECT_FALSE(chooseFabric(ports, envOf({{"NCCL_NET", "Pilot"}})).rdma);
  EXPECT_TRUE(chooseFabric(ports, envOf({{"NCCL_NET", "IB"}})).rdma);
  EXPECT_TRUE(chooseFabric(ports, envOf({{"NCCL_NET", "ib"}})).rdma);
}

TEST(Fabric, IbHcaSelectsThePortsNcclWouldUse) {
  const std::vector<RdmaPort> ports = {port("mlx5_0", 1, "ACTIVE", "InfiniBand"),
                                       port("mlx5_1", 1, "DOWN", "InfiniBand"),
                                       port("mlx5_1", 2, "ACTIVE", "Ethernet")};
  EXPECT_EQ(chooseFabric(ports, envOf({{"NCCL_IB_HCA", "mlx5_0"}})).fabric, Fabric::InfiniBand);
  EXPECT_EQ(chooseFabric(ports, envOf({{"NCCL_IB_HCA", "^mlx5_0"}})).fabric, Fabric::RoCE);
  EXPECT_EQ(chooseFabric(ports, envOf({{"NCCL_IB_HCA", "=mlx5_1:2"}})).fabric, Fabric::RoCE);
  const FabricChoice down = chooseFabric(ports, envOf({{"NCCL_IB_HCA", "=mlx5_1:1"}}));
  EXPECT_FALSE(down.rdma);
  EXPECT_EQ(down.why, "no RDMA port ACTIVE (mlx5_1 port 1 DOWN, InfiniBand)");
  const FabricChoice none = chooseFabric(ports, envOf({{"NCCL_IB_HCA", "=bnxt_re0"}}));
  EXPECT_FALSE(none.rdma);
  EXPECT_EQ(none.why, "NCCL_IB_HCA selects none of the RDMA ports");
}

TEST(Fabric, EfaIsNotAnRdmaFabricNcclsIbServes) {
  // AWS EFA: /sys/class/infiniband/rdmap16s27 (or efa_0), port ACTIVE, link layer "Unknown".
  const FabricChoice c = chooseFabric({port("rdmap16s27", 1, "ACTIVE", "Unknown")}, envOf({}));
  EXPECT_FALSE(c.rdma);
  EXPECT_EQ(c.fabric, Fabric::Ethernet);
  EXPECT_EQ(c.why,
            "no RDMA port NCCL's IB transport serves (rdmap16s27 port 1 ACTIVE, Unknown; an EFA "
            "device needs the aws-ofi-nccl net plugin)");
  // Beside a real HCA the HCA decides.
  EXPECT_EQ(chooseFabric({port("mlx5_0", 1, "ACTIVE", "InfiniBand"),
                          port("rdmap16s27", 1, "ACTIVE", "Unknown")},
                         envOf({}))
                .fabric,
            Fabric::InfiniBand);
}

TEST(Fabric, BrokenTreeGivesPortsWithWhatCouldBeRead) {
  // mlx5_9's device link dangles; its ports still read (1 DOWN, 2 ACTIVE).
  const std::vector<RdmaPort> ports = listRdmaPorts(SysfsRoot(testing::dataRoot("broken")));
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].state, "DOWN");
  EXPECT_EQ(ports[1].state, "ACTIVE");
  EXPECT_TRUE(chooseFabric(ports, envOf({})).rdma);
}

}  // namespace
}  // namespace pilot::topology
