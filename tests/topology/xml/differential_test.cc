// The reader and the validator implement NCCL's grammar independently. On thousands of mutated
// files (real NCCL files where ../shared is present, our own goldens everywhere) they must agree on
// which texts NCCL's parser rejects, and neither may crash.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "golden.h"
#include "nccl_rules.h"
#include "pilot/topology/nccl_xml.h"
#include "published_fixture.h"

namespace pilot::topology {
namespace {

bool validatorSaysNcclFails(const std::string& text) {
  for (const std::string& v : test::checkNcclRules(text, test::RulesMode::Nccl)) {
    if (v.find(": NCCL fails: ") != std::string::npos) return true;
  }
  return false;
}

/// Errors from NCCL's grammar, as opposed to the reader's checks of the content.
bool readerSaysGrammar(const std::string& error) {
  for (const char* mark :
       {"XML Parse", "XML Mismatch", "Error : name", "Error : value", "unexpected closing tag"}) {
    if (error.find(mark) != std::string::npos) return true;
  }
  return false;
}

std::string mutate(std::string s, std::mt19937& rng) {
  static const char kChars[] = {'\t', '<', '>', '"', '\'', ' ', '\n',
                                '\r', '/', '=', '!', '-',  'a'};
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t at = rng() % s.size();
    const char c = kChars[rng() % sizeof kChars];
    switch (rng() % 3) {
      case 0:
        s[at] = c;
        break;
      case 1:
        s.insert(s.begin() + static_cast<long>(at), c);
        break;
      default:
        s.erase(at, 1 + rng() % 4);
    }
  }
  return s;
}

/// Mutates each seed file 1,500 times; the reader and the validator must agree on every mutant.
void expectAgreementOnMutants(const std::vector<std::string>& seeds, uint32_t seed) {
  std::mt19937 rng(seed);
  int rejected = 0, accepted = 0;
  for (const std::string& path : seeds) {
    const std::optional<std::string> original = test::readFile(path);
    ASSERT_TRUE(original.has_value()) << path;
    const std::string& name = path;
    for (int round = 0; round < 1500; ++round) {
      const std::string text = mutate(*original, rng);
      Expected<Machine> m = readNcclXml(text, "mutant");
      const bool validatorFails = validatorSaysNcclFails(text);
      // The reader may stop earlier at a content error (a bad busid) than at a later grammar
      // error; otherwise the two must agree: accepted <=> NCCL's grammar holds.
      if (m.ok()) {
        ASSERT_FALSE(validatorFails) << name << " round " << round << "\n" << text;
        ++accepted;
      } else if (readerSaysGrammar(m.error())) {
        ASSERT_TRUE(validatorFails) << name << " round " << round << ": " << m.error() << "\n"
                                    << text;
        ++rejected;
      }
      if (m.ok()) {
        // Whatever was read can be written, and what is written passes NCCL's parser.
        Expected<std::string> xml = writeNcclXml(*m);
        if (xml.ok()) {
          EXPECT_FALSE(validatorSaysNcclFails(*xml)) << *xml;
        }
      }
    }
  }
  // Both outcomes are exercised, or the comparison says little.
  EXPECT_GT(rejected, 250 * static_cast<int>(seeds.size()));
  EXPECT_GT(accepted, 125 * static_cast<int>(seeds.size()));
}

TEST(Differential, ReaderAndValidatorAgreeOnNcclGrammar) {
  // Real NCCL files (published fixtures): other writers' habits, comments, skeletons.
  const std::string dir = testsupport::sharedFixture("topo/nccl-xml/");
  PILOT_REQUIRE_FIXTURE(dir);
  std::vector<std::string> seeds;
  for (const char* name :
       {"aws-p4d-24xl-topo.xml", "azure-ndv5-topo.xml", "ibmcloud-gx3d-h100-vsi-dump.xml",
        "nccl-issue2397-icx-a100pcie-cx6dx-roce-host1.xml"}) {
    seeds.push_back(dir + name);
  }
  expectAgreementOnMutants(seeds, 20260611);
}

TEST(Differential, ReaderAndValidatorAgreeOnOurOwnFiles) {
  // Our writer's goldens: present in every checkout.
  std::vector<std::string> seeds;
  for (const char* name :
       {"bare-metal-switches.xml", "dual-port-nic.xml", "flat-kvm.xml", "rails.xml"}) {
    seeds.push_back(std::string(PILOT_GOLDEN_DIR) + "/" + name);
  }
  expectAgreementOnMutants(seeds, 20261201);
}

}  // namespace
}  // namespace pilot::topology
