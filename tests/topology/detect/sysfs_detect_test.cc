// detectFromSysfs on the recorded trees in ../data (see its README).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "detect_internal.h"
#include "pilot/topology/affinity.h"
#include "pilot/topology/sources.h"
#include "pilot/topology/sysfs_facts.h"
#include "test_support.h"

namespace pilot::topology {
namespace {

using testing::busOf;
using testing::dataRoot;
using testing::hasNote;
using testing::nicNamed;
using testing::pciIndex;

Machine detect(const std::string& tree) {
  Expected<Machine> m = detectFromSysfs(SysfsRoot(dataRoot(tree)));
  EXPECT_TRUE(m.ok()) << m.error();
  return m.ok() ? m.value() : Machine{};
}

TEST(SysfsDetectKvm, FindsTwoGpusBehindTheirOwnRootPorts) {
  Machine m = detect("kvm-flat-2gpu-2nic");
  EXPECT_EQ(m.source, "sysfs " + dataRoot("kvm-flat-2gpu-2nic"));
  ASSERT_EQ(m.gpus.size(), 2u);
  EXPECT_EQ(busOf(m, m.gpus[0].pci), "0000:01:00.0");
  EXPECT_EQ(busOf(m, m.gpus[1].pci), "0000:02:00.0");
  for (const Gpu& gpu : m.gpus) {
    const PciNode& node = m.pci[gpu.pci];
    EXPECT_EQ(node.kind, PciKind::Endpoint);
    EXPECT_EQ(node.classCode, 0x030200u);
    EXPECT_EQ(node.vendor, 0x10de);
    EXPECT_EQ(node.device, 0x2330);
    EXPECT_EQ(node.subsystemDevice, 0x16c1);
    // min(own 32.0 GT/s x16, root port 16.0 GT/s x32), as NCCL computes it
    EXPECT_EQ(node.linkSpeed, "16.0 GT/s PCIe");
    EXPECT_EQ(node.linkWidth, 16);
    const PciNode& port = m.pci[node.parent];
    EXPECT_EQ(port.kind, PciKind::RootPort);
    EXPECT_EQ(port.vendor, 0x1b36);
    EXPECT_EQ(port.device, 0x000c);
    EXPECT_EQ(port.linkSpeed, "16.0 GT/s PCIe");
    EXPECT_EQ(port.linkWidth, 32);
    EXPECT_EQ(m.pci[port.parent].kind, PciKind::HostBridge);
    EXPECT_FALSE(m.pci[port.parent].busId);
    EXPECT_EQ(m.pci[port.parent].parent, -1);
  }
}

TEST(SysfsDetectKvm, KeepsOnlyGpusNicsAndTheirAncestors) {
  Machine m = detect("kvm-flat-2gpu-2nic");
  // host bridge, 4 root ports, 2 GPUs, 2 VFs, virtio-net; not the MCH or the bochs VGA
  EXPECT_EQ(m.pci.size(), 10u);
  EXPECT_EQ(pciIndex(m, "0000:00:00.0"), -1);
  EXPECT_EQ(pciIndex(m, "0000:00:01.0"), -1);
  EXPECT_TRUE(testing::parentsPrecedeChildren(m));
  EXPECT_EQ(m.pci[0].kind, PciKind::HostBridge);
  EXPECT_EQ(busOf(m, 1), "0000:00:02.0");  // children in bus id order, depth first
  EXPECT_EQ(busOf(m, 2), "0000:01:00.0");
}

TEST(SysfsDetectKvm, RoceVfsAndVirtioNic) {
  Machine m = detect("kvm-flat-2gpu-2nic");
  ASSERT_EQ(m.nics.size(), 3u);  // sorted by bus id: virtio first
  EXPECT_EQ(m.nics[0].name, "enp0s3");
  EXPECT_EQ(m.nics[1].name, "mlx5_0");
  EXPECT_EQ(m.nics[2].name, "mlx5_1");

  const Nic* vf = nicNamed(m, "mlx5_0");
  ASSERT_NE(vf, nullptr);
  EXPECT_TRUE(vf->rdma);
  EXPECT_EQ(busOf(m, vf->pci), "0000:03:00.0");
  EXPECT_EQ(vf->netdev, "ens3");
  EXPECT_EQ(vf->port, 1);
  EXPECT_EQ(vf->state, "ACTIVE");
  EXPECT_EQ(vf->linkLayer, LinkLayer::Ethernet);
  EXPECT_EQ(vf->speedMbps, 400000);
  EXPECT_EQ(vf->guid, "0xa088c20300d62e10");
  const PciNode& vfNode = m.pci[vf->pci];
  EXPECT_EQ(vfNode.classCode, 0x020000u);
  EXPECT_EQ(vfNode.device, 0x101e);
  // a VF reports no link of its own: speed from the root port, width 0 (NCCL reads x16)
  EXPECT_EQ(vfNode.linkSpeed, "16.0 GT/s PCIe");
  EXPECT_EQ(vfNode.linkWidth, 0);
  EXPECT_EQ(nicNamed(m, "mlx5_1")->netdev, "ens4");
  EXPECT_EQ(nicNamed(m, "mlx5_1")->guid, "0xa088c20300d62e11");

  const Nic* virtio = nicNamed(m, "enp0s3");
  ASSERT_NE(virtio, nullptr);
  EXPECT_FALSE(virtio->rdma);
  EXPECT_EQ(virtio->netdev, "enp0s3");
  EXPECT_EQ(busOf(m, virtio->pci), "0000:00:03.0");  // the PCI function above virtio0
  EXPECT_EQ(virtio->state, "UP");
  EXPECT_EQ(virtio->speedMbps, 0);  // virtio reports -1
  EXPECT_EQ(virtio->linkLayer, LinkLayer::Ethernet);
  EXPECT_EQ(m.pci[virtio->pci].kind, PciKind::Endpoint);
  EXPECT_EQ(m.pci[virtio->pci].linkSpeed, "");
  EXPECT_EQ(nicNamed(m, "lo"), nullptr);
  EXPECT_EQ(nicNamed(m, "docker0"), nullptr);
}

TEST(SysfsDetectKvm, OneNumaNodeTakesTheDevicesReportingMinusOne) {
  Machine m = detect("kvm-flat-2gpu-2nic");
  ASSERT_EQ(m.cpus.size(), 1u);
  const CpuNode& cpu = m.cpus[0];
  EXPECT_EQ(cpu.numaId, 0);
  EXPECT_EQ(cpu.vendor, "AuthenticAMD");
  EXPECT_EQ(cpu.familyId, 25);
  EXPECT_EQ(cpu.modelId, 17);
  EXPECT_EQ(cpu.affinity, "ffffffff,ffffffff");
  EXPECT_EQ(cpu.arch, detail::compiledArch());
  for (const PciNode& node : m.pci) EXPECT_EQ(node.numaNode, 0);
  EXPECT_TRUE(hasNote(m, {"NUMA node -1", "placed on node 0"})) << testing::allNotes(m);
}

TEST(SysfsDetectKvm, FlatVmPathsArePhb) {
  Machine m = detect("kvm-flat-2gpu-2nic");
  int gpu0 = pciIndex(m, "0000:01:00.0"), gpu1 = pciIndex(m, "0000:02:00.0");
  int nic0 = pciIndex(m, "0000:03:00.0");
  EXPECT_EQ(classifyPath(m, gpu0, nic0), PathType::PHB);
  EXPECT_EQ(classifyPath(m, gpu0, gpu1), PathType::PHB);
}

TEST(SysfsDetectKvm, SeesTheHypervisorSoTheRepairRunsOnItsOwn) {
  Machine m = detect("kvm-flat-2gpu-2nic");
  EXPECT_EQ(m.hypervisor, "CPU flag hypervisor, DMI QEMU Standard PC (Q35 + ICH9, 2009)");
  std::string why;
  EXPECT_TRUE(shouldRepair(RepairPolicy::Auto, m, &why));
  EXPECT_EQ(why, "virtual machine (" + m.hypervisor + ")");
  EXPECT_FALSE(shouldRepair(RepairPolicy::Off, m, &why));
  // Without the CPU flag and DMI (a container may hide both), QEMU's root ports still tell.
  m.hypervisor.clear();
  EXPECT_EQ(virtualizationEvidence(m).rfind("emulated QEMU PCIe bridge", 0), 0u)
      << virtualizationEvidence(m);
}

TEST(SysfsDetectBaremetal, NoHypervisorEvidenceSoNoAutomaticRepair) {
  Machine m = detect("baremetal-2gpu-2nic-switch");
  EXPECT_EQ(m.hypervisor, "");
  EXPECT_EQ(virtualizationEvidence(m), "");
  std::string why;
  EXPECT_FALSE(shouldRepair(RepairPolicy::Auto, m, &why));
  EXPECT_TRUE(shouldRepair(RepairPolicy::On, m, &why));
  EXPECT_EQ(parseRepairPolicy("OFF"), RepairPolicy::Off);
  EXPECT_EQ(parseRepairPolicy("1"), RepairPolicy::On);
  EXPECT_EQ(parseRepairPolicy("sometimes"), std::nullopt);
}

TEST(SysfsDetectBaremetal, SwitchPerSocketWithGpuAndNic) {
  Machine m = detect("baremetal-2gpu-2nic-switch");
  ASSERT_EQ(m.gpus.size(), 2u);
  ASSERT_EQ(m.nics.size(), 2u);
  EXPECT_EQ(busOf(m, m.gpus[0].pci), "0000:18:00.0");
  EXPECT_EQ(busOf(m, m.gpus[1].pci), "0000:9a:00.0");
  // 2 x (host bridge, root port, upstream, 2 downstream, GPU, NIC); the BMC VGA is dropped
  EXPECT_EQ(m.pci.size(), 14u);
  EXPECT_EQ(pciIndex(m, "0000:02:00.0"), -1);
  EXPECT_TRUE(testing::parentsPrecedeChildren(m));

  const PciNode& gpu = m.pci[m.gpus[0].pci];
  const PciNode& down = m.pci[gpu.parent];
  const PciNode& up = m.pci[down.parent];
  const PciNode& root = m.pci[up.parent];
  EXPECT_EQ(down.kind, PciKind::Switch);
  EXPECT_EQ(down.busId->str(), "0000:17:00.0");
  EXPECT_EQ(up.kind, PciKind::Switch);
  EXPECT_EQ(up.busId->str(), "0000:16:00.0");
  EXPECT_EQ(up.vendor, 0x1000);
  EXPECT_EQ(up.device, 0xc010);
  EXPECT_EQ(up.subsystemDevice, 0x100b);
  EXPECT_EQ(root.kind, PciKind::RootPort);
  EXPECT_EQ(root.busId->str(), "0000:15:01.0");
  EXPECT_EQ(m.pci[root.parent].kind, PciKind::HostBridge);

  // kernel 4.18 spellings normalised; min with the parent like NCCL
  EXPECT_EQ(root.linkSpeed, "32.0 GT/s PCIe");
  EXPECT_EQ(up.linkSpeed, "16.0 GT/s PCIe");
  EXPECT_EQ(gpu.linkSpeed, "16.0 GT/s PCIe");
  EXPECT_EQ(gpu.linkWidth, 16);
  EXPECT_EQ(gpu.numaNode, 0);
  EXPECT_EQ(m.pci[m.gpus[1].pci].numaNode, 1);
  EXPECT_EQ(m.pci[root.parent].numaNode, 0);
}

TEST(SysfsDetectBaremetal, InfinibandNics) {
  Machine m = detect("baremetal-2gpu-2nic-switch");
  const Nic* nic = nicNamed(m, "mlx5_1");
  ASSERT_NE(nic, nullptr);
  EXPECT_TRUE(nic->rdma);
  EXPECT_EQ(busOf(m, nic->pci), "0000:9b:00.0");
  EXPECT_EQ(nic->netdev, "ibp155s0");
  EXPECT_EQ(nic->state, "ACTIVE");
  EXPECT_EQ(nic->linkLayer, LinkLayer::InfiniBand);
  EXPECT_EQ(nic->speedMbps, 400000);
  EXPECT_EQ(nic->guid, "0xb83fd20300a17e58");
  EXPECT_EQ(m.pci[nic->pci].classCode, 0x020700u);
  EXPECT_EQ(m.pci[nic->pci].linkSpeed, "16.0 GT/s PCIe");
  EXPECT_EQ(m.nics[0].name, "mlx5_0");
  EXPECT_EQ(m.nics[0].netdev, "ibp25s0");
}

TEST(SysfsDetectBaremetal, TwoNumaNodesWithCpumaps) {
  Machine m = detect("baremetal-2gpu-2nic-switch");
  ASSERT_EQ(m.cpus.size(), 2u);
  EXPECT_EQ(m.cpus[0].numaId, 0);
  EXPECT_EQ(m.cpus[0].affinity, "00000000,ffffffff");
  EXPECT_EQ(m.cpus[1].numaId, 1);
  EXPECT_EQ(m.cpus[1].affinity, "ffffffff,00000000");
  for (const CpuNode& cpu : m.cpus) {
    EXPECT_EQ(cpu.vendor, "GenuineIntel");
    EXPECT_EQ(cpu.familyId, 6);
    EXPECT_EQ(cpu.modelId, 143);
  }
  EXPECT_TRUE(m.notes.empty()) << testing::allNotes(m);
}

TEST(SysfsDetectBaremetal, PathsPixWithinASocketSysAcross) {
  Machine m = detect("baremetal-2gpu-2nic-switch");
  int gpu0 = m.gpus[0].pci, gpu1 = m.gpus[1].pci;
  int nic0 = nicNamed(m, "mlx5_0")->pci, nic1 = nicNamed(m, "mlx5_1")->pci;
  EXPECT_EQ(classifyPath(m, gpu0, nic0), PathType::PIX);
  EXPECT_EQ(classifyPath(m, gpu1, nic1), PathType::PIX);
  EXPECT_EQ(classifyPath(m, gpu0, nic1), PathType::SYS);
  EXPECT_EQ(classifyPath(m, gpu0, gpu1), PathType::SYS);
}

TEST(SysfsDetectBroken, GivesNotesNotCrashes) {
  Machine m = detect("broken");
  // Both GPUs survive: the one with garbage files and the one behind an absolute link.
  ASSERT_EQ(m.gpus.size(), 2u);
  EXPECT_EQ(busOf(m, m.gpus[0].pci), "0000:00:02.0");
  EXPECT_EQ(busOf(m, m.gpus[1].pci), "0000:00:07.0");
  const PciNode& odd = m.pci[m.gpus[0].pci];
  EXPECT_EQ(odd.linkSpeed, "");
  EXPECT_EQ(odd.linkWidth, 0);
  EXPECT_EQ(m.pci[m.gpus[1].pci].linkSpeed, "16.0 GT/s PCIe");

  std::string notes = testing::allNotes(m);
  EXPECT_TRUE(hasNote(m, {"0000:00:01.0", "class"})) << notes;
  EXPECT_TRUE(hasNote(m, {"numa_node", "banana"})) << notes;
  EXPECT_TRUE(hasNote(m, {"0000:00:05.0", "cannot be resolved"})) << notes;
  EXPECT_TRUE(hasNote(m, {"0000:00:06.0", "cannot be resolved"})) << notes;
  EXPECT_TRUE(hasNote(m, {"0000:00:08.0", "cannot be resolved"})) << notes;
  EXPECT_TRUE(hasNote(m, {"10000:00:00.0", "0xffff"})) << notes;
  EXPECT_TRUE(hasNote(m, {"node0/cpumap"})) << notes;
  EXPECT_TRUE(hasNote(m, {"/proc/cpuinfo"})) << notes;
  EXPECT_TRUE(hasNote(m, {"mlx5_9", "no PCI device"})) << notes;
  EXPECT_TRUE(hasNote(m, {"rate", "fast Gb/sec"})) << notes;

  // The RDMA device is kept as a virtual NIC, on its first ACTIVE port.
  const Nic* nic = nicNamed(m, "mlx5_9");
  ASSERT_NE(nic, nullptr);
  EXPECT_EQ(nic->pci, -1);
  EXPECT_EQ(nic->port, 2);
  EXPECT_EQ(nic->state, "ACTIVE");
  EXPECT_EQ(nic->linkLayer, LinkLayer::Ethernet);
  EXPECT_EQ(nic->speedMbps, 0);
  EXPECT_EQ(nic->guid, "");

  ASSERT_EQ(m.cpus.size(), 1u);
  EXPECT_EQ(m.cpus[0].affinity, "");
  EXPECT_EQ(m.cpus[0].vendor, "");
  if (std::string(detail::compiledArch()) == "x86_64") {
    EXPECT_TRUE(hasNote(m, {"CPU vendor unknown"})) << notes;
  }
}

TEST(SysfsDetect, MissingRootIsAnErrorNamingThePath) {
  Expected<Machine> m = detectFromSysfs(SysfsRoot("/nonexistent/pilot-root"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("/nonexistent/pilot-root/sys/bus/pci/devices"), std::string::npos)
      << m.error();
}

TEST(SysfsDetect, RunsOnThisMachine) {
  // Whatever this host is (container, VM), detection must not fail or crash.
  Expected<Machine> m = detectFromSysfs(SysfsRoot("/"));
  if (!m.ok()) GTEST_SKIP() << "no /sys/bus/pci here: " << m.error();
  EXPECT_FALSE(m->cpus.empty());
  EXPECT_TRUE(testing::parentsPrecedeChildren(*m));
}

TEST(LinkSpeed, NormalisesBothKernelSpellings) {
  EXPECT_EQ(detail::pcieGeneration("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(detail::pcieGeneration("16 GT/s"), 4);
  EXPECT_EQ(detail::pcieGeneration("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(detail::pcieGeneration("5 GT/s"), 2);
  EXPECT_EQ(detail::pcieGeneration("64.0 GT/s PCIe"), 6);
  EXPECT_EQ(detail::pcieGeneration("Unknown"), 0);
  EXPECT_EQ(detail::pcieGeneration("Unknown speed"), 0);
  EXPECT_EQ(detail::pcieGeneration("12 GT/s"), 0);
  EXPECT_STREQ(detail::pcieSpeedName(4), "16.0 GT/s PCIe");
  EXPECT_STREQ(detail::pcieSpeedName(1), "2.5 GT/s PCIe");
  EXPECT_STREQ(detail::pcieSpeedName(0), "");
  EXPECT_STREQ(detail::pcieSpeedName(7), "");
}

TEST(LinkSpeed, EstimatesFromHwlocRate) {
  auto gen4x16 = detail::estimateLinkFromHwloc(31.507692);
  EXPECT_EQ(gen4x16.speed, "16.0 GT/s PCIe");
  EXPECT_EQ(gen4x16.width, 16);
  auto gen3x8 = detail::estimateLinkFromHwloc(7.876923);
  EXPECT_EQ(gen3x8.speed, "8.0 GT/s PCIe");
  EXPECT_EQ(gen3x8.width, 8);
  EXPECT_EQ(detail::estimateLinkFromHwloc(63.015385).speed, "32.0 GT/s PCIe");
  EXPECT_EQ(detail::estimateLinkFromHwloc(0.5).width, 2);  // Gen1 x2 and Gen2 x1: the wider
  EXPECT_EQ(detail::estimateLinkFromHwloc(0).speed, "");
  EXPECT_EQ(detail::estimateLinkFromHwloc(3.0).width, 0);  // fits nothing
}

TEST(Cpumap, ConvertsBetweenListsAndMaps) {
  EXPECT_EQ(detail::cpumapFromCpus({0, 1, 2, 3}, 0), "0000000f");
  EXPECT_EQ(detail::cpumapFromCpus({32}, 3), "00000000,00000001,00000000");
  EXPECT_EQ(detail::cpumapFromCpus({}, 0), "00000000");
  auto cpus = detail::parseCpumap("ffffffff,00000000");
  ASSERT_TRUE(cpus);
  EXPECT_EQ(cpus->size(), 32u);
  EXPECT_EQ(cpus->front(), 32u);
  EXPECT_FALSE(detail::parseCpumap("xyz"));
  EXPECT_FALSE(detail::parseCpumap("123456789"));
  auto list = detail::parseCpuList("0-3,8");
  ASSERT_TRUE(list);
  EXPECT_EQ(*list, (std::vector<unsigned>{0, 1, 2, 3, 8}));
  EXPECT_FALSE(detail::parseCpuList("0-4000000000"));
  EXPECT_FALSE(detail::parseCpuList("3-1"));
  // A garbage list repeating the widest range must not allocate for each repetition.
  std::string repeated = "0-65535";
  for (int i = 0; i < 4000; ++i) repeated += ",0-65535";
  EXPECT_FALSE(detail::parseCpuList(repeated));
  EXPECT_EQ(detail::parseCpuList("0-65535")->size(), 65536u);
}

}  // namespace
}  // namespace pilot::topology

namespace pilot::topology {
namespace {

// sysfs_facts.h: the current link next to the maximum, read through the root like detection.
TEST(SysfsFacts, CurrentAndMaximumLinkOfAFunction) {
  char tmpl[] = "/tmp/pilot-sysfs-facts-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  const std::string dir = root + "/sys/devices/pci0000:00/0000:00:01.0";
  ASSERT_EQ(system(("mkdir -p " + dir + " " + root + "/sys/bus/pci/devices").c_str()), 0);
  auto put = [&](const std::string& name, const std::string& value) {
    FILE* f = fopen((dir + "/" + name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(value.c_str(), f);
    fclose(f);
  };
  put("current_link_speed", "8.0 GT/s PCIe\n");
  put("current_link_width", "4\n");
  put("max_link_speed", "16 GT/s\n");  // the kernel < 5.7 spelling
  put("max_link_width", "255\n");      // "unknown" on some kernels
  ASSERT_EQ(symlink("../../../devices/pci0000:00/0000:00:01.0",
                    (root + "/sys/bus/pci/devices/0000:00:01.0").c_str()),
            0);
  const SysfsRoot sysfs(root);
  const BusId bus = *BusId::parse("0000:00:01.0");
  EXPECT_EQ(pciDevicePath(sysfs, bus), "/sys/devices/pci0000:00/0000:00:01.0");
  std::optional<PciLinkState> link = readPciLinkState(sysfs, bus);
  ASSERT_TRUE(link);
  EXPECT_EQ(link->currentGeneration, 3);
  EXPECT_EQ(link->currentWidth, 4);
  EXPECT_EQ(link->maxGeneration, 4);
  EXPECT_EQ(link->maxWidth, 0);
  EXPECT_EQ(link->currentSpeed, "8.0 GT/s PCIe");
  EXPECT_FALSE(readPciLinkState(sysfs, *BusId::parse("0000:00:02.0")));
  EXPECT_EQ(pcieGenerationOf("Unknown"), 0);
  EXPECT_EQ(pcieSpeedText(5), "32.0 GT/s PCIe");
  EXPECT_EQ(parseCpuListText("0-1,4")->size(), 3u);
  ASSERT_EQ(system(("rm -rf " + root).c_str()), 0);
}

}  // namespace
}  // namespace pilot::topology
