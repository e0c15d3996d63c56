// writeNcclXml: what NCCL's sysfs walk would see, spelled the way NCCL's parser wants it.
#include <gtest/gtest.h>

#include <string>

#include "machines.h"
#include "nccl_rules.h"
#include "pilot/topology/affinity.h"
#include "pilot/topology/nccl_xml.h"

namespace pilot::topology {
namespace {

using test::MachineBuilder;

std::string write(const Machine& m) {
  Expected<std::string> xml = writeNcclXml(m);
  EXPECT_TRUE(xml.ok()) << xml.error();
  if (!xml.ok()) return "";
  std::string problems;
  for (const std::string& p : test::checkNcclRules(*xml, test::RulesMode::OurFile)) {
    problems += p + "\n";
  }
  EXPECT_EQ(problems, "") << *xml;
  return *xml;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(WriteNcclXml, ExactText) {
  EXPECT_EQ(
      write(test::dualPortNic()),
      "<system version=\"1\">\n"
      "  <cpu numaid=\"0\" affinity=\"ffffffff\" arch=\"x86_64\" vendor=\"AuthenticAMD\" "
      "familyid=\"25\" modelid=\"1\">\n"
      "    <pci busid=\"0000:01:00.0\" class=\"0x060400\" vendor=\"0x1000\" device=\"0xc010\" "
      "subsystem_vendor=\"0x1000\" subsystem_device=\"0x100b\" link_speed=\"16.0 GT/s PCIe\" "
      "link_width=\"16\">\n"
      "      <pci busid=\"0000:03:00.0\" class=\"0x030200\" vendor=\"0x10de\" "
      "device=\"0x20b0\" subsystem_vendor=\"0x10de\" subsystem_device=\"0x134f\" "
      "link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"/>\n"
      "      <pci busid=\"0000:04:00.0\" class=\"0x020000\" vendor=\"0x15b3\" "
      "device=\"0x101d\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"/>\n"
      "    </pci>\n"
      "  </cpu>\n"
      "</system>\n");
}

TEST(WriteNcclXml, KeepsSwitchUpstreamPortsOnlyAsNcclsSysfsWalkDoes) {
  const std::string xml = write(test::bareMetalSwitches());
  for (const char* up : {"0000:01:00.0", "0000:11:00.0", "0000:81:00.0", "0000:91:00.0"}) {
    EXPECT_TRUE(has(xml, std::string("<pci busid=\"") + up + "\" class=\"0x060400\"")) << up;
  }
  // Downstream ports, root ports and the NVMe drive are not NCCL's business.
  for (const char* gone : {"0000:02:00.0", "0000:02:01.0", "0000:00:01.0", "0000:20:00.0"}) {
    EXPECT_FALSE(has(xml, gone)) << gone;
  }
  EXPECT_TRUE(has(xml, "    <pci busid=\"0000:21:00.0\" class=\"0x020000\"")) << "eno1 on the cpu";
  EXPECT_TRUE(has(xml, "  <cpu numaid=\"1\" affinity=\"ffffffff,00000000\""));

  // Read back: GPU and NIC side by side under the upstream port, which makes them PIX.
  Expected<Machine> back = readNcclXml(xml, "written");
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_EQ(back->gpus.size(), 4u);
  ASSERT_EQ(back->nics.size(), 5u);
  const Machine& m = *back;
  EXPECT_EQ(m.pci[m.pci[m.gpus[0].pci].parent].busId->str(), "0000:01:00.0");
  EXPECT_EQ(classifyPath(m, m.gpus[0].pci, m.nics[0].pci), PathType::PIX);
  EXPECT_EQ(m.pci[m.gpus[3].pci].numaNode, 1);
}

TEST(WriteNcclXml, TreeAlreadyInNcclsShapeKeepsEverySwitch) {
  // Read from an NCCL file: no host bridge above, nested switches are real levels.
  Machine m;
  m.cpus.push_back(CpuNode{0, "arm64", "", -1, -1, ""});
  PciNode sw;
  sw.kind = PciKind::Switch;
  sw.busId = BusId::parse("0000:01:00.0");
  sw.numaNode = 0;
  m.pci.push_back(sw);
  sw.busId = BusId::parse("0000:02:00.0");
  sw.parent = 0;
  m.pci.push_back(sw);
  PciNode gpu;
  gpu.busId = BusId::parse("0000:03:00.0");
  gpu.parent = 1;
  gpu.classCode = 0x030200;
  m.pci.push_back(gpu);
  m.gpus.push_back(Gpu{2, 90, "", {}});
  const std::string xml = write(m);
  EXPECT_TRUE(has(xml,
                  "  <cpu numaid=\"0\" arch=\"arm64\">\n"
                  "    <pci busid=\"0000:01:00.0\" class=\"0x060400\" link_speed=\"16.0 GT/s "
                  "PCIe\" link_width=\"16\">\n"
                  "      <pci busid=\"0000:02:00.0\""))
      << xml;
}

TEST(WriteNcclXml, FillsUnknownLinkFactsFromTheParentElseGen4x16) {
  const std::string xml = write(test::unknownLinks());
  // The upstream port and everything above it know nothing: Gen4, width 16.
  EXPECT_TRUE(has(xml,
                  "busid=\"0000:01:00.0\" class=\"0x060400\" vendor=\"0x1000\" "
                  "device=\"0xc010\" subsystem_vendor=\"0x1000\" subsystem_device=\"0x100b\" "
                  "link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">"))
      << xml;
  // The GPU's own link is unknown; the downstream port above it says Gen5.
  EXPECT_TRUE(has(xml,
                  "busid=\"0000:03:00.0\" class=\"0x030200\" vendor=\"0x10de\" "
                  "device=\"0x20b0\" subsystem_vendor=\"0x10de\" subsystem_device=\"0x134f\" "
                  "link_speed=\"32.0 GT/s PCIe\" link_width=\"16\"/>"))
      << xml;
  // "64 GT/s" is not NCCL's spelling (NCCL would read Gen3): treated as unknown.
  EXPECT_TRUE(has(xml,
                  "busid=\"0000:04:00.0\" class=\"0x020700\" vendor=\"0x15b3\" "
                  "device=\"0x101b\" link_speed=\"16.0 GT/s PCIe\" link_width=\"8\"/>"))
      << xml;
}

TEST(WriteNcclXml, NormalizesOldSpeedSpelling) {
  MachineBuilder b("old kernel");
  b.cpu(0);
  b.gpu(b.hostBridge(0), "0000:3b:00.0", "8 GT/s", 16);
  EXPECT_TRUE(has(write(b.build()), "link_speed=\"8.0 GT/s PCIe\""));
}

TEST(WriteNcclXml, MergesNicFunctionsAtFunctionZero) {
  const std::string xml = write(test::dualPortNic());
  EXPECT_TRUE(has(xml, "0000:04:00.0"));
  EXPECT_FALSE(has(xml, "0000:04:00.1"));

  // Only the second port is an RDMA device (port 1 is a plain PF elsewhere): still .0.
  MachineBuilder b("second function only");
  b.cpu(0);
  const int hb = b.hostBridge(0);
  b.gpu(hb, "0000:03:00.0");
  b.nic(hb, "0000:04:00.1", "mlx5_1");
  const std::string one = write(b.build());
  EXPECT_TRUE(has(one, "<pci busid=\"0000:04:00.0\" class=\"0x020700\"")) << one;
  EXPECT_FALSE(has(one, "0000:04:00.1"));
}

// NCCL takes a <pci> for a GPU or NIC by its class prefix, so a GPU or NIC the model holds with
// another class (read from a file: tests/fuzz/nccl_xml_fuzz) is written with its role's class,
// and reads back as what it is.
TEST(WriteNcclXml, GpusAndNicsAreWrittenWithAClassThatSaysSo) {
  MachineBuilder b("classes that do not say GPU or NIC");
  b.cpu(0);
  const int hb = b.hostBridge(0);
  const int gpu = b.gpu(hb, "0000:03:00.0");
  const int nic = b.nic(hb, "0000:04:00.0", "mlx5_0", /*rdma=*/false);
  Machine m = b.build();
  m.pci[gpu].classCode = 0x060400;
  m.pci[nic].classCode = 0x040000;
  const std::string xml = write(m);
  EXPECT_TRUE(has(xml, "<pci busid=\"0000:03:00.0\" class=\"0x030200\"")) << xml;
  EXPECT_TRUE(has(xml, "<pci busid=\"0000:04:00.0\" class=\"0x020000\"")) << xml;
  Expected<Machine> back = readNcclXml(xml, "written.xml");
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->gpus.size(), 1u);
  EXPECT_EQ(back->nics.size(), 1u);
  EXPECT_EQ(write(*back), xml);
}

// A value NCCL cannot read (past 253 characters once escaped) would make it refuse the file
// (tests/fuzz/nccl_xml_fuzz): it is left out, and NCCL fills it from the machine.
TEST(WriteNcclXml, LeavesOutValuesTooLongForNccl) {
  Machine m = test::noNics();
  m.cpus[0].vendor = "Genuine" + std::string(100, '<');
  Expected<std::string> xml = writeNcclXml(m);
  ASSERT_TRUE(xml.ok()) << xml.error();
  EXPECT_FALSE(has(*xml, " vendor=\"Genuine")) << *xml;
  EXPECT_TRUE(test::checkNcclRules(*xml, test::RulesMode::Nccl).empty()) << *xml;
}

TEST(WriteNcclXml, RefusesMoreNodesThanNcclTakes) {
  // 1 system + 1 cpu + GPUs.
  EXPECT_TRUE(writeNcclXml(test::manyGpus(kMaxXmlNodes - 2)).ok());
  Expected<std::string> over = writeNcclXml(test::manyGpus(kMaxXmlNodes - 1));
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().find("201 XML nodes, NCCL accepts at most 256"), std::string::npos)
      << over.error();
  EXPECT_FALSE(writeNcclXml(test::manyGpus(250)).ok());
}

TEST(WriteNcclXml, CpuFactsAreBorrowedButNumaAndAffinityStayPerNode) {
  MachineBuilder b("numa without cpu entry");
  b.cpu(0, "0000ffff", "GenuineIntel", 6, 106);
  b.gpu(b.hostBridge(0), "0000:17:00.0");
  b.gpu(b.hostBridge(1), "0000:b1:00.0");   // NUMA 1 has no CpuNode
  b.gpu(b.hostBridge(-1), "0000:e3:00.0");  // unknown NUMA: written last
  const std::string xml = write(b.build());
  EXPECT_TRUE(has(xml,
                  "  <cpu numaid=\"0\" affinity=\"0000ffff\" arch=\"x86_64\" "
                  "vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"106\">\n"
                  "    <pci busid=\"0000:17:00.0\""));
  EXPECT_TRUE(has(xml,
                  "  <cpu numaid=\"1\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
                  "familyid=\"6\" modelid=\"106\">\n    <pci busid=\"0000:b1:00.0\""));
  EXPECT_TRUE(has(xml,
                  "  <cpu numaid=\"-1\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
                  "familyid=\"6\" modelid=\"106\">\n    <pci busid=\"0000:e3:00.0\""));
  EXPECT_LT(xml.find("numaid=\"1\""), xml.find("numaid=\"-1\""));
}

TEST(WriteNcclXml, AffinityNcclCannotReadIsLeftOut) {
  MachineBuilder b("huge machine");
  std::string mask = "ffffffff";
  for (int i = 0; i < 31; ++i) mask += ",ffffffff";  // 1024 CPUs: 287 characters
  b.cpu(0, mask);
  b.gpu(b.hostBridge(0), "0000:17:00.0");
  std::string xml = write(b.build());
  EXPECT_FALSE(has(xml, "affinity=")) << xml;

  MachineBuilder h("hwloc-style mask");
  h.cpu(0, "0x000000ff,0xffff0000");
  h.gpu(h.hostBridge(0), "0000:17:00.0");
  xml = write(h.build());
  EXPECT_FALSE(has(xml, "affinity=")) << "not Linux cpumap format: " << xml;
}

TEST(WriteNcclXml, ArmSpellingAndNoX86Facts) {
  MachineBuilder b("grace");
  b.cpu(0);
  b.gpu(b.hostBridge(0), "0009:01:00.0");
  Machine m = b.build();
  m.cpus[0].arch = "aarch64";
  m.cpus[0].vendor = "";
  EXPECT_TRUE(has(write(m), "  <cpu numaid=\"0\" arch=\"arm64\">\n"));
}

TEST(WriteNcclXml, EscapesValues) {
  MachineBuilder b("odd vendor");
  b.cpu(0, "", "Genuine&\"<Intel>'", 6, 143);
  b.gpu(b.hostBridge(0), "0000:17:00.0");
  const std::string xml = write(b.build());
  EXPECT_TRUE(has(xml, "vendor=\"Genuine&amp;&quot;&lt;Intel&gt;&#39;\"")) << xml;
  Expected<Machine> back = readNcclXml(xml, "x");
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->cpus.at(0).vendor, "Genuine&\"<Intel>'");
}

TEST(WriteNcclXml, SortsChildrenAndCpusWhateverTheModelOrder) {
  Machine m = test::sharing();
  // Swap two GPU endpoints' bus ids in the model: written order must still be by bus id.
  std::swap(m.pci[m.gpus[0].pci].busId, m.pci[m.gpus[3].pci].busId);
  const std::string xml = write(m);
  size_t last = 0;
  for (const char* bus :
       {"0000:03:00.0", "0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"}) {
    const size_t at = xml.find(bus);
    ASSERT_NE(at, std::string::npos) << bus;
    EXPECT_GT(at, last) << bus;
    last = at;
  }
}

TEST(WriteNcclXml, EmptyMachineAndBadInput) {
  EXPECT_EQ(write(Machine{}), "<system version=\"1\">\n</system>\n");

  Machine loop = test::noNics();
  loop.pci[0].parent = 3;  // a child before its parent
  Expected<std::string> e = writeNcclXml(loop);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("parent-before-child"), std::string::npos);

  Machine dangling = test::noNics();
  dangling.gpus[0].pci = 99;
  EXPECT_FALSE(writeNcclXml(dangling).ok());
}

TEST(WriteNcclXml, NeverWritesDetectedOrRuntimeState) {
  for (const auto& [name, m] : test::handBuiltMachines()) {
    const std::string xml = write(m);
    for (const char* banned :
         {"<gpu", "<nic", "<net", "keep=", "rank=", " dev=", "gdr=", "host_hash=", "<?xml", "\t"}) {
      EXPECT_FALSE(has(xml, banned)) << name << ": " << banned;
    }
  }
}

}  // namespace
}  // namespace pilot::topology
