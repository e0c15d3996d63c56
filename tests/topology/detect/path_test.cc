// classifyPath on hand-built machines: one case per path type, plus the edges.
#include <gtest/gtest.h>

#include "pilot/topology/model.h"

namespace pilot::topology {
namespace {

class MachineBuilder {
 public:
  int hostBridge(int numa) { return add(PciKind::HostBridge, -1, "", numa); }
  int rootPort(int parent, const char* bus) { return add(PciKind::RootPort, parent, bus, -1); }
  int bridge(int parent, const char* bus) { return add(PciKind::Switch, parent, bus, -1); }
  int device(int parent, const char* bus, int numa = -1) {
    return add(PciKind::Endpoint, parent, bus, numa);
  }
  Machine machine;

 private:
  int add(PciKind kind, int parent, const char* bus, int numa) {
    PciNode node;
    node.kind = kind;
    node.parent = parent;
    node.numaNode = numa;
    if (*bus) node.busId = BusId::parse(bus);
    machine.pci.push_back(node);
    return static_cast<int>(machine.pci.size()) - 1;
  }
};

class ClassifyPath : public ::testing::Test {
 protected:
  void SetUp() override {
    // NUMA 0, host bridge A: root port -> switch S1 (upstream + 3 downstream ports) with a GPU,
    // a dual-function NIC, and a second-level switch S2 holding another GPU; a second root port
    // with a GPU.
    int hbA = b.hostBridge(0);
    int rp1 = b.rootPort(hbA, "0000:00:01.0");
    int s1 = b.bridge(rp1, "0000:01:00.0");
    int s1a = b.bridge(s1, "0000:02:00.0");
    int s1b = b.bridge(s1, "0000:02:01.0");
    int s1c = b.bridge(s1, "0000:02:02.0");
    gpu0 = b.device(s1a, "0000:03:00.0");
    nic0 = b.device(s1b, "0000:04:00.0");
    nic0b = b.device(s1b, "0000:04:00.1");
    int s2 = b.bridge(s1c, "0000:05:00.0");
    int s2a = b.bridge(s2, "0000:06:00.0");
    gpu1 = b.device(s2a, "0000:07:00.0");
    int rp2 = b.rootPort(hbA, "0000:00:02.0");
    gpu2 = b.device(rp2, "0000:08:00.0");
    rpDevA = b.device(rp2, "0000:08:00.1");
    // NUMA 0, host bridge B; NUMA 1, host bridge C.
    int hbB = b.hostBridge(0);
    gpu3 = b.device(b.rootPort(hbB, "0000:20:01.0"), "0000:21:00.0");
    int hbC = b.hostBridge(1);
    nic1 = b.device(b.rootPort(hbC, "0000:80:01.0"), "0000:81:00.0");
    // Two host bridges with unknown NUMA (a VM hiding it).
    gpu4 = b.device(b.hostBridge(-1), "0000:90:00.0");
    gpu5 = b.device(b.hostBridge(-1), "0000:a0:00.0");
  }
  PathType path(int a, int c) { return classifyPath(b.machine, a, c); }

  MachineBuilder b;
  int gpu0, gpu1, gpu2, gpu3, gpu4, gpu5, nic0, nic0b, nic1, rpDevA;
};

TEST_F(ClassifyPath, PixUnderOneSwitch) {
  EXPECT_EQ(path(gpu0, nic0), PathType::PIX);  // different downstream ports, same switch
  EXPECT_EQ(path(nic0, gpu0), PathType::PIX);
  EXPECT_EQ(path(nic0, nic0b), PathType::PIX);  // same downstream port
  EXPECT_EQ(path(gpu0, gpu0), PathType::PIX);
}

TEST_F(ClassifyPath, PxbAcrossSwitchLevels) {
  EXPECT_EQ(path(gpu0, gpu1), PathType::PXB);
  EXPECT_EQ(path(gpu1, nic0), PathType::PXB);
}

TEST_F(ClassifyPath, PhbThroughHostBridgeOrRootPort) {
  EXPECT_EQ(path(gpu0, gpu2), PathType::PHB);    // different root ports, one host bridge
  EXPECT_EQ(path(gpu2, rpDevA), PathType::PHB);  // both directly under one root port
}

TEST_F(ClassifyPath, NodeAcrossHostBridgesOfOneNumaNode) {
  EXPECT_EQ(path(gpu0, gpu3), PathType::NODE);
  EXPECT_EQ(path(gpu4, gpu5), PathType::NODE);  // both unknown: taken as one node
}

TEST_F(ClassifyPath, SysAcrossNumaNodes) {
  EXPECT_EQ(path(gpu0, nic1), PathType::SYS);
  EXPECT_EQ(path(gpu3, nic1), PathType::SYS);
  EXPECT_EQ(path(gpu4, gpu0), PathType::SYS);  // one known, one unknown
}

TEST_F(ClassifyPath, InvalidIndexIsSys) {
  EXPECT_EQ(path(-1, gpu0), PathType::SYS);
  EXPECT_EQ(path(gpu0, 1000), PathType::SYS);
}

TEST_F(ClassifyPath, CorruptParentCycleDoesNotHang) {
  Machine m;
  m.pci.resize(2);
  m.pci[0].parent = 1;
  m.pci[1].parent = 0;
  EXPECT_EQ(classifyPath(m, 0, 1), PathType::PIX);
}

TEST(PathName, SpellsNvidiaSmiVocabulary) {
  EXPECT_STREQ(pathName(PathType::PIX), "PIX");
  EXPECT_STREQ(pathName(PathType::PXB), "PXB");
  EXPECT_STREQ(pathName(PathType::PHB), "PHB");
  EXPECT_STREQ(pathName(PathType::NODE), "NODE");
  EXPECT_STREQ(pathName(PathType::SYS), "SYS");
}

TEST(Machine, CpuByNuma) {
  Machine m;
  m.cpus.resize(2);
  m.cpus[0].numaId = 0;
  m.cpus[1].numaId = 3;
  ASSERT_NE(m.cpuByNuma(3), nullptr);
  EXPECT_EQ(m.cpuByNuma(3)->numaId, 3);
  EXPECT_EQ(m.cpuByNuma(1), nullptr);
  EXPECT_EQ(m.cpuByNuma(-1), nullptr);
}

}  // namespace
}  // namespace pilot::topology
