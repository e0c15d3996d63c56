// pcie-acs and pcie-link on the recorded machines: the done-when faults (ACS on the switch port
// above GPU0, mlx5_0 trained at x8 of x16), their repair, a VM, an idle GPU, a slot that limits
// its card, and config files that cannot be read.
#include <gtest/gtest.h>

#include "test_support.h"

namespace pilot::doctor {
namespace {

using testing::contains;
using testing::dump;
using testing::matching;
using testing::of;
using testing::runOn;

TEST(PcieAcs, FailsOnTheSwitchPortAboveTheGpuAndNamesSetpci) {
  const DoctorReport r = runOn("baremetal-faulty", {}, {"pcie-acs"});
  const auto fails = matching(r, "pcie-acs", Verdict::Fail);
  ASSERT_EQ(fails.size(), 1u) << dump(r);
  EXPECT_EQ(fails[0].subject,
            "0000:17:00.0 (switch downstream port on GPU0 0000:18:00.0 <-> mlx5_0 (0000:19:00.0))");
  EXPECT_TRUE(contains(fails[0].evidence,
                       "ACSCtl 0x001d: SrcValid+ TransBlk- ReqRedir+ "
                       "CmpltRedir+ UpstreamFwd+"))
      << fails[0].evidence;
  EXPECT_TRUE(contains(fails[0].evidence, "/sys/bus/pci/devices/0000:17:00.0/config"));
  EXPECT_TRUE(contains(fails[0].fix, "setpci -s 0000:17:00.0 ECAP_ACS+0x6.w=0000"));
  EXPECT_TRUE(contains(fails[0].fix, "pci=disable_acs_redir=0000:17:00.0"));
  // The NIC's port and socket 1's ports (GPU1 <-> mlx5_2) are clean.
  EXPECT_EQ(matching(r, "pcie-acs", Verdict::Pass, "0000:17:01.0").size(), 1u) << dump(r);
  EXPECT_EQ(matching(r, "pcie-acs", Verdict::Pass, "0000:99:00.0").size(), 1u) << dump(r);
  EXPECT_EQ(matching(r, "pcie-acs", Verdict::Pass, "0000:99:02.0").size(), 1u) << dump(r);
  // The upstream port is where the two paths meet: not a bridge between them.
  EXPECT_TRUE(matching(r, "pcie-acs", Verdict::Pass, "0000:16:00.0").empty());
}

TEST(PcieAcs, RepairedTreePasses) {
  const DoctorReport r = runOn("baremetal-repaired", {}, {"pcie-acs"});
  EXPECT_TRUE(matching(r, "pcie-acs", Verdict::Fail).empty()) << dump(r);
  const auto port = matching(r, "pcie-acs", Verdict::Pass, "0000:17:00.0");
  ASSERT_EQ(port.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(port[0].evidence, "ACSCtl 0x0000"));
  // GPU1 has two rails (mlx5_1, mlx5_2): each port below the switch is checked once.
  EXPECT_EQ(of(r, "pcie-acs").size(), 5u) << dump(r);
}

TEST(PcieAcs, InAVirtualMachineAcsIsAWarningWithTheNicsAts) {
  const DoctorReport r = runOn("kvm-roce-v2", {}, {"pcie-acs"});
  const auto warns = matching(r, "pcie-acs", Verdict::Warn);
  ASSERT_EQ(warns.size(), 2u) << dump(r);  // both QEMU root ports: the path crosses the host bridge
  EXPECT_TRUE(contains(warns[0].subject, "0000:00:02.0 (root port")) << warns[0].subject;
  EXPECT_TRUE(contains(warns[0].evidence, "virtual machine (CPU flag hypervisor, DMI QEMU"))
      << warns[0].evidence;
  EXPECT_TRUE(contains(warns[0].evidence, "mlx5_0 (0000:02:00.0): ATS enabled"));
  EXPECT_TRUE(contains(warns[0].fix, "ATS"));
}

TEST(PcieAcs, UnreadableConfigSpacesAreSkippedWithANoteNeverACrash) {
  const DoctorReport r = runOn("baremetal-broken-config", {}, {"pcie-acs"});
  EXPECT_TRUE(matching(r, "pcie-acs", Verdict::Fail).empty()) << dump(r);
  const auto headerOnly = matching(r, "pcie-acs", Verdict::Skip, "0000:17:00.0");
  ASSERT_EQ(headerOnly.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(headerOnly[0].evidence, "shows only the 64-byte header"));
  EXPECT_TRUE(contains(headerOnly[0].fix, "as root"));
  const auto truncated = matching(r, "pcie-acs", Verdict::Skip, "0000:17:01.0");
  ASSERT_EQ(truncated.size(), 1u);
  EXPECT_TRUE(contains(truncated[0].evidence, "37 bytes, shorter than the 64-byte header"));
  const auto looping = matching(r, "pcie-acs", Verdict::Skip, "0000:99:00.0");
  ASSERT_EQ(looping.size(), 1u);
  EXPECT_TRUE(contains(looping[0].evidence, "extended capability list loops at 0x100"));
  const auto silent = matching(r, "pcie-acs", Verdict::Skip, "0000:99:01.0");
  ASSERT_EQ(silent.size(), 1u);
  EXPECT_TRUE(contains(silent[0].evidence, "nothing answered"));
  bool noted = false;
  for (const std::string& n : r.notes) noted = noted || contains(n, "0000:17:01.0/config");
  EXPECT_TRUE(noted) << dump(r);
  // The port whose config is fine is still judged.
  EXPECT_EQ(matching(r, "pcie-acs", Verdict::Pass, "0000:99:02.0").size(), 1u) << dump(r);
}

TEST(PcieAcs, GpusUnderOneSwitchAreCheckedToo) {
  // Socket 0's NIC becomes a second GPU: the two GPUs share the PEX switch, no NIC is near.
  testing::TreeCopy copy("baremetal-faulty");
  copy.write("sys/bus/pci/devices/0000:19:00.0/class", "0x030200\n");
  copy.write("sys/bus/pci/devices/0000:19:00.0/vendor", "0x10de\n");
  copy.remove("sys/class/infiniband/mlx5_0");
  copy.remove("sys/class/net/ibp25s0");
  const DoctorReport r = copy.run({}, {"pcie-acs"});
  const auto fails = matching(r, "pcie-acs", Verdict::Fail, "0000:17:00.0");
  ASSERT_EQ(fails.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(fails[0].subject, "GPU0 0000:18:00.0 <-> GPU1 0000:19:00.0")) << dump(r);
  EXPECT_EQ(matching(r, "pcie-acs", Verdict::Pass, "0000:17:01.0").size(), 1u) << dump(r);
}

TEST(PcieAcs, AFunctionThatDoesNotAnswerIsSkipped) {
  testing::TreeCopy copy("baremetal-faulty");
  copy.write("sys/bus/pci/devices/0000:17:01.0/config", std::string(4096, '\xff'));
  const DoctorReport r = copy.run({}, {"pcie-acs"});
  EXPECT_EQ(matching(r, "pcie-acs", Verdict::Skip, "0000:17:01.0").size(), 1u) << dump(r);
  EXPECT_EQ(matching(r, "pcie-acs", Verdict::Fail, "0000:17:00.0").size(), 1u) << dump(r);
}

TEST(PcieLink, NamesTheNicAtX8AndWarnsAboutTheIdleGpu) {
  const DoctorReport r = runOn("baremetal-faulty", {}, {"pcie-link"});
  const auto fails = matching(r, "pcie-link", Verdict::Fail);
  ASSERT_EQ(fails.size(), 1u) << dump(r);
  EXPECT_EQ(fails[0].subject, "mlx5_0 (0000:19:00.0)");
  EXPECT_TRUE(contains(fails[0].evidence,
                       "x8 Gen5 (32.0 GT/s PCIe), both ends capable of x16 Gen5 (32.0 GT/s PCIe)"))
      << fails[0].evidence;
  EXPECT_TRUE(contains(fails[0].fix, "lspci -vv -s 0000:19:00.0"));
  const auto warns = matching(r, "pcie-link", Verdict::Warn);
  ASSERT_EQ(warns.size(), 1u) << dump(r);
  EXPECT_EQ(warns[0].subject, "GPU1 0000:9a:00.0");
  EXPECT_TRUE(contains(warns[0].evidence, "x16 Gen1 (2.5 GT/s PCIe)"));
  EXPECT_TRUE(contains(warns[0].fix, "under load")) << warns[0].fix;
  EXPECT_TRUE(contains(warns[0].fix, "pcie.link.gen.current"));
  // Both switch upstream ports' links are judged as well.
  EXPECT_EQ(matching(r, "pcie-link", Verdict::Pass, "0000:16:00.0 (switch upstream port)").size(),
            1u);
}

TEST(PcieLink, RepairedTreePassesEveryLink) {
  const DoctorReport r = runOn("baremetal-repaired", {}, {"pcie-link"});
  EXPECT_EQ(of(r, "pcie-link").size(), 7u) << dump(r);  // 2 GPUs, 3 NICs, 2 upstream ports
  EXPECT_EQ(matching(r, "pcie-link", Verdict::Pass).size(), 7u) << dump(r);
}

TEST(PcieLink, ASlotNarrowerThanTheCardIsAWarning) {
  testing::TreeCopy copy("baremetal-repaired");
  copy.write("sys/bus/pci/devices/0000:17:01.0/max_link_width", "8\n");
  copy.write("sys/bus/pci/devices/0000:19:00.0/current_link_width", "8\n");
  const DoctorReport r = copy.run({}, {"pcie-link"});
  const auto warns = matching(r, "pcie-link", Verdict::Warn, "mlx5_0");
  ASSERT_EQ(warns.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(warns[0].evidence, "the device itself supports x16 Gen5"));
  EXPECT_TRUE(contains(warns[0].fix, "slot"));
}

TEST(PcieLink, AVirtualFunctionReportsNoLink) {
  const DoctorReport r = runOn("kvm-roce-v2", {}, {"pcie-link"});
  const auto skips = matching(r, "pcie-link", Verdict::Skip, "mlx5_0");
  ASSERT_EQ(skips.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(skips[0].evidence, "virtual function"));
  EXPECT_EQ(matching(r, "pcie-link", Verdict::Pass, "GPU0").size(), 1u) << dump(r);
}

TEST(PcieLink, GarbageLinkFilesFallBackToThePortAbove) {
  // GPU0's current_link_speed reads "banana": the downstream port reports the same link.
  const DoctorReport r = runOn("baremetal-broken-config", {}, {"pcie-link"});
  EXPECT_EQ(matching(r, "pcie-link", Verdict::Pass, "GPU0").size(), 1u) << dump(r);
}

TEST(Pcie, NoPciTreeIsASkipNotAFailure) {
  const DoctorReport r = runOn("does-not-exist", {}, {"pcie-acs", "pcie-link"});
  ASSERT_EQ(r.findings.size(), 2u) << dump(r);
  for (const Finding& f : r.findings) EXPECT_EQ(f.verdict, Verdict::Skip);
  EXPECT_TRUE(contains(r.machine, "no PCI tree"));
}

}  // namespace
}  // namespace pilot::doctor
