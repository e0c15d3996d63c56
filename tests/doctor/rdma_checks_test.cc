// rdma-port and roce: a port DOWN, one slower than its peers, ports left out by NCCL_IB_HCA;
// RoCE v1-only GID tables, NCCL's own GID choice, NCCL_IB_GID_INDEX, the traffic class.
#include <gtest/gtest.h>

#include "test_support.h"

namespace pilot::doctor {
namespace {

using testing::contains;
using testing::dump;
using testing::matching;
using testing::of;
using testing::runOn;

TEST(RdmaPort, ADownPortFailsAndASlowOneWarns) {
  const DoctorReport r = runOn("baremetal-faulty", {}, {"rdma-port"});
  const auto fails = matching(r, "rdma-port", Verdict::Fail);
  ASSERT_EQ(fails.size(), 1u) << dump(r);
  EXPECT_EQ(fails[0].subject, "mlx5_1 port 1");
  EXPECT_TRUE(contains(fails[0].evidence, "state DOWN, phys_state Polling"));
  EXPECT_TRUE(contains(fails[0].evidence, "/sys/class/infiniband/mlx5_1/ports/1"));
  EXPECT_TRUE(contains(fails[0].fix, "cable")) << fails[0].fix;
  const auto warns = matching(r, "rdma-port", Verdict::Warn);
  ASSERT_EQ(warns.size(), 1u) << dump(r);
  EXPECT_EQ(warns[0].subject, "mlx5_2 port 1");
  EXPECT_TRUE(contains(warns[0].evidence, "200 Gb/sec (4X HDR)"));
  EXPECT_TRUE(contains(warns[0].evidence, "slower than mlx5_0 port 1 at 400 Gb/sec (4X NDR)"));
  EXPECT_EQ(matching(r, "rdma-port", Verdict::Pass, "mlx5_0").size(), 1u);
  EXPECT_EQ(r.facts.at("rdma.mlx5_1:1"), "DOWN 10 Gb/sec (4X SDR) InfiniBand");
}

TEST(RdmaPort, RepairedPortsPass) {
  const DoctorReport r = runOn("baremetal-repaired", {}, {"rdma-port"});
  EXPECT_EQ(matching(r, "rdma-port", Verdict::Pass).size(), 3u) << dump(r);
  EXPECT_EQ(of(r, "rdma-port").size(), 3u);
}

TEST(RdmaPort, APortNcclIsToldToLeaveOutIsNotAFailure) {
  const DoctorReport r =
      runOn("baremetal-faulty", {{"NCCL_IB_HCA", "=mlx5_0,mlx5_2"}}, {"rdma-port"});
  const auto down = matching(r, "rdma-port", Verdict::Pass, "mlx5_1");
  ASSERT_EQ(down.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(down[0].evidence, "not used: NCCL_IB_HCA==mlx5_0,mlx5_2 leaves it out"));
}

TEST(RdmaPort, RoceShowsTheMtuItsInterfaceAllows) {
  const DoctorReport r = runOn("roce-v1-only", {}, {"rdma-port"});
  ASSERT_EQ(of(r, "rdma-port").size(), 1u) << dump(r);
  EXPECT_TRUE(contains(of(r, "rdma-port")[0].evidence, "ens1np0 mtu 9000 -> RoCE active MTU 4096"));
}

TEST(RdmaPort, NoRdmaDeviceIsASkip) {
  testing::TreeCopy copy("kvm-roce-v2");
  copy.remove("sys/class/infiniband/mlx5_0");
  const DoctorReport r = copy.run({}, {"rdma-port", "roce", "gdr", "memlock"});
  for (const Finding& f : r.findings) {
    if (f.check != "memlock") {
      EXPECT_EQ(f.verdict, Verdict::Skip) << dump(r);
    }
  }
}

TEST(Roce, OnlyV1GidsFail) {
  const DoctorReport r = runOn("roce-v1-only", {}, {"roce"});
  const auto fails = matching(r, "roce", Verdict::Fail);
  ASSERT_EQ(fails.size(), 1u) << dump(r);
  EXPECT_EQ(fails[0].subject, "mlx5_0 port 1 GID");
  EXPECT_TRUE(contains(fails[0].evidence, "no RoCE v2 GID (NCCL_IB_ROCE_VERSION_NUM=2)"));
  EXPECT_TRUE(contains(fails[0].evidence, "1: IB/RoCE v1 10.42.0.7")) << fails[0].evidence;
  const auto tc = matching(r, "roce", Verdict::Warn, "traffic class");
  ASSERT_EQ(tc.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(tc[0].fix, "NCCL_IB_TC"));
  EXPECT_TRUE(contains(tc[0].fix, "mlnx_qos -i ens1np0"));
  // Asking NCCL for RoCE v1 is consistent with the table (if not wise).
  const DoctorReport v1 = runOn("roce-v1-only", {{"NCCL_IB_ROCE_VERSION_NUM", "1"}}, {"roce"});
  EXPECT_EQ(matching(v1, "roce", Verdict::Pass, "GID").size(), 1u) << dump(v1);
}

TEST(Roce, AV2GidWithAnIpv4AddressPasses) {
  const DoctorReport r = runOn("kvm-roce-v2", {{"NCCL_IB_TC", "106"}}, {"roce"});
  const auto gid = matching(r, "roce", Verdict::Pass, "GID");
  ASSERT_EQ(gid.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(gid[0].evidence, "NCCL can select RoCE v2 GID index 3"));
  const auto tc = matching(r, "roce", Verdict::Pass, "traffic class");
  ASSERT_EQ(tc.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(tc[0].evidence, "NCCL_IB_TC=106 (DSCP 26)"));
}

TEST(Roce, AGidIndexOfTheWrongVersionFails) {
  const DoctorReport r = runOn("kvm-roce-v2", {{"NCCL_IB_GID_INDEX", "2"}}, {"roce"});
  const auto fails = matching(r, "roce", Verdict::Fail);
  ASSERT_EQ(fails.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(fails[0].evidence, "NCCL_IB_GID_INDEX=2 is a IB/RoCE v1 GID"));
  EXPECT_EQ(matching(runOn("kvm-roce-v2", {{"NCCL_IB_GID_INDEX", "3"}}, {"roce"}), "roce",
                     Verdict::Pass, "GID")
                .size(),
            1u);
}

TEST(Roce, OnlyLinkLocalV2GidsMeanNoAddress) {
  testing::TreeCopy copy("kvm-roce-v2");
  copy.remove("sys/class/infiniband/mlx5_0/ports/1/gids/3");
  const DoctorReport r = copy.run({}, {"roce"});
  const auto fails = matching(r, "roce", Verdict::Fail);
  ASSERT_EQ(fails.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(fails[0].evidence, "no RoCE v2 GID with an IPv4 address"));
  EXPECT_TRUE(contains(fails[0].fix, "ip addr add ADDR/PREFIX dev ens3"));
}

TEST(Roce, ADriverOverrideOfTheTrafficClassPasses) {
  testing::TreeCopy copy("roce-v1-only");
  copy.write("sys/class/infiniband/mlx5_0/tc/1/traffic_class", "Global tclass=106\n");
  const DoctorReport r = copy.run({}, {"roce"});
  const auto tc = matching(r, "roce", Verdict::Pass, "traffic class");
  ASSERT_EQ(tc.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(tc[0].evidence, "driver override 'Global tclass=106'"));
}

TEST(Roce, InfiniBandMachinesSkip) {
  const DoctorReport r = runOn("baremetal-repaired", {}, {"roce"});
  ASSERT_EQ(of(r, "roce").size(), 1u);
  EXPECT_EQ(of(r, "roce")[0].verdict, Verdict::Skip);
}

}  // namespace
}  // namespace pilot::doctor
