// The real NCCL topology files in ../shared/fixtures/topo/nccl-xml (skipped without them): NCCL
// loads every one of them, so our validator (NCCL mode) and reader must too, and what we write from
// them must keep their GPUs, NIC endpoints and switch structure.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "golden.h"
#include "nccl_rules.h"
#include "pilot/topology/nccl_xml.h"
#include "published_fixture.h"

namespace pilot::topology {
namespace {

const std::string kDir = testsupport::sharedFixture("topo/nccl-xml");

const std::vector<std::string> kFiles = {
    "aws-g5.48xl-topo.xml",
    "aws-p4d-24xl-topo.xml",
    "aws-p4de-24xl-topo.xml",
    "aws-p5.48xl-topo.xml",
    "azure-ndv2-topo.xml",
    "azure-ndv4-topo.xml",
    "azure-ndv5-topo.xml",
    "ibmcloud-gx3d-h100-vsi-dump.xml",
    "nccl-issue2397-icx-a100pcie-cx6dx-roce-host1.xml",
    "nccl-issue2397-icx-a100pcie-cx6dx-roce-host2.xml",
};

/// What the writer keeps of a machine already in NCCL's shape, as "child <- parent" lines:
/// GPU endpoints, NIC endpoints at function 0, and the switches above them (by bus id), each
/// hanging from its nearest kept switch or from "cpu N".
std::set<std::string> keptShape(const Machine& m) {
  std::map<int, std::string> kept;  // pci index -> role
  auto keepWithSwitches = [&](int pci, const std::string& role) {
    kept[pci] = role;
    for (int p = m.pci[pci].parent; p >= 0; p = m.pci[p].parent) {
      if (m.pci[p].kind == PciKind::Switch) kept.emplace(p, "switch");
    }
  };
  for (const Gpu& g : m.gpus) keepWithSwitches(g.pci, "gpu");
  for (const Nic& n : m.nics) {
    if (n.pci >= 0) keepWithSwitches(n.pci, "nic");
  }
  std::set<std::string> shape;
  for (const auto& [pci, role] : kept) {
    BusId bus = *m.pci[pci].busId;
    if (role == "nic") bus = ncclNicBusId(bus);
    std::string parent;
    for (int p = m.pci[pci].parent; p >= 0 && parent.empty(); p = m.pci[p].parent) {
      if (kept.count(p)) parent = m.pci[p].busId->str();
    }
    if (parent.empty()) {
      int numa = -1;
      for (int p = pci; p >= 0 && numa < 0; p = m.pci[p].parent) numa = m.pci[p].numaNode;
      parent = "cpu " + std::to_string(numa);
    }
    shape.insert(role + " " + bus.str() + " <- " + parent);
  }
  return shape;
}

std::string fixture(const std::string& name) {
  std::optional<std::string> text = test::readFile(kDir + "/" + name);
  EXPECT_TRUE(text.has_value()) << kDir << "/" << name;
  return text.value_or("");
}

TEST(NcclXmlFixtures, ListIsComplete) {
  PILOT_REQUIRE_FIXTURE(kDir);
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    if (entry.path().extension() == ".xml") found.push_back(entry.path().filename().string());
  }
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, kFiles) << "a new fixture: add it to kFiles (and maybe to the checks below)";
}

class NcclXmlFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(NcclXmlFixture, NcclAcceptsItSoDoTheValidatorAndTheReader) {
  PILOT_REQUIRE_FIXTURE(kDir + "/" + GetParam());
  const std::string text = fixture(GetParam());
  EXPECT_EQ(test::checkNcclRules(text, test::RulesMode::Nccl), std::vector<std::string>{});
  Expected<Machine> m = readNcclXml(text, GetParam());
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_FALSE(m->cpus.empty());
  EXPECT_FALSE(m->pci.empty());
  for (size_t i = 0; i < m->pci.size(); ++i) EXPECT_LT(m->pci[i].parent, static_cast<int>(i));
}

TEST_P(NcclXmlFixture, SurvivesReadWriteRead) {
  PILOT_REQUIRE_FIXTURE(kDir + "/" + GetParam());
  Expected<Machine> first = readNcclXml(fixture(GetParam()), GetParam());
  ASSERT_TRUE(first.ok()) << first.error();
  Expected<std::string> xml = writeNcclXml(*first);
  ASSERT_TRUE(xml.ok()) << xml.error();
  EXPECT_EQ(test::checkNcclRules(*xml, test::RulesMode::OurFile), std::vector<std::string>{})
      << *xml;
  Expected<Machine> second = readNcclXml(*xml, "rewritten " + GetParam());
  ASSERT_TRUE(second.ok()) << second.error() << "\n" << *xml;

  std::set<std::string> gpusBefore, gpusAfter;
  for (const Gpu& g : first->gpus) gpusBefore.insert(first->pci[g.pci].busId->str());
  for (const Gpu& g : second->gpus) gpusAfter.insert(second->pci[g.pci].busId->str());
  EXPECT_EQ(gpusBefore, gpusAfter);
  EXPECT_EQ(keptShape(*first), keptShape(*second)) << *xml;
  // Written again, the text is a fixed point.
  Expected<std::string> again = writeNcclXml(*second);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *xml);
}

INSTANTIATE_TEST_SUITE_P(All, NcclXmlFixture, ::testing::ValuesIn(kFiles),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param.substr(0, param.param.size() - 4);
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

Machine readFixture(const std::string& name) {
  Expected<Machine> m = readNcclXml(fixture(name), name);
  EXPECT_TRUE(m.ok()) << m.error();
  return m.ok() ? *m : Machine{};
}

TEST(NcclXmlFixtures, AzureNdv4FakeSwitchesPairEachGpuWithANic) {
  PILOT_REQUIRE_FIXTURE(kDir + "/azure-ndv4-topo.xml");
  const Machine m = readFixture("azure-ndv4-topo.xml");
  EXPECT_EQ(m.cpus.size(), 4u);
  EXPECT_EQ(m.cpus[1].vendor, "AuthenticAMD");
  EXPECT_EQ(m.cpus[1].familyId, 23);
  EXPECT_EQ(m.gpus.size(), 8u);
  ASSERT_EQ(m.nics.size(), 8u);
  int synthetic = 0;
  for (const PciNode& p : m.pci) synthetic += p.synthetic && p.kind == PciKind::Switch;
  EXPECT_EQ(synthetic, 4);
  for (const Nic& n : m.nics) {
    EXPECT_TRUE(n.rdma) << "0x0207: InfiniBand";
    EXPECT_EQ(m.pci[n.pci].linkSpeed, "16.0 GT/s PCIe");
  }
  // The point of Azure's file: each GPU is PIX to two NICs behind its fake switch.
  EXPECT_EQ(classifyPath(m, m.gpus[0].pci, m.nics[0].pci), PathType::PIX);
}

TEST(NcclXmlFixtures, IbmDumpCarriesGpuAndNetFacts) {
  PILOT_REQUIRE_FIXTURE(kDir + "/ibmcloud-gx3d-h100-vsi-dump.xml");
  const Machine m = readFixture("ibmcloud-gx3d-h100-vsi-dump.xml");
  ASSERT_EQ(m.gpus.size(), 8u);
  ASSERT_EQ(m.nics.size(), 8u);
  for (const Gpu& g : m.gpus) {
    EXPECT_EQ(g.sm, 90);
    EXPECT_EQ(g.nvlinks.size(), 4u);
    EXPECT_EQ(m.pci[g.pci].linkWidth, 0) << "the dump's width 0 (NCCL reads 16)";
  }
  EXPECT_EQ(m.nics[0].name, "mlx5_7");  // at 0000:a3:00.0, the lowest bus id
  EXPECT_EQ(m.nics[0].speedMbps, 200000);
  EXPECT_EQ(m.nics[0].guid, "0x34f4e30003e1a258");
  EXPECT_EQ(m.pci[m.pci[m.nics[0].pci].parent].kind, PciKind::Switch);
  EXPECT_EQ(m.cpus[0].modelId, 143);
}

TEST(NcclXmlFixtures, Issue2397DualPortSharesOnePciDevice) {
  PILOT_REQUIRE_FIXTURE(kDir + "/nccl-issue2397-icx-a100pcie-cx6dx-roce-host1.xml");
  const Machine m = readFixture("nccl-issue2397-icx-a100pcie-cx6dx-roce-host1.xml");
  ASSERT_EQ(m.nics.size(), 2u);
  EXPECT_EQ(m.nics[0].pci, m.nics[1].pci);
  EXPECT_EQ(m.nics[0].guid, m.nics[1].guid);
  EXPECT_EQ(m.nics[1].port, 2);
  EXPECT_EQ(m.gpus.size(), 2u);
  EXPECT_EQ(m.gpus[0].sm, 80);
  EXPECT_EQ(m.pci[m.gpus[1].pci].numaNode, 1);
}

TEST(NcclXmlFixtures, AwsSkeletonsHaveClasslessNodes) {
  PILOT_REQUIRE_FIXTURE(kDir);
  const Machine p5 = readFixture("aws-p5.48xl-topo.xml");
  int switches = 0, endpoints = 0;
  for (const PciNode& p : p5.pci) (p.kind == PciKind::Switch ? switches : endpoints)++;
  EXPECT_EQ(switches, 8);
  EXPECT_EQ(endpoints, 32);
  // No class anywhere: nothing says which are GPUs or NICs, so the writer keeps nothing.
  Expected<std::string> xml = writeNcclXml(p5);
  ASSERT_TRUE(xml.ok());
  EXPECT_EQ(*xml, "<system version=\"1\">\n</system>\n");

  const Machine p4d = readFixture("aws-p4d-24xl-topo.xml");
  EXPECT_EQ(p4d.gpus.size(), 8u);
  EXPECT_EQ(p4d.nics.size(), 4u);
  EXPECT_EQ(p4d.pci[0].linkSpeed, "8.0 GT/s PCIe");
  EXPECT_EQ(p4d.pci[0].vendor, 0xffff);
}

}  // namespace
}  // namespace pilot::topology
