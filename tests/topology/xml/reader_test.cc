// readNcclXml: NCCL's grammar (accept and reject the same texts, with NCCL's words and a line
// number) and the mapping into the machine model.
#include <gtest/gtest.h>

#include <string>

#include "pilot/topology/nccl_xml.h"

namespace pilot::topology {
namespace {

Machine read(const std::string& text) {
  Expected<Machine> m = readNcclXml(text, "test.xml");
  EXPECT_TRUE(m.ok()) << m.error();
  return m.ok() ? *m : Machine{};
}

std::string readError(const std::string& text) {
  Expected<Machine> m = readNcclXml(text, "test.xml");
  EXPECT_FALSE(m.ok()) << "accepted:\n" << text;
  return m.ok() ? "" : m.error();
}

const PciNode& pciByBus(const Machine& m, const std::string& bus) {
  for (const PciNode& p : m.pci) {
    if (p.busId && p.busId->str() == bus) return p;
  }
  static PciNode none;
  ADD_FAILURE() << "no pci " << bus;
  return none;
}

TEST(ReadNcclXml, MapsCpuPciGpuNicNet) {
  const Machine m = read(
      "<system version=\"1\">\n"
      "  <cpu host_hash=\"0x1\" numaid=\"1\" affinity=\"ffff,0000\" arch=\"x86_64\" "
      "vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"106\">\n"
      "    <pci busid=\"0000:a1:00.0\" class=\"0x060400\" vendor=\"0x104c\" device=\"0x8232\" "
      "link_speed=\"2.5 GT/s PCIe\" link_width=\"1\">\n"
      "      <pci busid=\"0000:a3:00.0\" class=\"0x020000\" vendor=\"0x15b3\" device=\"0x101e\" "
      "subsystem_vendor=\"0x15b3\" subsystem_device=\"0x0127\" link_speed=\"32.0 GT/s PCIe\" "
      "link_width=\"0\">\n"
      "        <nic>\n"
      "          <net name=\"mlx5_7\" dev=\"7\" speed=\"200000\" port=\"1\" guid=\"0x34f4\"/>\n"
      "        </nic>\n"
      "      </pci>\n"
      "      <pci busid=\"0000:a4:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" "
      "link_width=\"16\">\n"
      "        <gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">\n"
      "          <nvlink target=\"0000:f5:00.0\" count=\"5\" tclass=\"0x068000\"/>\n"
      "          <nvlink target=\"fffffff:ffff:ff\" count=\"4\" tclass=\"0x068000\"/>\n"
      "        </gpu>\n"
      "      </pci>\n"
      "    </pci>\n"
      "    <nic>\n"
      "      <net name=\"veth0\" speed=\"10000\"/>\n"
      "    </nic>\n"
      "  </cpu>\n"
      "</system>\n");
  ASSERT_EQ(m.cpus.size(), 1u);
  EXPECT_EQ(m.cpus[0].numaId, 1);
  EXPECT_EQ(m.cpus[0].affinity, "ffff,0000");
  EXPECT_EQ(m.cpus[0].arch, "x86_64");
  EXPECT_EQ(m.cpus[0].vendor, "GenuineIntel");
  EXPECT_EQ(m.cpus[0].familyId, 6);
  EXPECT_EQ(m.cpus[0].modelId, 106);
  EXPECT_EQ(m.source, "NCCL XML test.xml");

  ASSERT_EQ(m.pci.size(), 3u);
  const PciNode& sw = pciByBus(m, "0000:a1:00.0");
  EXPECT_EQ(sw.kind, PciKind::Switch);
  EXPECT_EQ(sw.parent, -1);
  EXPECT_EQ(sw.numaNode, 1);
  EXPECT_EQ(sw.vendor, 0x104c);
  EXPECT_EQ(sw.linkSpeed, "2.5 GT/s PCIe");
  EXPECT_EQ(sw.linkWidth, 1);
  EXPECT_FALSE(sw.synthetic);
  const PciNode& nicPci = pciByBus(m, "0000:a3:00.0");
  EXPECT_EQ(nicPci.kind, PciKind::Endpoint);
  EXPECT_EQ(nicPci.classCode, 0x020000u);
  EXPECT_EQ(nicPci.subsystemDevice, 0x0127);
  EXPECT_EQ(nicPci.linkWidth, 0);
  EXPECT_EQ(m.pci[nicPci.parent].busId->str(), "0000:a1:00.0");

  ASSERT_EQ(m.gpus.size(), 1u);
  EXPECT_EQ(m.pci[m.gpus[0].pci].busId->str(), "0000:a4:00.0");
  EXPECT_EQ(m.gpus[0].sm, 90);
  ASSERT_EQ(m.gpus[0].nvlinks.size(), 1u) << "the invisible-NVSwitch target is skipped";
  EXPECT_EQ(m.gpus[0].nvlinks[0].first.str(), "0000:f5:00.0");
  EXPECT_EQ(m.gpus[0].nvlinks[0].second, 5);
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("fffffff:ffff:ff"), std::string::npos);

  ASSERT_EQ(m.nics.size(), 2u);  // PCI NICs first, then virtual ones
  EXPECT_EQ(m.nics[0].name, "mlx5_7");
  EXPECT_EQ(m.pci[m.nics[0].pci].busId->str(), "0000:a3:00.0");
  EXPECT_EQ(m.nics[0].speedMbps, 200000);
  EXPECT_EQ(m.nics[0].port, 1);
  EXPECT_EQ(m.nics[0].guid, "0x34f4");
  EXPECT_EQ(m.nics[0].linkLayer, LinkLayer::Ethernet);
  EXPECT_EQ(m.nics[1].name, "veth0");
  EXPECT_EQ(m.nics[1].pci, -1);
}

TEST(ReadNcclXml, ToleratesWhatNcclTolerates) {
  const Machine m = read(
      "<!-- leading comment -->\n"
      "<system version='1' name=\"x\">\r\n"
      "<!-- between --><cpu numaid=\"0\"><!--inline-->\n"
      "  <pci busid=\"ffff:ff:01.0\" class=\"0x060400\" link_speed=\"16 GT/s\" "
      "link_width=\"16\"> <!-- Switch 0 begins -->\n"
      "      <pci busid=\"0003:00:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\"/>\n"
      "      <pci busid=\"0103:00:00.0\" class=\"0x020700\" link_speed=\"16 GT/s\"/>\n"
      "      <gadget a=\"b\"><pci busid=\"0000:99:00.0\" class=\"0x030200\"/></gadget>\n"
      "  </pci>\n"
      "  <gpu dev=\"9\"/>\n"
      "</cpu></system>\n"
      "<!-- trailing -->\n");
  ASSERT_EQ(m.pci.size(), 3u) << "unknown elements and a <gpu> under <cpu> are skipped";
  const PciNode& sw = pciByBus(m, "ffff:ff:01.0");
  EXPECT_EQ(sw.kind, PciKind::Switch);
  EXPECT_TRUE(sw.synthetic);
  EXPECT_EQ(sw.linkSpeed, "16.0 GT/s PCIe");  // old spelling read, NCCL's current one kept
  ASSERT_EQ(m.gpus.size(), 1u) << "a GPU-class endpoint without <gpu> still is a GPU";
  EXPECT_EQ(m.gpus[0].sm, 0);
  ASSERT_EQ(m.nics.size(), 1u);
  EXPECT_EQ(m.nics[0].name, "");
  EXPECT_TRUE(m.nics[0].rdma) << "an InfiniBand controller";
  EXPECT_EQ(m.nics[0].linkLayer, LinkLayer::InfiniBand);
}

TEST(ReadNcclXml, ClasslessBridgeIsASwitchByShape) {
  const Machine m = read(
      "<system version=\"1\">\n  <cpu numaid=\"0\">\n"
      "    <pci busid=\"0000:45:00.0\">\n"
      "      <pci busid=\"0000:4f:00.0\" link_speed=\"32 GT/s PCIe/s\" link_width=\"16\"/>\n"
      "    </pci>\n    <pci busid=\"0000:16:00.0\"/>\n  </cpu>\n</system>\n");
  EXPECT_EQ(pciByBus(m, "0000:45:00.0").kind, PciKind::Switch);
  EXPECT_EQ(pciByBus(m, "0000:4f:00.0").kind, PciKind::Endpoint);
  EXPECT_EQ(pciByBus(m, "0000:4f:00.0").linkSpeed, "32.0 GT/s PCIe");
  EXPECT_EQ(pciByBus(m, "0000:16:00.0").kind, PciKind::Endpoint);
  EXPECT_TRUE(m.gpus.empty());
  EXPECT_TRUE(m.nics.empty()) << "no class, no <nic>: nothing says what it is";
}

TEST(ReadNcclXml, DualPortNicTwoNetsOnePci) {
  const Machine m = read(
      "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\">\n"
      "    <pci busid=\"0000:16:00.0\" class=\"0x020000\" link_speed=\"16.0 GT/s PCIe\" "
      "link_width=\"8\">\n      <nic>\n"
      "        <net name=\"mlx5_1\" dev=\"1\" speed=\"100000\" port=\"2\" guid=\"0x78ad\"/>\n"
      "        <net name=\"mlx5_0\" dev=\"0\" speed=\"100000\" port=\"1\" guid=\"0x78ad\"/>\n"
      "      </nic>\n    </pci>\n  </cpu>\n</system>\n");
  ASSERT_EQ(m.nics.size(), 2u);
  EXPECT_EQ(m.nics[0].name, "mlx5_0");  // same bus id: sorted by name
  EXPECT_EQ(m.nics[1].name, "mlx5_1");
  EXPECT_EQ(m.nics[0].pci, m.nics[1].pci);
  EXPECT_EQ(m.nics[1].port, 2);
}

TEST(ReadNcclXml, DecodesEntitiesOurWriterWrites) {
  const Machine m = read(
      "<system version=\"1\">\n  <cpu numaid=\"0\" vendor=\"A&amp;B &lt;&gt; &quot;&#39;\"/>\n"
      "</system>\n");
  ASSERT_EQ(m.cpus.size(), 1u);
  EXPECT_EQ(m.cpus[0].vendor, "A&B <> \"'");
}

TEST(ReadNcclXml, DecodesAposToo) {
  const Machine m =
      read("<system version=\"1\">\n  <cpu numaid=\"0\" vendor=\"O&apos;Brien\"/>\n</system>\n");
  ASSERT_EQ(m.cpus.size(), 1u);
  EXPECT_EQ(m.cpus[0].vendor, "O'Brien");
}

TEST(ReadNcclXml, RejectsWhatNcclRejectsWithLineNumbers) {
  const std::string ok = "<system version=\"1\">\n  <cpu numaid=\"0\">\n  </cpu>\n</system>\n";
  struct Case {
    std::string text, mention;
  };
  const Case cases[] = {
      {"<?xml version=\"1.0\"?>\n" + ok, "line 1: XML Parse : expected >, got '?'"},
      {"<system version=\"1\">\n\t<cpu numaid=\"0\"/>\n</system>\n",
       "line 2: XML Parse error : expecting '<', got '\\t'"},
      {"<system version=\"1\">\n  <cpu numaid=\"0\">text</cpu>\n</system>\n",
       "line 2: XML Parse error : expecting '<', got 't'"},
      {"<system version=\"1\">\n  <cpu numaid=0/>\n</system>\n",
       "line 2: XML Parse : Expected (double) quote."},
      {"<system version=\"1\">\n  <cpu numaid=\"0\"\n    arch=\"x86_64\"/>\n</system>\n",
       "line 2: XML Parse : expected >, got '\\n'"},
      {"<system version=\"1\">\n  <cpu numaid=\"0\">\n  </pci>\n</system>\n",
       "line 3: XML Mismatch : cpu / pci"},
      {"<system version=\"1\">\n  <cpu numaid=\"0\">\n", "XML Parse : unterminated cpu"},
      {"<system version=\"1\">\n  <cpu numaid=\"0\"", "XML Parse : Unexpected EOF"},
      {"<system version=\"1\">\n<!-- open\n\n", "line 2: XML Parse error : unterminated comment"},
      {"<system version=\"1\">\n  <cpu affinity=\"" + std::string(254, 'f') + "\"/>\n</system>\n",
       "too long (max 255)"},
      {"<system version=\"1\">\n  <cpu\tnumaid=\"0\"/>\n</system>\n", "Unexpected value with name"},
      {"<system version=\"2\">\n</system>\n", "XML Topology has wrong version 2, 1 needed"},
      {"<system>\n</system>\n", "Attribute version of node system not found"},
      {"<!-- empty -->\n", "no <system"},
      {"</system>\n", "unexpected closing tag"},
      {"<system version=\"1\">\n  <cpu numaid=\"0\">\n    <pci class=\"0x030200\"/>\n",
       "line 3: Attribute busid of node pci not found"},
      {"<system version=\"1\">\n  <cpu numaid=\"0\">\n    <pci busid=\"0000:3b:00\"/>\n",
       "line 3: pci busid \"0000:3b:00\" is not"},
      {"<system version=\"1\">\n  <cpu numaid=\"0\">\n    <pci busid=\"10000:3b:00.0\"/>\n",
       "is not a PCI address NCCL can use"},
  };
  for (const Case& c : cases) {
    const std::string e = readError(c.text);
    EXPECT_NE(e.find(c.mention), std::string::npos) << "want: " << c.mention << "\ngot:  " << e;
    EXPECT_EQ(e.rfind("test.xml", 0), 0u) << e;
  }
  // 253 characters is the longest value NCCL reads.
  EXPECT_TRUE(readNcclXml("<system version=\"1\">\n  <cpu affinity=\"" + std::string(253, 'f') +
                              "\"/>\n</system>\n",
                          "x")
                  .ok());
}

TEST(ReadNcclXml, Bounded) {
  std::string deep = "<system version=\"1\">\n<cpu numaid=\"0\">\n";
  for (int i = 0; i < 20; ++i) deep += "<pci busid=\"0000:" + std::to_string(10 + i) + ":00.0\">\n";
  const std::string e = readError(deep);
  EXPECT_NE(e.find("deeper than 16"), std::string::npos) << e;
  // An ignored subtree is bounded too.
  std::string skipped = "<system version=\"1\">\n";
  for (int i = 0; i < 40; ++i) skipped += "<x>";
  EXPECT_NE(readError(skipped).find("deeper than 16"), std::string::npos);

  // A million comments in a row: skipped in a loop, not by recursion.
  std::string comments;
  for (int i = 0; i < 1000000; ++i) comments += "<!---->";
  EXPECT_TRUE(readNcclXml(comments + "<system version=\"1\"/>\n", "x").ok());

  std::string huge(16u * 1024 * 1024 + 1, ' ');
  EXPECT_NE(readError(huge).find("more than 16 MiB"), std::string::npos);
}

TEST(ReadNcclXml, RepeatedBusIdMergesIntoOneNode) {
  const Machine m = read(
      "<system version=\"1\">\n  <cpu numaid=\"0\">\n"
      "    <pci busid=\"0000:01:00.0\" class=\"0x060400\">\n"
      "      <pci busid=\"0000:03:00.0\" class=\"0x030200\"/>\n    </pci>\n"
      "    <pci busid=\"0000:01:00.0\" class=\"0x060400\">\n"
      "      <pci busid=\"0000:04:00.0\" class=\"0x020700\"/>\n    </pci>\n"
      "  </cpu>\n</system>\n");
  EXPECT_EQ(m.pci.size(), 3u);
  EXPECT_EQ(m.pci[m.nics.at(0).pci].parent, m.pci[m.gpus.at(0).pci].parent);
  EXPECT_EQ(m.notes.size(), 1u);

  // The same GPU and net twice (a fused dump): one entry each.
  const Machine twice = read(
      "<system version=\"1\">\n  <cpu numaid=\"0\">\n"
      "    <pci busid=\"0000:03:00.0\" class=\"0x03\"><gpu sm=\"80\"/></pci>\n"
      "    <pci busid=\"0000:03:00.0\" class=\"0x03\"><gpu sm=\"80\"/></pci>\n"
      "    <pci busid=\"0000:04:00.0\" class=\"0x0207\"><nic><net name=\"mlx5_0\"/></nic></pci>\n"
      "    <pci busid=\"0000:04:00.0\" class=\"0x0207\"><nic><net name=\"mlx5_0\"/></nic></pci>\n"
      "  </cpu>\n</system>\n");
  EXPECT_EQ(twice.gpus.size(), 1u);
  ASSERT_EQ(twice.nics.size(), 1u);
  EXPECT_EQ(twice.pci[twice.gpus[0].pci].classCode, 0x030000u) << "class by prefix, as NCCL";
  EXPECT_EQ(twice.pci[twice.nics[0].pci].classCode, 0x020700u);
  EXPECT_TRUE(twice.nics[0].rdma);
}

}  // namespace
}  // namespace pilot::topology
