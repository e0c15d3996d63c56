// pairGpusWithNics: nearest NICs by PCIe path type, split or shared in bus order.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "machines.h"
#include "pilot/topology/affinity.h"

namespace pilot::topology {
namespace {

using test::MachineBuilder;

std::vector<std::string> nicNames(const Machine& m, const GpuNicPair& p) {
  std::vector<std::string> out;
  for (int n : p.nics) out.push_back(m.nics[n].name);
  return out;
}

using Names = std::vector<std::string>;

TEST(PairGpusWithNics, BareMetalPairsEachGpuWithTheNicOnItsSwitch) {
  const Machine m = test::bareMetalSwitches();
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  ASSERT_EQ(pairs.size(), 4u);
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(pairs[g].gpu, g);
    EXPECT_EQ(pairs[g].path, PathType::PIX);
    EXPECT_EQ(nicNames(m, pairs[g]), Names{"mlx5_" + std::to_string(g)});
  }
  EXPECT_EQ(pairs[0].why, "PIX: same PCIe switch 0000:01:00.0 as mlx5_0");
  EXPECT_EQ(pairs[3].why, "PIX: same PCIe switch 0000:91:00.0 as mlx5_3");
}

TEST(PairGpusWithNics, FlatVmSplitsTheNicsInBusOrder) {
  const Machine m = test::flatKvm();
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].path, PathType::PHB);
  EXPECT_EQ(nicNames(m, pairs[0]), Names{"mlx5_0"});
  EXPECT_EQ(nicNames(m, pairs[1]), Names{"mlx5_1"});
  EXPECT_EQ(pairs[0].why,
            "PHB: no PCIe switch, both under host bridge pci0000:00 with mlx5_0; GPUs 0-1 split "
            "mlx5_0, mlx5_1 in bus order");
  EXPECT_EQ(pairs[1].why,
            "PHB: no PCIe switch, both under host bridge pci0000:00 with mlx5_1; GPUs 0-1 split "
            "mlx5_0, mlx5_1 in bus order");
}

TEST(PairGpusWithNics, RailsGiveEachGpuAllItsNics) {
  const Machine m = test::rails();
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(nicNames(m, pairs[0]), (Names{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(nicNames(m, pairs[1]), (Names{"mlx5_2", "mlx5_3"}));
  EXPECT_EQ(pairs[1].path, PathType::PIX);
  EXPECT_EQ(pairs[1].why, "PIX: same PCIe switch 0000:11:00.0 as mlx5_2; rails mlx5_2, mlx5_3");
}

TEST(PairGpusWithNics, MoreNicsThanGpusSplitContiguously) {
  // 2 GPUs + 5 NICs at one switch: GPU 0 gets [0, 2), GPU 1 gets [2, 5).
  MachineBuilder b("5 NICs for 2 GPUs");
  b.cpu(0);
  const int usp = b.bridge(b.rootPort(b.hostBridge(0), "0000:00:01.0"), "0000:01:00.0");
  b.gpu(b.bridge(usp, "0000:02:00.0"), "0000:03:00.0");
  b.gpu(b.bridge(usp, "0000:02:01.0"), "0000:04:00.0");
  for (int i = 0; i < 5; ++i) {
    b.nic(b.bridge(usp, "0000:02:1" + std::to_string(i) + ".0"),
          "0000:1" + std::to_string(i) + ":00.0", "mlx5_" + std::to_string(i));
  }
  const Machine m = b.build();
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(nicNames(m, pairs[0]), (Names{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(nicNames(m, pairs[1]), (Names{"mlx5_2", "mlx5_3", "mlx5_4"}));
}

TEST(PairGpusWithNics, FewerNicsThanGpusShareContiguously) {
  const Machine m = test::sharing();
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  ASSERT_EQ(pairs.size(), 4u);
  for (const GpuNicPair& p : pairs) {
    EXPECT_EQ(nicNames(m, p), Names{"mlx5_0"});
    EXPECT_EQ(p.path, PathType::PIX);
  }
  EXPECT_EQ(pairs[2].why, "PIX: same PCIe switch 0000:01:00.0 as mlx5_0; GPUs 0-3 share mlx5_0");

  // 4 GPUs, 3 NICs: floor(i*3/4) = 0, 0, 1, 2.
  MachineBuilder b("4 GPUs, 3 NICs");
  b.cpu(0);
  const int usp = b.bridge(b.rootPort(b.hostBridge(0), "0000:00:01.0"), "0000:01:00.0");
  for (int i = 0; i < 4; ++i) {
    b.gpu(b.bridge(usp, "0000:02:0" + std::to_string(i) + ".0"),
          "0000:0" + std::to_string(3 + i) + ":00.0");
  }
  for (int i = 0; i < 3; ++i) {
    b.nic(b.bridge(usp, "0000:02:1" + std::to_string(i) + ".0"),
          "0000:1" + std::to_string(i) + ":00.0", "mlx5_" + std::to_string(i));
  }
  const Machine m3 = b.build();
  const std::vector<GpuNicPair> p3 = pairGpusWithNics(m3);
  ASSERT_EQ(p3.size(), 4u);
  EXPECT_EQ(nicNames(m3, p3[0]), Names{"mlx5_0"});
  EXPECT_EQ(nicNames(m3, p3[1]), Names{"mlx5_0"});
  EXPECT_EQ(nicNames(m3, p3[2]), Names{"mlx5_1"});
  EXPECT_EQ(nicNames(m3, p3[3]), Names{"mlx5_2"});
  EXPECT_NE(p3[3].why.find("GPUs 0-3 share mlx5_0, mlx5_1, mlx5_2 contiguously"), std::string::npos)
      << p3[3].why;
}

TEST(PairGpusWithNics, CrossSocketIsSys) {
  const Machine m = test::crossSocket();
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].path, PathType::PIX);
  EXPECT_EQ(pairs[1].path, PathType::SYS);
  EXPECT_EQ(nicNames(m, pairs[1]), Names{"mlx5_0"});
  EXPECT_EQ(pairs[1].why, "SYS: no NIC on NUMA node 1, mlx5_0 is on node 0; GPUs 0-1 share mlx5_0");
}

TEST(PairGpusWithNics, NoNicsNoPairs) {
  EXPECT_TRUE(pairGpusWithNics(test::noNics()).empty());
  EXPECT_EQ(describePairs(test::noNics(), {}), "no pairs: no NIC that can carry NCCL traffic\n");
  EXPECT_TRUE(pairGpusWithNics(Machine{}).empty());
  EXPECT_EQ(describePairs(Machine{}, {}), "no pairs: no GPU\n");
}

TEST(PairGpusWithNics, RdmaNicsWinOverEthernetAndDownPortsNeverCount) {
  const Machine bare = test::bareMetalSwitches();
  const std::vector<int> eligible = eligibleNics(bare);
  for (int n : eligible) EXPECT_NE(bare.nics[n].name, "eno1");
  EXPECT_EQ(eligible.size(), 4u);

  // Without RDMA devices, Ethernet NICs with a PCI device are used; virtual ones never.
  MachineBuilder b("ethernet only");
  b.cpu(0);
  const int hb = b.hostBridge(0);
  b.gpu(b.rootPort(hb, "0000:00:01.0"), "0000:01:00.0");
  b.nic(b.rootPort(hb, "0000:00:02.0"), "0000:02:00.0", "ens2", false);
  Machine eth = b.build();
  Nic virt;
  virt.name = "docker0";
  eth.nics.push_back(virt);
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(eth);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(nicNames(eth, pairs[0]), Names{"ens2"});

  Machine down = test::rails();
  down.nics[1].state = "DOWN";  // mlx5_1
  const std::vector<GpuNicPair> p = pairGpusWithNics(down);
  EXPECT_EQ(nicNames(down, p[0]), Names{"mlx5_0"});
}

TEST(PairGpusWithNics, DeterministicWhateverTheModelOrder) {
  const Machine m = test::bareMetalSwitches();
  const std::string expected = describePairs(m, pairGpusWithNics(m));
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    Machine shuffled = m;
    std::shuffle(shuffled.nics.begin(), shuffled.nics.end(), rng);
    std::shuffle(shuffled.gpus.begin(), shuffled.gpus.end(), rng);
    // The pairs name GPUs by index, so compare through bus ids and NIC names.
    std::vector<std::string> seen;
    for (const GpuNicPair& p : pairGpusWithNics(shuffled)) {
      std::string line = shuffled.pci[shuffled.gpus[p.gpu].pci].busId->str() + " ->";
      for (const std::string& n : nicNames(shuffled, p)) line += " " + n;
      seen.push_back(line + " | " + p.why.substr(0, p.why.find(';')));
    }
    std::sort(seen.begin(), seen.end());
    std::vector<std::string> want;
    for (const GpuNicPair& p : pairGpusWithNics(m)) {
      std::string line = m.pci[m.gpus[p.gpu].pci].busId->str() + " ->";
      for (const std::string& n : nicNames(m, p)) line += " " + n;
      want.push_back(line + " | " + p.why.substr(0, p.why.find(';')));
    }
    std::sort(want.begin(), want.end());
    EXPECT_EQ(seen, want);
  }
  EXPECT_EQ(describePairs(m, pairGpusWithNics(m)), expected);
}

TEST(PairGpusWithNics, DescribePairsLine) {
  const Machine m = test::rails();
  EXPECT_EQ(describePairs(m, pairGpusWithNics(m)),
            "GPU 0 0000:03:00.0 -> mlx5_0 (0000:04:00.0), mlx5_1 (0000:05:00.0) | PIX: same PCIe "
            "switch 0000:01:00.0 as mlx5_0; rails mlx5_0, mlx5_1\n"
            "GPU 1 0000:13:00.0 -> mlx5_2 (0000:14:00.0), mlx5_3 (0000:15:00.0) | PIX: same PCIe "
            "switch 0000:11:00.0 as mlx5_2; rails mlx5_2, mlx5_3\n");
}

TEST(PairGpusWithNics, NodeAndPxbExplained) {
  // Two host bridges on one NUMA node (Ice Lake: one per root port).
  MachineBuilder b("icx");
  b.cpu(0);
  b.nic(b.rootPort(b.hostBridge(0), "0000:15:01.0"), "0000:16:00.0", "mlx5_0");
  const int usp = b.bridge(b.rootPort(b.hostBridge(0), "0000:68:01.0"), "0000:69:00.0");
  const int inner = b.bridge(b.bridge(usp, "0000:6a:00.0"), "0000:6b:00.0");
  b.gpu(b.bridge(inner, "0000:6c:00.0"), "0000:6d:00.0");
  b.nic(b.bridge(usp, "0000:6a:01.0"), "0000:6e:00.0", "mlx5_1");
  Machine m = b.build();
  std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].path, PathType::PXB);
  EXPECT_EQ(nicNames(m, pairs[0]), Names{"mlx5_1"});
  EXPECT_EQ(pairs[0].why, "PXB: PCIe switch 0000:69:00.0 above mlx5_1, through several bridges");

  m.nics[1].state = "DOWN";
  pairs = pairGpusWithNics(m);
  EXPECT_EQ(pairs[0].path, PathType::NODE);
  EXPECT_EQ(pairs[0].why,
            "NODE: different host bridges on NUMA node 0: GPU under host bridge pci0000:68, "
            "mlx5_0 under host bridge pci0000:15");
}

TEST(PairGpusWithNics, CorruptInputNeverHangsOrCrashes) {
  Machine loop = test::rails();
  loop.pci[0].parent = 5;  // a cycle through the host bridge
  EXPECT_TRUE(pairGpusWithNics(loop).empty());

  const Machine m = test::rails();
  GpuNicPair stale;
  stale.gpu = 7;
  GpuNicPair badNic;
  badNic.gpu = 0;
  badNic.nics = {42};
  badNic.why = "stale";
  EXPECT_EQ(describePairs(m, {stale, badNic}), "GPU 0 0000:03:00.0 -> ? | stale\n");
}

}  // namespace
}  // namespace pilot::topology
