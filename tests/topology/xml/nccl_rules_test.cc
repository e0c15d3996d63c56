// The validator itself: it must accept what NCCL accepts and reject what NCCL rejects, or the
// writer tests built on it prove nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "nccl_rules.h"

namespace pilot::topology::test {
namespace {

const char* const kGood =
    "<system version=\"1\">\n"
    "  <cpu numaid=\"0\" affinity=\"0000ffff\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
    "familyid=\"6\" modelid=\"143\">\n"
    "    <pci busid=\"0000:01:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" "
    "link_width=\"16\">\n"
    "      <pci busid=\"0000:03:00.0\" class=\"0x030200\" vendor=\"0x10de\" "
    "link_speed=\"32.0 GT/s PCIe\" link_width=\"16\"/>\n"
    "      <pci busid=\"0000:04:00.0\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\" "
    "link_width=\"16\"/>\n"
    "    </pci>\n"
    "  </cpu>\n"
    "</system>\n";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += s + "\n";
  return out;
}

void expectRejected(const std::string& text, RulesMode mode, const std::string& mention) {
  const std::vector<std::string> v = checkNcclRules(text, mode);
  ASSERT_FALSE(v.empty()) << "accepted:\n" << text;
  EXPECT_NE(joined(v).find(mention), std::string::npos) << joined(v);
}

TEST(NcclRules, AcceptsAWellFormedFileOfOurs) {
  EXPECT_EQ(joined(checkNcclRules(kGood, RulesMode::OurFile)), "");
  EXPECT_EQ(joined(checkNcclRules(kGood, RulesMode::Nccl)), "");
}

TEST(NcclRules, GrammarErrorsFailInBothModes) {
  struct Case {
    std::string text, mention;
  };
  const Case cases[] = {
      {"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + std::string(kGood), "expected >, got '?'"},
      {replaced(kGood, "  <cpu", "\t<cpu"), "expecting '<', got '\\t'"},
      {replaced(kGood, "    </pci>", "    hello</pci>"), "expecting '<', got 'h'"},
      {replaced(kGood, "numaid=\"0\"", "numaid=0"), "quote"},
      {replaced(kGood, " arch=", "\n arch="), "expected >, got '\\n'"},
      {replaced(kGood, "</system>", "</sys>"), "mismatch"},
      {replaced(kGood, "</system>\n", ""), "unterminated system"},
      {replaced(kGood, "<cpu numaid", "<cpu\tnumaid"), "unexpected value"},
      {replaced(kGood, "affinity=\"0000ffff\"", "affinity=\"" + std::string(254, 'f') + "\""),
       "too long"},
      {"<system version=\"1\">\n<!-- never closed\n</system>\n", "unterminated comment"},
      {"<system version=\"1\">\n<!--a=b-->\n</system>\n", "unexpected value"},
  };
  for (const Case& c : cases) {
    expectRejected(c.text, RulesMode::Nccl, c.mention);
    expectRejected(c.text, RulesMode::OurFile, c.mention);
  }
}

TEST(NcclRules, AcceptsWhatNcclAcceptsThoughOurWriterWouldNot) {
  // Comments anywhere between elements, single quotes (2.27.3+), CRLF, bare pci nodes, unknown
  // elements (ignored by NCCL), a 253-character value.
  const std::string vendorish =
      "<!-- header -->\r\n<system version='1'>\r\n"
      "  <cpu numaid=\"0\"> <!-- trailing -->\r\n"
      "    <pci busid=\"0000:45:00.0\"><pci busid=\"0000:4f:00.0\" link_speed=\"32 GT/s PCIe/s\"/>"
      "</pci>\r\n"
      "    <gpu dev=\"0\"/>\r\n"
      "    <pci busid=\"0000:46:00.0\" x=\"" +
      std::string(253, 'v') +
      "\"/>\r\n"
      "  </cpu>\r\n</system>\r\n";
  EXPECT_EQ(joined(checkNcclRules(vendorish, RulesMode::Nccl)), "");
  const std::string ours = joined(checkNcclRules(vendorish, RulesMode::OurFile));
  EXPECT_NE(ours.find("not double-quoted"), std::string::npos) << ours;
  EXPECT_NE(ours.find("<gpu> is ignored"), std::string::npos) << ours;
  EXPECT_NE(ours.find("pci class missing"), std::string::npos) << ours;
  EXPECT_NE(ours.find("not exactly one tag"), std::string::npos) << ours;
}

TEST(NcclRules, RootMustBeSystemVersionOne) {
  expectRejected(replaced(kGood, "version=\"1\"", "version=\"2\""), RulesMode::Nccl, "version");
  expectRejected(replaced(kGood, " version=\"1\"", ""), RulesMode::Nccl, "without version");
  expectRejected("<!-- nothing -->\n", RulesMode::Nccl, "no <system>");
  expectRejected("<topology version=\"1\">\n</topology>\n", RulesMode::Nccl, "no <system>");
}

TEST(NcclRules, OurFilesCarryWhatNcclRequires) {
  const struct {
    std::string from, to, mention;
  } cases[] = {
      {" class=\"0x030200\"", "", "pci class missing"},
      {"class=\"0x030200\"", "class=\"0x0302\"", "pci class missing"},
      {" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">", " link_width=\"16\">",
       "link_speed not in NCCL's table"},
      {"link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">",
       "link_speed=\"64 GT/s\" link_width=\"16\">", "link_speed not in NCCL's table"},
      {" link_width=\"16\">", ">", "link_width missing"},
      {"busid=\"0000:03:00.0\"", "busid=\"0000:03:00.0 \"", "busid missing or not"},
      {"busid=\"0000:03:00.0\"", "busid=\"0000:3:00.0\"", "busid missing or not"},
      {"busid=\"0000:03:00.0\"", "busid=\"0000:3B:00.0\"", "busid missing or not"},
      {"busid=\"0000:03:00.0\"", "busid=\"00000000:03:00.0\"", "busid missing or not"},
      {"busid=\"0000:04:00.0\"", "busid=\"0000:03:00.0\"", "twice"},
      {"busid=\"0000:04:00.0\"", "busid=\"0000:02:00.0\"", "not sorted"},
      {"class=\"0x060400\"", "class=\"0x068000\"", "bridge needs class 0x060400"},
      {" arch=\"x86_64\"", "", "without arch"},
      {" vendor=\"GenuineIntel\"", "", "without vendor"},
      {" familyid=\"6\"", "", "without decimal familyid"},
      {" modelid=\"143\"", " modelid=\"0x8f\"", "without decimal modelid"},
      {"numaid=\"0\"", "numaid=\"zero\"", "numaid"},
      {"<cpu ", "<cpu keep=\"1\" ", "keep must not"},
      {"<cpu ", "<cpu host_hash=\"0x1\" ", "host_hash must not"},
      {"vendor=\"0x10de\"", "vendor=\"0x10de\" gdr=\"0\"", "gdr must not"},
      {"vendor=\"0x10de\"", "vendor=\"0x10de\"  dev=\"0\"", "dev must not"},
      {"link_width=\"16\"/>", "link_width=\"16\" rank=\"0\"/>", "rank must not"},
      {"    </pci>\n",
       "      <pci busid=\"0000:05:00.0\" class=\"0x020000\" link_speed=\"8 GT/s\" "
       "link_width=\"8\"><nic/></pci>\n    </pci>\n",
       "<nic> in our file"},
  };
  for (const auto& c : cases) {
    expectRejected(replaced(kGood, c.from, c.to), RulesMode::OurFile, c.mention);
  }
  // AMD needs no family/model; ARM no vendor.
  std::string amd =
      replaced(replaced(kGood, "GenuineIntel", "AuthenticAMD"), " familyid=\"6\"", "");
  EXPECT_EQ(joined(checkNcclRules(amd, RulesMode::OurFile)), "");
  std::string arm = replaced(kGood,
                             " arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" "
                             "modelid=\"143\"",
                             " arch=\"arm64\"");
  EXPECT_EQ(joined(checkNcclRules(arm, RulesMode::OurFile)), "");
}

TEST(NcclRules, AttributeAndNodeLimits) {
  std::string many = " a0=\"0\"";
  for (int i = 1; i < 12; ++i) many += " a" + std::to_string(i) + "=\"0\"";
  // 5 own attributes + 12 = 17: NCCL drops the last one silently; our files must not rely on it.
  expectRejected(replaced(kGood, "link_width=\"16\"/>", "link_width=\"16\"" + many + "/>"),
                 RulesMode::OurFile, "more than 16 attributes");

  std::string big = "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"arm64\">\n";
  for (int i = 0; i < 255; ++i) {
    char bus[32];
    std::snprintf(bus, sizeof bus, "0000:%02x:%02x.0", (1 + i / 32) & 0xff, i % 32);
    big += std::string("    <pci busid=\"") + bus +
           "\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"/>\n";
  }
  big += "  </cpu>\n</system>\n";
  expectRejected(big, RulesMode::Nccl, "more than 256 XML nodes");  // 1 + 1 + 255 = 257
  EXPECT_EQ(
      joined(checkNcclRules(replaced(big, "<pci busid=\"0000:01:00.0\"", "<ignored busid=\"x\""),
                            RulesMode::Nccl)),
      "")
      << "an ignored element does not count, as in NCCL";
}

TEST(NcclRules, SpeedTableIsNcclsPrefixMatch) {
  EXPECT_EQ(ncclSpeedGeneration("8 GT/s"), 3);
  EXPECT_EQ(ncclSpeedGeneration("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(ncclSpeedGeneration("32 GT/s PCIe/s"), 5);  // aws p5 file
  EXPECT_EQ(ncclSpeedGeneration("64.0 GT/s PCIe"), 6);
  EXPECT_EQ(ncclSpeedGeneration("64 GT/s"), 0);
  EXPECT_EQ(ncclSpeedGeneration(""), 0);
  EXPECT_EQ(ncclSpeedGeneration("Unknown"), 0);
}

}  // namespace
}  // namespace pilot::topology::test
