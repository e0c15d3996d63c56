// repairFlatTopology: synthetic switches for flat VMs, checked through the whole path the plugin
// takes (pair -> repair -> write -> what NCCL would read back).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "machines.h"
#include "nccl_rules.h"
#include "pilot/topology/affinity.h"
#include "pilot/topology/nccl_xml.h"

namespace pilot::topology {
namespace {

using test::MachineBuilder;

void expectParentsFirst(const Machine& m) {
  for (size_t i = 0; i < m.pci.size(); ++i) EXPECT_LT(m.pci[i].parent, static_cast<int>(i)) << i;
}

int pciIndexByBus(const Machine& m, const std::string& bus) {
  for (size_t i = 0; i < m.pci.size(); ++i) {
    if (m.pci[i].busId && m.pci[i].busId->str() == bus) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no pci " << bus;
  return -1;
}

int nicByName(const Machine& m, const std::string& name) {
  for (size_t i = 0; i < m.nics.size(); ++i) {
    if (m.nics[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no nic " << name;
  return 0;
}

TEST(RepairFlatTopology, FlatKvmBecomesPixThroughNcclXml) {
  const Machine m = test::flatKvm();
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  ASSERT_EQ(pairs.size(), 2u);
  for (const GpuNicPair& p : pairs) EXPECT_EQ(p.path, PathType::PHB);

  const RepairResult r = repairFlatTopology(m, pairs);
  ASSERT_TRUE(r.repaired);
  EXPECT_EQ(r.actions, (std::vector<std::string>{
                           "ffff:ff:01.0 groups GPU 0000:01:00.0 with mlx5_0 (0000:03:00.0): was "
                           "PHB, now PIX",
                           "ffff:ff:02.0 groups GPU 0000:02:00.0 with mlx5_1 (0000:04:00.0): was "
                           "PHB, now PIX"}));
  expectParentsFirst(r.machine);
  ASSERT_EQ(r.machine.gpus.size(), m.gpus.size()) << "GPU and NIC indices survive the repair";
  const int sw = pciIndexByBus(r.machine, "ffff:ff:01.0");
  ASSERT_GE(sw, 0);
  const PciNode& s = r.machine.pci[sw];
  EXPECT_TRUE(s.synthetic);
  EXPECT_EQ(s.kind, PciKind::Switch);
  EXPECT_EQ(s.classCode, 0x060400u);
  EXPECT_EQ(s.linkSpeed, "16.0 GT/s PCIe");
  EXPECT_EQ(s.linkWidth, 16);
  EXPECT_EQ(r.machine.pci[s.parent].kind, PciKind::HostBridge) << "root port skipped";
  EXPECT_EQ(r.machine.pci[r.machine.gpus[0].pci].parent, sw);
  const int mlx5_0 = r.machine.nics[nicByName(r.machine, "mlx5_0")].pci;
  EXPECT_EQ(r.machine.pci[mlx5_0].parent, sw);
  EXPECT_EQ(classifyPath(r.machine, r.machine.gpus[0].pci, mlx5_0), PathType::PIX);
  const int eth0 = r.machine.nics[nicByName(r.machine, "eth0")].pci;
  EXPECT_EQ(r.machine.pci[r.machine.pci[eth0].parent].kind, PciKind::HostBridge) << "not moved";

  // What NCCL reads: the file, with the GPU and its NIC side by side under a fake switch.
  Expected<std::string> xml = writeNcclXml(r.machine);
  ASSERT_TRUE(xml.ok()) << xml.error();
  EXPECT_EQ(test::checkNcclRules(*xml, test::RulesMode::OurFile), std::vector<std::string>{});
  EXPECT_NE(xml->find("<pci busid=\"ffff:ff:01.0\" class=\"0x060400\" link_speed=\"16.0 GT/s "
                      "PCIe\" link_width=\"16\">"),
            std::string::npos)
      << *xml;
  EXPECT_NE(xml->find("<pci busid=\"ffff:ff:02.0\""), std::string::npos);
  Expected<Machine> back = readNcclXml(*xml, "repaired");
  ASSERT_TRUE(back.ok()) << back.error();
  const Machine& b = *back;
  const std::pair<const char*, const char*> expected[] = {{"0000:01:00.0", "0000:03:00.0"},
                                                          {"0000:02:00.0", "0000:04:00.0"}};
  for (const auto& [gpu, nic] : expected) {
    EXPECT_EQ(classifyPath(b, pciIndexByBus(b, gpu), pciIndexByBus(b, nic)), PathType::PIX) << gpu;
  }
  EXPECT_EQ(classifyPath(b, pciIndexByBus(b, "0000:01:00.0"), pciIndexByBus(b, "0000:04:00.0")),
            PathType::NODE)
      << "different fake switches on one NUMA node";
  for (const GpuNicPair& p : pairGpusWithNics(b)) EXPECT_EQ(p.path, PathType::PIX);
}

TEST(RepairFlatTopology, SharedNicTakesAllItsGpusUnderOneSwitch) {
  const Machine m = test::flatRootBusShared();
  const RepairResult r = repairFlatTopology(m, pairGpusWithNics(m));
  ASSERT_TRUE(r.repaired);
  EXPECT_EQ(r.actions,
            std::vector<std::string>{"ffff:ff:01.0 groups GPUs 0000:00:05.0, 0000:00:06.0 with "
                                     "mlx5_0 (0000:00:07.0): was PHB, now PIX"});
  expectParentsFirst(r.machine);
  const int sw = pciIndexByBus(r.machine, "ffff:ff:01.0");
  for (const Gpu& g : r.machine.gpus) EXPECT_EQ(r.machine.pci[g.pci].parent, sw);
  EXPECT_EQ(r.machine.pci[r.machine.nics[0].pci].parent, sw);
  EXPECT_EQ(r.machine.pci[sw].numaNode, -1);
  Expected<std::string> xml = writeNcclXml(r.machine);
  ASSERT_TRUE(xml.ok());
  EXPECT_NE(xml->find("  <cpu numaid=\"-1\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" "
                      "modelid=\"143\">\n    <pci busid=\"ffff:ff:01.0\""),
            std::string::npos)
      << *xml;
}

TEST(RepairFlatTopology, RailsMoveTogether) {
  MachineBuilder b("flat rails");
  b.cpu(0);
  const int hb = b.hostBridge(0);
  b.gpu(b.rootPort(hb, "0000:00:02.0"), "0000:01:00.0", "32.0 GT/s PCIe", 16);
  b.nic(b.rootPort(hb, "0000:00:02.1"), "0000:02:00.0", "mlx5_0", true, "16.0 GT/s PCIe", 8);
  b.nic(b.rootPort(hb, "0000:00:02.2"), "0000:03:00.0", "mlx5_1", true, "", 0);
  const Machine m = b.build();
  const RepairResult r = repairFlatTopology(m, pairGpusWithNics(m));
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_EQ(r.actions[0],
            "ffff:ff:01.0 groups GPU 0000:01:00.0 with mlx5_0 (0000:02:00.0), mlx5_1 "
            "(0000:03:00.0): was PHB, now PIX");
  const PciNode& sw = r.machine.pci[pciIndexByBus(r.machine, "ffff:ff:01.0")];
  EXPECT_EQ(sw.linkSpeed, "32.0 GT/s PCIe") << "the best of its members";
  EXPECT_EQ(sw.linkWidth, 16);
}

TEST(RepairFlatTopology, NicFunctionsMoveTogether) {
  MachineBuilder b("flat dual-port");
  b.cpu(0);
  const int hb = b.hostBridge(0);
  b.gpu(b.rootPort(hb, "0000:00:02.0"), "0000:01:00.0");
  const int rp = b.rootPort(hb, "0000:00:02.1");
  b.nic(rp, "0000:02:00.0", "mlx5_0");
  b.endpoint(rp, "0000:02:00.1", 0x020700);  // port 2 without an RDMA device of its own
  const Machine m = b.build();
  const RepairResult r = repairFlatTopology(m, pairGpusWithNics(m));
  ASSERT_TRUE(r.repaired);
  const int sw = pciIndexByBus(r.machine, "ffff:ff:01.0");
  EXPECT_EQ(r.machine.pci[pciIndexByBus(r.machine, "0000:02:00.1")].parent, sw);
}

TEST(RepairFlatTopology, GpusOnDifferentNumaNodesThanTheirNicAreLeftAlone) {
  MachineBuilder b("flat, NIC on the other node");
  b.cpu(0).cpu(1);
  b.gpu(b.rootPort(b.hostBridge(1), "0000:80:02.0"), "0000:81:00.0");
  b.nic(b.rootPort(b.hostBridge(0), "0000:00:02.0"), "0000:01:00.0", "mlx5_0");
  const Machine m = b.build();
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  ASSERT_EQ(pairs.at(0).path, PathType::SYS);
  const RepairResult r = repairFlatTopology(m, pairs);
  EXPECT_FALSE(r.repaired);
  EXPECT_TRUE(r.actions.empty());
  EXPECT_EQ(r.machine.pci.size(), m.pci.size());
}

TEST(RepairFlatTopology, NodePairsOnOneNumaNodeAreGrouped) {
  // Two root complexes on one node (a guest with several pxb host bridges).
  MachineBuilder b("flat, two host bridges");
  b.cpu(0);
  b.gpu(b.rootPort(b.hostBridge(0), "0000:00:02.0"), "0000:01:00.0");
  const int hb2 = b.hostBridge(0);
  b.nic(b.rootPort(hb2, "0000:20:02.0"), "0000:21:00.0", "mlx5_0");
  const Machine m = b.build();
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  ASSERT_EQ(pairs.at(0).path, PathType::NODE);
  const RepairResult r = repairFlatTopology(m, pairs);
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_NE(r.actions[0].find("was NODE, now PIX"), std::string::npos);
  expectParentsFirst(r.machine);
  const int sw = pciIndexByBus(r.machine, "ffff:ff:01.0");
  EXPECT_EQ(r.machine.pci[sw].parent, 0) << "under the GPU's host bridge";
  EXPECT_EQ(classifyPath(r.machine, r.machine.gpus[0].pci, r.machine.nics[0].pci), PathType::PIX);
}

TEST(RepairFlatTopology, RealSwitchesAreNeverFaked) {
  for (const Machine& m : {test::bareMetalSwitches(), test::rails(), test::sharing(),
                           test::crossSocket(), test::noNics(), test::dualPortNic()}) {
    const RepairResult r = repairFlatTopology(m, pairGpusWithNics(m));
    EXPECT_FALSE(r.repaired) << m.source;
    EXPECT_TRUE(r.actions.empty()) << m.source;
  }
  // PHB through a real switch on one side: not flat, not touched.
  MachineBuilder b("half flat");
  b.cpu(0);
  const int hb = b.hostBridge(0);
  const int usp = b.bridge(b.rootPort(hb, "0000:00:01.0"), "0000:01:00.0");
  b.gpu(b.bridge(usp, "0000:02:00.0"), "0000:03:00.0");
  b.nic(b.rootPort(hb, "0000:00:02.0"), "0000:10:00.0", "mlx5_0");
  const Machine half = b.build();
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(half);
  ASSERT_EQ(pairs.at(0).path, PathType::PHB);
  EXPECT_FALSE(repairFlatTopology(half, pairs).repaired);
}

TEST(RepairFlatTopology, SyntheticIdsAvoidOnesInUseAndRepairIsIdempotent) {
  const Machine m = test::flatKvm();
  const RepairResult once = repairFlatTopology(m, pairGpusWithNics(m));
  const RepairResult twice = repairFlatTopology(once.machine, pairGpusWithNics(once.machine));
  EXPECT_FALSE(twice.repaired) << "already PIX";

  Machine taken = m;
  PciNode fake;
  fake.kind = PciKind::Endpoint;
  fake.busId = BusId::parse("ffff:ff:01.0");
  fake.parent = 0;
  taken.pci.push_back(fake);
  const RepairResult r = repairFlatTopology(taken, pairGpusWithNics(taken));
  ASSERT_EQ(r.actions.size(), 2u);
  EXPECT_EQ(r.actions[0].substr(0, 12), "ffff:ff:02.0");
  EXPECT_EQ(r.actions[1].substr(0, 12), "ffff:ff:03.0");
}

TEST(RepairFlatTopology, StopsWhenSyntheticBusIdsRunOut) {
  // 32 GPU + NIC pairs, but a device number has 5 bits: ffff:ff:01.0 .. ffff:ff:1f.0.
  MachineBuilder b("32 flat pairs");
  b.cpu(0);
  const int hb = b.hostBridge(0);
  for (int i = 0; i < 32; ++i) {
    char rp[32], dev[32];
    std::snprintf(rp, sizeof rp, "0000:00:%02x.0", i % 32);
    std::snprintf(dev, sizeof dev, "0000:%02x:00.0", (1 + i) & 0xff);
    b.gpu(b.rootPort(hb, rp), dev);
    std::snprintf(rp, sizeof rp, "0000:40:%02x.0", i % 32);
    std::snprintf(dev, sizeof dev, "0000:%02x:00.0", (0x41 + i) & 0xff);
    b.nic(b.rootPort(hb, rp), dev, "mlx5_" + std::to_string(i));
  }
  const Machine m = b.build();
  const RepairResult r = repairFlatTopology(m, pairGpusWithNics(m));
  ASSERT_EQ(r.actions.size(), 32u);
  EXPECT_EQ(r.actions[30].substr(0, 12), "ffff:ff:1f.0");
  EXPECT_EQ(r.actions[31], "not repaired further: no free synthetic bus id ffff:ff:NN.0 left");
  EXPECT_TRUE(r.repaired);
  expectParentsFirst(r.machine);
  Expected<Machine> back = readNcclXml(writeNcclXml(r.machine).value(), "x");
  EXPECT_TRUE(back.ok()) << "every synthetic id reads back";
}

TEST(RepairFlatTopology, BrokenTreeIsNotTouched) {
  Machine m = test::flatKvm();
  m.pci[1].parent = 5;
  const RepairResult r = repairFlatTopology(m, pairGpusWithNics(test::flatKvm()));
  EXPECT_FALSE(r.repaired);
  ASSERT_EQ(r.actions.size(), 1u);
  EXPECT_NE(r.actions[0].find("not repaired"), std::string::npos);
}

TEST(RepairFlatTopology, StalePairsAreIgnoredSafely) {
  const Machine m = test::flatKvm();
  std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  pairs[0].gpu = 42;
  pairs[1].nics = {99};
  EXPECT_FALSE(repairFlatTopology(m, pairs).repaired);
}

}  // namespace
}  // namespace pilot::topology
