// Golden pairs and XML: hand-built machines, our own hwloc export, and the published hwloc
// fixtures through detection (hwloc loaded with dlopen, as the plugin does).
// tests/topology/golden/README.md says how to update.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "golden.h"
#include "machines.h"
#include "nccl_rules.h"
#include "pilot/topology/affinity.h"
#include "pilot/topology/nccl_xml.h"
#include "pilot/topology/sources.h"
#include "published_fixture.h"

namespace pilot::topology {
namespace {

void expectPipelineGoldens(const std::string& name, const Machine& machine) {
  const test::GoldenOutput out = test::pipeline(machine);
  if (out.xml.rfind("error: ", 0) != 0) {
    std::vector<std::string> problems = test::checkNcclRules(out.xml, test::RulesMode::OurFile);
    // The writer cannot invent a CPU vendor the source did not record (the supermicro export has
    // no CPUVendor); NCCL then reads CPUID itself for the CPUs above the devices it detects.
    const bool vendorKnown = std::any_of(machine.cpus.begin(), machine.cpus.end(),
                                         [](const CpuNode& c) { return !c.vendor.empty(); });
    if (!vendorKnown) {
      problems.erase(std::remove_if(problems.begin(), problems.end(),
                                    [](const std::string& p) {
                                      return p.find("x86 cpu without vendor") != std::string::npos;
                                    }),
                     problems.end());
    }
    EXPECT_EQ(problems, std::vector<std::string>{}) << out.xml;
  }
  test::expectGolden(name + ".pairs.txt", out.pairs);
  test::expectGolden(name + ".xml", out.xml);
}

class HandBuiltGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(HandBuiltGolden, PairsAndXml) {
  for (const auto& [name, machine] : test::handBuiltMachines()) {
    if (name == GetParam()) return expectPipelineGoldens(name, machine);
  }
  FAIL() << "no machine " << GetParam();
}

std::vector<std::string> handBuiltNames() {
  std::vector<std::string> names;
  for (const auto& [name, machine] : test::handBuiltMachines()) names.push_back(name);
  return names;
}

std::string testName(const ::testing::TestParamInfo<std::string>& param) {
  std::string name = param.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Machines, HandBuiltGolden, ::testing::ValuesIn(handBuiltNames()),
                         testName);

/// A published hwloc fixture (../shared/fixtures/topo/hwloc/NAME.xml).
std::string hwlocFixture(const std::string& name) {
  return testsupport::sharedFixture("topo/hwloc/" + name + ".xml");
}

/// Our own hwloc export (tests/topology/data/hwloc/NAME.xml).
std::string ownHwlocXml(const std::string& name) {
  return std::string(PILOT_TOPOLOGY_DATA) + "/hwloc/" + name + ".xml";
}

/// An hwloc export through detectMachine, or a skip while detection cannot run here.
Expected<Machine> detectHwlocXml(const std::string& path, const std::string& name) {
  std::string why;
  std::shared_ptr<const HwlocLibrary> hwloc = loadHwlocDynamic(&why);
  if (!hwloc) return Error{"skip: hwloc cannot be loaded: " + why};
  DetectOptions options;
  options.hwlocXml = path;
  Expected<Machine> m = detectMachine(options, hwloc);
  if (!m.ok() && m.error().find("not implemented") != std::string::npos) {
    return Error{"skip: " + m.error()};
  }
  if (m.ok()) m->source = "hwloc XML " + name + ".xml";  // no absolute path in goldens
  return m;
}

class HwlocGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(HwlocGolden, PairsAndXml) {
  PILOT_REQUIRE_FIXTURE(hwlocFixture(GetParam()));
  Expected<Machine> m = detectHwlocXml(hwlocFixture(GetParam()), GetParam());
  if (!m.ok() && m.error().rfind("skip: ", 0) == 0) GTEST_SKIP() << m.error();
  ASSERT_TRUE(m.ok()) << m.error();
  expectPipelineGoldens(GetParam(), *m);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HwlocGolden,
                         ::testing::Values("hwloc-jwb0004", "hwloc-mel2001", "hwloc-nvidia-dgx2h",
                                           "hwloc-supermicro-x9drg-wholeio"),
                         testName);

TEST(HwlocGoldenOwn, BareMetalTwoSocketExport) {
  // Runs in every checkout: our own export of the recorded bare-metal tree.
  const std::string name = "baremetal-2gpu-2nic-switch";
  Expected<Machine> m = detectHwlocXml(ownHwlocXml(name), "hwloc-" + name);
  if (!m.ok() && m.error().rfind("skip: ", 0) == 0) GTEST_SKIP() << m.error();
  ASSERT_TRUE(m.ok()) << m.error();
  expectPipelineGoldens("hwloc-" + name, *m);
}

TEST(HwlocFixtures, JuwelsBoosterPairsEachA100WithTheHdrNicOnItsSwitch) {
  PILOT_REQUIRE_FIXTURE(hwlocFixture("hwloc-jwb0004"));
  Expected<Machine> detected = detectHwlocXml(hwlocFixture("hwloc-jwb0004"), "hwloc-jwb0004");
  if (!detected.ok() && detected.error().rfind("skip: ", 0) == 0) {
    GTEST_SKIP() << detected.error();
  }
  ASSERT_TRUE(detected.ok()) << detected.error();
  const Machine& m = *detected;
  ASSERT_EQ(m.gpus.size(), 4u);
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(m);
  ASSERT_EQ(pairs.size(), 4u);
  std::set<int> used;
  for (const GpuNicPair& p : pairs) {
    ASSERT_EQ(p.nics.size(), 1u) << p.why;
    const Nic& nic = m.nics[p.nics[0]];
    EXPECT_EQ(nic.name.rfind("mlx5_", 0), 0u) << nic.name;
    EXPECT_TRUE(used.insert(p.nics[0]).second) << "each NIC once";
    EXPECT_EQ(p.path, PathType::PIX) << p.why;
    // Their common ancestor is a Broadcom PEX switch (1000:c010).
    const PciNode& gpuParent = m.pci[m.pci[m.gpus[p.gpu].pci].parent];
    const PciNode& nicParent = m.pci[m.pci[nic.pci].parent];
    EXPECT_EQ(m.pci[gpuParent.parent].busId, m.pci[nicParent.parent].busId);
    EXPECT_EQ(m.pci[gpuParent.parent].vendor, 0x1000);
  }
  EXPECT_FALSE(repairFlatTopology(m, pairs).repaired);
}

}  // namespace
}  // namespace pilot::topology
