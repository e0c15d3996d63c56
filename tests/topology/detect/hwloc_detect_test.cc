// detectMachine through hwloc (dlopen'ed libhwloc.so.15): on our own hwloc export of the
// recorded bare-metal tree (every checkout), and on the published hwloc XML fixtures.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <tuple>

#include "pilot/topology/affinity.h"
#include "pilot/topology/sources.h"
#include "test_support.h"

namespace pilot::topology {
namespace {

using testing::busOf;
using testing::hasNote;
using testing::hwlocFixture;

std::shared_ptr<const HwlocLibrary> hwloc() {
  static std::string why;
  static std::shared_ptr<const HwlocLibrary> lib = loadHwlocDynamic(&why);
  EXPECT_TRUE(lib) << why;  // the build needs hwloc 2.x, so its library is there too
  return lib;
}

Machine fromXml(const std::string& fixture) {
  DetectOptions options;
  options.hwlocXml = hwlocFixture(fixture);
  Expected<Machine> m = detectMachine(options, hwloc());
  EXPECT_TRUE(m.ok()) << m.error();
  return m.ok() ? m.value() : Machine{};
}

std::vector<const Nic*> rdmaNics(const Machine& m) {
  std::vector<const Nic*> out;
  for (const Nic& n : m.nics) {
    if (n.rdma) out.push_back(&n);
  }
  return out;
}

TEST(HwlocLibrary, LoadsHwloc2) {
  std::string why;
  EXPECT_TRUE(loadHwlocDynamic(&why)) << why;
}

TEST(HwlocXml, OwnExportOfTheRecordedBareMetalTreeDescribesTheSameMachine) {
  // tests/topology/data/hwloc/baremetal-2gpu-2nic-switch.xml was written for this project to
  // model the machine the sysfs tree of the same name records: both detection paths must agree.
  DetectOptions viaHwloc;
  viaHwloc.hwlocXml = testing::ownHwlocXml("baremetal-2gpu-2nic-switch.xml");
  Expected<Machine> x = detectMachine(viaHwloc, hwloc());
  ASSERT_TRUE(x.ok()) << x.error();
  DetectOptions viaSysfs;
  viaSysfs.sysfsRoot = testing::dataRoot("baremetal-2gpu-2nic-switch");
  Expected<Machine> s = detectMachine(viaSysfs, nullptr);
  ASSERT_TRUE(s.ok()) << s.error();

  ASSERT_EQ(x->gpus.size(), 2u);
  ASSERT_EQ(rdmaNics(*x).size(), 2u);
  EXPECT_EQ(describePairs(*x, pairGpusWithNics(*x)), describePairs(*s, pairGpusWithNics(*s)));
  for (const Nic* nic : rdmaNics(*x)) {
    EXPECT_EQ(nic->state, "ACTIVE") << nic->name;
    EXPECT_EQ(nic->linkLayer, LinkLayer::InfiniBand) << nic->name;
    const Nic* same = testing::nicNamed(*s, nic->name);
    ASSERT_NE(same, nullptr) << nic->name;
    EXPECT_EQ(nic->netdev, same->netdev);
    EXPECT_EQ(busOf(*x, nic->pci), busOf(*s, same->pci));
  }
  for (size_t g = 0; g < x->gpus.size(); ++g) {
    EXPECT_EQ(busOf(*x, x->gpus[g].pci), busOf(*s, s->gpus[g].pci));
    EXPECT_EQ(x->pci[x->gpus[g].pci].numaNode, static_cast<int>(g));  // one GPU per socket
  }
}

TEST(HwlocXml, Jwb0004FourA100EachPixWithOneHdrNic) {
  PILOT_REQUIRE_FIXTURE(hwlocFixture("hwloc-jwb0004.xml"));
  Machine m = fromXml("hwloc-jwb0004.xml");
  EXPECT_EQ(m.source, "hwloc XML " + hwlocFixture("hwloc-jwb0004.xml"));
  ASSERT_EQ(m.gpus.size(), 4u);
  std::vector<const Nic*> nics = rdmaNics(m);
  ASSERT_EQ(nics.size(), 4u);
  for (const Nic* nic : nics) {
    EXPECT_EQ(nic->name.rfind("mlx5_", 0), 0u) << nic->name;
    EXPECT_EQ(nic->state, "ACTIVE");
    EXPECT_EQ(nic->linkLayer, LinkLayer::InfiniBand);  // from the LID: hwloc has no link layer
    EXPECT_EQ(nic->netdev.rfind("ib", 0), 0u) << nic->netdev;
    EXPECT_EQ(m.pci[nic->pci].vendor, 0x15b3);
  }
  EXPECT_EQ(nics[0]->name, "mlx5_0");
  EXPECT_EQ(busOf(m, nics[0]->pci), "0000:04:00.0");
  EXPECT_EQ(nics[0]->netdev, "ib0");
  EXPECT_EQ(nics[1]->name, "mlx5_1");
  EXPECT_EQ(nics[1]->guid, "0x0800380001c091e8");

  for (const Gpu& gpu : m.gpus) {
    const PciNode& node = m.pci[gpu.pci];
    EXPECT_EQ(node.vendor, 0x10de);
    EXPECT_EQ(node.device, 0x20b0);
    EXPECT_EQ(node.classCode, 0x030200u);
    EXPECT_EQ(node.linkSpeed, "16.0 GT/s PCIe");  // 31.5 GB/s estimated as Gen4 x16
    EXPECT_EQ(node.linkWidth, 16);
    int pix = 0;
    for (const Nic* nic : nics) {
      if (classifyPath(m, gpu.pci, nic->pci) == PathType::PIX) {
        ++pix;
        // the shared BCM PEX switch: its upstream port is the GPU's grandparent
        const PciNode& up =
            m.pci[node.parent].parent >= 0 ? m.pci[m.pci[node.parent].parent] : node;
        EXPECT_EQ(up.kind, PciKind::Switch);
        EXPECT_EQ(up.vendor, 0x1000);
        EXPECT_EQ(up.device, 0xc010);
      }
    }
    EXPECT_EQ(pix, 1) << busOf(m, gpu.pci);
  }
  ASSERT_FALSE(m.cpus.empty());
  EXPECT_EQ(m.cpus.size(), 8u);  // NPS4 on two sockets
  for (const CpuNode& cpu : m.cpus) {
    EXPECT_EQ(cpu.vendor, "AuthenticAMD");
    EXPECT_EQ(cpu.familyId, 23);
    EXPECT_EQ(cpu.modelId, 49);
    EXPECT_EQ(cpu.arch, "x86_64");
  }
  EXPECT_EQ(m.cpus[0].affinity, "00000000,003f0000,0000003f");
  EXPECT_TRUE(hasNote(m, {"estimated"})) << testing::allNotes(m);
  EXPECT_TRUE(testing::parentsPrecedeChildren(m));
}

TEST(HwlocXml, Jwb0004TreeShapeAndNuma) {
  PILOT_REQUIRE_FIXTURE(hwlocFixture("hwloc-jwb0004.xml"));
  Machine m = fromXml("hwloc-jwb0004.xml");
  int gpu = testing::pciIndex(m, "0000:44:00.0");
  ASSERT_GE(gpu, 0);
  const PciNode& down = m.pci[m.pci[gpu].parent];
  const PciNode& up = m.pci[down.parent];
  const PciNode& root = m.pci[up.parent];
  const PciNode& host = m.pci[root.parent];
  EXPECT_EQ(down.busId->str(), "0000:42:01.0");
  EXPECT_EQ(up.busId->str(), "0000:41:00.0");
  EXPECT_EQ(root.kind, PciKind::RootPort);
  EXPECT_EQ(root.busId->str(), "0000:40:01.1");
  EXPECT_EQ(host.kind, PciKind::HostBridge);
  EXPECT_EQ(host.parent, -1);
  EXPECT_EQ(m.pci[gpu].numaNode, 1);  // the Group holding NUMA node 1
  EXPECT_EQ(host.numaNode, 1);
  EXPECT_NE(m.cpuByNuma(1), nullptr);
  // GPUs on other sockets' host bridges
  EXPECT_EQ(classifyPath(m, gpu, testing::pciIndex(m, "0000:03:00.0")), PathType::SYS);
}

TEST(HwlocXml, Mel2001Hwloc1FormatFourGpusTwoNics) {
  PILOT_REQUIRE_FIXTURE(hwlocFixture("hwloc-mel2001.xml"));
  Machine m = fromXml("hwloc-mel2001.xml");
  ASSERT_EQ(m.gpus.size(), 4u);
  std::vector<const Nic*> nics = rdmaNics(m);
  ASSERT_EQ(nics.size(), 2u);
  EXPECT_EQ(nics[0]->name, "mlx5_0");
  EXPECT_EQ(nics[0]->netdev, "ib0");
  int pixGpus = 0;
  for (const Gpu& gpu : m.gpus) {
    for (const Nic* nic : nics) pixGpus += classifyPath(m, gpu.pci, nic->pci) == PathType::PIX;
  }
  EXPECT_EQ(pixGpus, 2);  // two switches have a GPU but no NIC
  EXPECT_EQ(m.cpus.front().vendor, "AuthenticAMD");
}

TEST(HwlocXml, Dgx2hSixteenV100NoNics) {
  PILOT_REQUIRE_FIXTURE(hwlocFixture("hwloc-nvidia-dgx2h.xml"));
  Machine m = fromXml("hwloc-nvidia-dgx2h.xml");
  ASSERT_EQ(m.gpus.size(), 16u);
  EXPECT_TRUE(rdmaNics(m).empty());
  for (const Gpu& gpu : m.gpus) EXPECT_EQ(m.pci[gpu.pci].device, 0x1db8);
  EXPECT_TRUE(hasNote(m, {"format 3.0"})) << testing::allNotes(m);
  // Two-level PLX switches: GPU pairs share a lower switch, quads only the upper one.
  int a = testing::pciIndex(m, "0000:34:00.0"), b = testing::pciIndex(m, "0000:36:00.0");
  int c = testing::pciIndex(m, "0000:39:00.0");
  ASSERT_GE(a, 0);
  EXPECT_EQ(classifyPath(m, a, b), PathType::PIX);
  EXPECT_EQ(classifyPath(m, a, c), PathType::PXB);
  EXPECT_EQ(m.cpus.size(), 2u);
  EXPECT_EQ(m.cpus[0].vendor, "GenuineIntel");
  EXPECT_EQ(m.cpus[0].modelId, 85);
}

TEST(HwlocXml, SupermicroMlx5WithIb0AndGuid) {
  PILOT_REQUIRE_FIXTURE(hwlocFixture("hwloc-supermicro-x9drg-wholeio.xml"));
  Machine m = fromXml("hwloc-supermicro-x9drg-wholeio.xml");
  std::vector<const Nic*> nics = rdmaNics(m);
  ASSERT_EQ(nics.size(), 1u);
  EXPECT_EQ(nics[0]->name, "mlx5_0");
  EXPECT_EQ(nics[0]->netdev, "ib0");
  EXPECT_FALSE(nics[0]->guid.empty());
  EXPECT_EQ(nics[0]->guid.rfind("0x", 0), 0u);
  EXPECT_EQ(nics[0]->guid.size(), 18u);
  EXPECT_EQ(busOf(m, nics[0]->pci), "0000:04:00.0");
  // plain Ethernet (Intel I350) next to it
  EXPECT_NE(testing::nicNamed(m, "eth0"), nullptr);
  EXPECT_FALSE(testing::nicNamed(m, "eth0")->rdma);
  EXPECT_EQ(m.gpus.size(), 3u);  // three Teslas; the Radeon and Matrox are not NVIDIA
  // The upstream file has no CPUVendor/CPUFamilyNumber/CPUModelNumber infos.
  ASSERT_EQ(m.cpus.size(), 2u);
  EXPECT_EQ(m.cpus[0].vendor, "");
  EXPECT_EQ(m.cpus[0].familyId, -1);
  EXPECT_EQ(m.cpus[0].arch, "x86_64");
  EXPECT_EQ(m.cpus[1].affinity, "ff00ff00");
  EXPECT_TRUE(hasNote(m, {"CPU vendor unknown"})) << testing::allNotes(m);
}

TEST(HwlocXml, MissingFileIsAnErrorNamingIt) {
  DetectOptions options;
  options.hwlocXml = "/nonexistent/topo.xml";
  Expected<Machine> m = detectMachine(options, hwloc());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("/nonexistent/topo.xml"), std::string::npos) << m.error();
}

TEST(HwlocXml, NonHwlocFileIsAnError) {
  DetectOptions options;
  options.hwlocXml = std::string(PILOT_TOPOLOGY_DATA) + "/README.md";
  Expected<Machine> m = detectMachine(options, hwloc());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("README.md"), std::string::npos) << m.error();
}

TEST(HwlocXml, InvalidXmlIsAnError) {
  std::string file = ::testing::TempDir() + "/pilot-bad-topology.xml";
  std::ofstream(file) << "<topology version=\"2.0\"><object type=\"Machine\" <<<";
  DetectOptions options;
  options.hwlocXml = file;
  Expected<Machine> m = detectMachine(options, hwloc());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find(file), std::string::npos) << m.error();
  std::remove(file.c_str());
}

TEST(HwlocXml, FutureFormatIsAnError) {
  std::string file = ::testing::TempDir() + "/pilot-v4-topology.xml";
  std::ofstream(file) << "<?xml version=\"1.0\"?>\n<topology version=\"4.0\">\n</topology>\n";
  DetectOptions options;
  options.hwlocXml = file;
  Expected<Machine> m = detectMachine(options, hwloc());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("4.0"), std::string::npos) << m.error();
  std::remove(file.c_str());
}

Expected<Machine> fromXmlText(const std::string& name, const std::string& text) {
  const std::string file = ::testing::TempDir() + "/" + name;
  std::ofstream(file) << text;
  DetectOptions options;
  options.hwlocXml = file;
  Expected<Machine> m = detectMachine(options, hwloc());
  std::remove(file.c_str());
  return m;
}

const char* const kSets =
    R"( cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1")";

// hwloc 2.9 itself crashes loading these (found by tests/fuzz/hwloc_xml_fuzz): a 1.x NUMANode
// without complete_cpuset, a 2.0 one without complete_nodeset. They never reach hwloc.
TEST(HwlocXml, ObjectsWithoutTheirSetsAreRefusedBeforeHwloc) {
  const std::string machine = std::string("<object type=\"Machine\" os_index=\"0\"") + kSets + ">";
  for (const auto& [version, numa, missing] :
       {std::tuple<const char*, const char*, const char*>{
            "", R"(cpuset="0x1" nodeset="0x1" complete_nodeset="0x1")", "complete_cpuset"},
        {" version=\"2.0\"", R"(cpuset="0x1" complete_cpuset="0x1" nodeset="0x1")",
         "complete_nodeset"}}) {
    Expected<Machine> m =
        fromXmlText("pilot-numa-sets.xml", std::string("<topology") + version + ">\n" + machine +
                                               "\n<object type=\"NUMANode\" os_index=\"0\" " +
                                               numa + "/>\n</object>\n</topology>\n");
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.error().find("line 3: <object type=\"NUMANode\"> without " + std::string(missing)),
              std::string::npos)
        << m.error();
    EXPECT_NE(m.error().find("pilot-numa-sets.xml"), std::string::npos) << m.error();
  }
  EXPECT_FALSE(
      fromXmlText("pilot-odd-tag.xml", "<topology><object type='Machine'/></topology>").ok());
}

// hwloc 2.9 aborts on an assertion parsing a bitmap that starts with a comma (found by
// tests/fuzz/hwloc_xml_fuzz); lstopo's groups, empty ones and "0xf...f" pass.
TEST(HwlocXml, BitmapsNotInLstoposShapeAreRefusedBeforeHwloc) {
  for (const char* bitmap : {",0x1", ",x00000000", "0x1,x2", "0x123456789", "1"}) {
    Expected<Machine> m =
        fromXmlText("pilot-bitmap.xml",
                    std::string("<topology version=\"2.0\">\n<object type=\"Machine\" "
                                "os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"") +
                        bitmap + "\" nodeset=\"0x1\" complete_nodeset=\"0x1\"/>\n</topology>\n");
    ASSERT_FALSE(m.ok()) << bitmap;
    EXPECT_NE(m.error().find("line 2: a complete_cpuset that is not a bitmap"), std::string::npos)
        << m.error();
  }
  Expected<Machine> lstopo = fromXmlText(
      "pilot-bitmap.xml",
      "<topology version=\"2.0\">\n<object type=\"Machine\" os_index=\"0\" cpuset=\"0xf...f,0x1\" "
      "complete_cpuset=\"0x00000001,,0x0\" nodeset=\"0x1,\" complete_nodeset=\"0xf...f\"/>\n"
      "</topology>\n");
  if (!lstopo.ok()) {
    EXPECT_EQ(lstopo.error().find("not a bitmap"), std::string::npos) << lstopo.error();
  }
}

// hwloc 2.9 reads past a NUL byte of its buffer and crashes on this one (found by
// tests/fuzz/hwloc_xml_fuzz); XML has no NUL character, so it never reaches hwloc.
TEST(HwlocXml, NulBytesAreRefusedBeforeHwloc) {
  std::string text = "<topology version=\"2.0\"Machine\" cpuset=\"0x@1\">\n</topology>\n";
  text[text.find('@')] = '\0';
  Expected<Machine> m = fromXmlText("pilot-nul.xml", text);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("pilot-nul.xml line 1: a NUL byte"), std::string::npos) << m.error();
}

// hwloc 2.9's own XML reader crashes (strspn on a null pointer) on a tag cut off by the next
// one, and copies 512 MiB bitmaps for seconds for a PU without os_index (both found by
// tests/fuzz/hwloc_xml_fuzz), so the whole file must be in lstopo's shape first.
TEST(HwlocXml, MarkupNotInLstoposShapeIsRefusedBeforeHwloc) {
  const std::string prolog =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n";
  const std::string machine = std::string("<object type=\"Machine\" os_index=\"0\"") + kSets;
  for (const auto& [body, why] : std::vector<std::pair<std::string, std::string>>{
           {"<topology version=\"2.0\"<topology>", "line 3: a tag not in lstopo's shape"},
           {"<topology version=\"2.0\">\n" + machine + ">\n</topology>",
            "line 5: </topology> closing <object>"},
           {"<topology version=\"2.0\">\n" + machine + ">", "line 4: <object> never closed"},
           {"<topology/>\n<topology/>", "line 4: a second root element <topology>"},
           {"<machine/>\n<topology/>", "line 3: a root element <machine>, not <topology>"},
           {"<topology>\n" + machine + " name=\"a<b\"/>\n</topology>",
            "line 4: a tag not in lstopo's shape"},
           {"<topology>\n" + machine + " name=\"a&b\"/>\n</topology>",
            "line 4: a tag not in lstopo's shape"},
           {"<topology>\n" + machine + ">\n<object type=\"PU\"" + kSets +
                "/>\n</object>\n</topology>",
            "line 5: <object type=\"PU\"> without an os_index below 65536"},
           {"<topology>&nbsp;</topology>", "line 3: an '&' that begins no XML entity"},
           {"<topology/>\nx", "line 3: text outside the <topology> element"},
           {"<topology><!-- x </topology>", "line 3: a comment that never ends"},
           {"<topology>< object/></topology>", "line 3: a '<' that begins no tag lstopo writes"},
       }) {
    Expected<Machine> m = fromXmlText("pilot-shape.xml", prolog + body + "\n");
    ASSERT_FALSE(m.ok()) << body;
    EXPECT_NE(m.error().find("pilot-shape.xml " + why), std::string::npos) << m.error();
  }
  // What lstopo writes passes: comments, entities, text of its own elements, an empty root.
  for (const std::string& body :
       {std::string("<!-- by lstopo --><topology version=\"2.0\">\n") + machine +
            " name=\"a&amp;b&#10;&quot;\">\n<info name=\"x\" value=\"&lt;&gt;\"/>\n"
            "</object>\n<distances2 type=\"NUMANode\" nbobjs=\"1\">\n<indexes "
            "length=\"2\">0 </indexes>\n</distances2>\n</topology>",
        std::string("<topology version=\"2.0\">\n</topology>")}) {
    Expected<Machine> m = fromXmlText("pilot-shape.xml", prolog + body + "\n");
    if (!m.ok()) {
      EXPECT_EQ(m.error().find("lstopo"), std::string::npos) << m.error();
    }
  }
}

// hwloc keeps an osdev_type it does not know (16 is a 3.x bitmask in a 2.0 file): no NIC, and
// no enum loaded out of its range (UBSan, under tests/fuzz/hwloc_xml_fuzz).
TEST(HwlocXml, OsdevTypeOutsideTheEnumIsNoNic) {
  Expected<Machine> m = fromXmlText(
      "pilot-osdev-16.xml",
      std::string("<topology version=\"2.0\">\n<object type=\"Machine\" os_index=\"0\"") + kSets +
          ">\n<object type=\"NUMANode\" os_index=\"0\"" + kSets +
          "/>\n<object type=\"Bridge\" bridge_type=\"0-1\" depth=\"0\" "
          "bridge_pci=\"0000:[00-01]\">\n"
          "<object type=\"PCIDev\" pci_busid=\"0000:01:00.0\" pci_type=\"0200 [15b3:101e] "
          "[15b3:0000] "
          "00\">\n<object type=\"OSDev\" name=\"mlx5_0\" osdev_type=\"16\"/>\n</object>\n"
          "</object>\n</object>\n</topology>\n");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_TRUE(m->nics.empty());
}

TEST(DetectMachine, XmlWithoutHwlocIsAnError) {
  DetectOptions options;
  options.hwlocXml = testing::ownHwlocXml("baremetal-2gpu-2nic-switch.xml");
  Expected<Machine> m = detectMachine(options, nullptr);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("baremetal-2gpu-2nic-switch.xml"), std::string::npos) << m.error();
}

TEST(DetectMachine, FallsBackToSysfsWithoutHwloc) {
  DetectOptions options;
  options.sysfsRoot = testing::dataRoot("baremetal-2gpu-2nic-switch");
  Expected<Machine> m = detectMachine(options, nullptr);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->gpus.size(), 2u);
  EXPECT_TRUE(hasNote(*m, {"sysfs alone", "not available"})) << testing::allNotes(*m);
}

TEST(DetectMachine, RecordedTreeIsReadBySysfsEvenWithHwloc) {
  DetectOptions options;
  options.sysfsRoot = testing::dataRoot("kvm-flat-2gpu-2nic");
  Expected<Machine> m = detectMachine(options, hwloc());
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->source, "sysfs " + options.sysfsRoot);
  EXPECT_EQ(m->gpus.size(), 2u);
}

TEST(DetectMachine, LiveHwlocOnThisMachine) {
  Expected<Machine> m = detectMachine(DetectOptions{}, hwloc());
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->source, "hwloc live");
  EXPECT_FALSE(m->cpus.empty());
  EXPECT_TRUE(testing::parentsPrecedeChildren(*m));
  for (const CpuNode& cpu : m->cpus) EXPECT_FALSE(cpu.affinity.empty());
}

}  // namespace
}  // namespace pilot::topology
