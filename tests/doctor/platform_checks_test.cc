// iommu and gdr: translated DMA with RDMA in use, passthrough, a guest without an IOMMU; GPU
// Direct RDMA tested as NCCL tests it (nv_mem / nvidia_peermem, else DMA-BUF) and gated by path.
#include <gtest/gtest.h>

#include "test_support.h"

namespace pilot::doctor {
namespace {

using testing::contains;
using testing::dump;
using testing::matching;
using testing::of;
using testing::runOn;

Probes dmaBuf(std::optional<bool> answer) {
  Probes p;
  p.dmaBufSupported = [answer](const topology::BusId&) { return answer; };
  return p;
}

TEST(Iommu, TranslatedDmaWithRdmaIsAWarningNamingTheCommandLine) {
  const DoctorReport r = runOn("baremetal-faulty", {}, {"iommu"});
  const auto warns = matching(r, "iommu", Verdict::Warn);
  ASSERT_EQ(warns.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(warns[0].subject, "GPU0 0000:18:00.0")) << warns[0].subject;
  EXPECT_TRUE(contains(warns[0].subject, "mlx5_2 (0000:9c:00.0)"));
  EXPECT_TRUE(contains(warns[0].evidence, "iommu_group type DMA-FQ"));
  EXPECT_TRUE(contains(warns[0].evidence, "/proc/cmdline: intel_iommu=on"));
  EXPECT_TRUE(contains(warns[0].fix, "iommu=pt"));
  EXPECT_EQ(r.facts.at("iommu"), "intel_iommu=on");
}

TEST(Iommu, PassthroughPasses) {
  const DoctorReport r = runOn("baremetal-repaired", {}, {"iommu"});
  ASSERT_EQ(of(r, "iommu").size(), 1u) << dump(r);
  EXPECT_EQ(of(r, "iommu")[0].verdict, Verdict::Pass);
  EXPECT_TRUE(contains(of(r, "iommu")[0].evidence, "identity (passthrough)"));
}

TEST(Iommu, TranslatedWithoutRdmaPasses) {
  const DoctorReport r = runOn("baremetal-faulty", {{"NCCL_IB_DISABLE", "1"}}, {"iommu"});
  ASSERT_EQ(of(r, "iommu").size(), 1u) << dump(r);
  EXPECT_EQ(of(r, "iommu")[0].verdict, Verdict::Pass);
  EXPECT_TRUE(contains(of(r, "iommu")[0].evidence, "no RDMA in use"));
}

TEST(Iommu, AGuestWithoutAnIommuPasses) {
  const DoctorReport r = runOn("kvm-roce-v2", {}, {"iommu"});
  ASSERT_EQ(of(r, "iommu").size(), 1u) << dump(r);
  EXPECT_EQ(of(r, "iommu")[0].verdict, Verdict::Pass);
  EXPECT_TRUE(contains(of(r, "iommu")[0].evidence, "no iommu_group link"));
}

TEST(Iommu, OldKernelsAreJudgedByTheCommandLine) {
  testing::TreeCopy copy("baremetal-repaired");
  for (int g = 20; g < 40; ++g)
    copy.remove("sys/kernel/iommu_groups/" + std::to_string(g) + "/type");
  const DoctorReport pt = copy.run({}, {"iommu"});
  ASSERT_EQ(of(pt, "iommu").size(), 1u) << dump(pt);
  EXPECT_EQ(of(pt, "iommu")[0].verdict, Verdict::Pass);
  EXPECT_TRUE(contains(of(pt, "iommu")[0].evidence, "passthrough by the command line"));
  copy.write("proc/cmdline", "ro quiet intel_iommu=on\n");
  const DoctorReport unknown = copy.run({}, {"iommu"});
  EXPECT_EQ(of(unknown, "iommu")[0].verdict, Verdict::Skip) << dump(unknown);
}

TEST(Gdr, NoPeerMemoryModuleAndUnknownDmaBufIsAWarningPerPair) {
  const DoctorReport r = runOn("baremetal-faulty", {}, {"gdr"});
  const auto warns = matching(r, "gdr", Verdict::Warn);
  ASSERT_EQ(warns.size(), 2u) << dump(r);
  EXPECT_EQ(warns[0].subject, "GPU0 0000:18:00.0 <-> mlx5_0 (0000:19:00.0)");
  EXPECT_EQ(warns[1].subject, "GPU1 0000:9a:00.0 <-> mlx5_2 (0000:9c:00.0)");
  EXPECT_TRUE(contains(warns[0].evidence, "no nv_mem or nvidia_peermem"));
  EXPECT_TRUE(contains(warns[0].evidence, "/sys/module/nvidia_peermem/version"));
  EXPECT_TRUE(contains(warns[0].fix, "modprobe nvidia_peermem"));
  EXPECT_EQ(r.facts.at("gdr.peermem"), "none");
}

TEST(Gdr, WithoutPeerMemoryAndWithoutDmaBufItFails) {
  const DoctorReport r = runOn("baremetal-faulty", {}, {"gdr"}, dmaBuf(false));
  EXPECT_EQ(matching(r, "gdr", Verdict::Fail).size(), 2u) << dump(r);
  EXPECT_TRUE(
      contains(matching(r, "gdr", Verdict::Fail)[0].evidence, "CUDA reports no DMA-BUF support"));
}

TEST(Gdr, DmaBufAloneIsEnoughUnlessNcclIsToldNotToUseIt) {
  const DoctorReport on = runOn("baremetal-faulty", {}, {"gdr"}, dmaBuf(true));
  EXPECT_EQ(matching(on, "gdr", Verdict::Pass).size(), 2u) << dump(on);
  const DoctorReport off =
      runOn("baremetal-faulty", {{"NCCL_DMABUF_ENABLE", "0"}}, {"gdr"}, dmaBuf(true));
  const auto fails = matching(off, "gdr", Verdict::Fail);
  ASSERT_EQ(fails.size(), 2u) << dump(off);
  EXPECT_TRUE(contains(fails[0].fix, "unset NCCL_DMABUF_ENABLE"));
}

TEST(Gdr, PeerMemoryModuleLoadedPasses) {
  const DoctorReport r = runOn("baremetal-repaired", {}, {"gdr"});
  const auto passes = matching(r, "gdr", Verdict::Pass);
  ASSERT_EQ(passes.size(), 2u) << dump(r);
  EXPECT_TRUE(contains(passes[1].subject, "mlx5_1 (0000:9b:00.0) + mlx5_2 (0000:9c:00.0)"))
      << passes[1].subject;
  EXPECT_TRUE(contains(passes[0].evidence, "/sys/module/nvidia_peermem/version 550.54.15"));
}

TEST(Gdr, AGpuAndNicApartAtTheHostBridgeOfAVmAreAWarning) {
  const DoctorReport r = runOn("kvm-roce-v2", {}, {"gdr"});
  const auto warns = matching(r, "gdr", Verdict::Warn);
  ASSERT_EQ(warns.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(warns[0].evidence, "path PHB: NCCL enables GPU Direct RDMA only up to PXB"));
  EXPECT_TRUE(contains(warns[0].fix, "NCCL_PILOT_TOPO_REPAIR"));
  // With NCCL_NET_GDR_LEVEL set the user decided: the module is what counts.
  const DoctorReport forced = runOn("kvm-roce-v2", {{"NCCL_NET_GDR_LEVEL", "PHB"}}, {"gdr"});
  EXPECT_EQ(matching(forced, "gdr", Verdict::Pass).size(), 1u) << dump(forced);
}

TEST(Gdr, SkippedWhenNcclDoesNotUseRdma) {
  const DoctorReport r = runOn("baremetal-repaired", {{"NCCL_IB_DISABLE", "1"}}, {"gdr"});
  ASSERT_EQ(of(r, "gdr").size(), 1u);
  EXPECT_EQ(of(r, "gdr")[0].verdict, Verdict::Skip);
  EXPECT_TRUE(contains(of(r, "gdr")[0].evidence, "NCCL_IB_DISABLE=1"));
}

}  // namespace
}  // namespace pilot::doctor
