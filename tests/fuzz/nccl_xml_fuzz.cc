// libFuzzer target: arbitrary bytes as an NCCL topology file (NCCL_TOPO_FILE, `topo --compare`)
// for readNcclXml. For every input:
//  1. no crash, no undefined behaviour (ASan/UBSan), the same answer twice;
//  2. a refusal is one error naming the file and line ("fuzz.xml line N: ..."), and it agrees
//     with an independent reading of NCCL's grammar (tests/topology/xml/nccl_rules): the reader
//     accepts nothing NCCL's parser fails on, and each grammar error it gives NCCL gives too;
//  3. an accepted file gives a model that keeps model.h's promises within the reader's limits
//     (16 levels of elements, values of at most 253 characters; and, checked once at start,
//     a text above 16 MiB is refused unread);
//  4. that model written as NCCL XML passes NCCL's rules, reads back with its GPUs and NICs,
//     and writes the same text again (topology_oracle.h).
// Any violation aborts with the details on stderr.
#include <string>

#include "fuzz_support.h"
#include "nccl_rules.h"
#include "pilot/topology/nccl_xml.h"
#include "topology_oracle.h"

using namespace pilot::topology;

namespace {

/// Whether the error (after "fuzz.xml line N: ") is one of the lexer's grammar errors.
bool grammarError(const std::string& e) {
  const size_t why = e.find(": ") + 2;
  for (const char* words : {"XML Parse", "XML Mismatch", "Error : ", "unexpected closing"}) {
    if (e.compare(why, std::char_traits<char>::length(words), words) == 0) return true;
  }
  return false;
}

void checkRefusal(const std::string& e, const std::string& text) {
  const std::string prefix = "fuzz.xml line ";
  size_t digits = 0;
  while (prefix.size() + digits < e.size() && std::isdigit(e[prefix.size() + digits])) ++digits;
  if (e.compare(0, prefix.size(), prefix) != 0 || digits == 0 ||
      e.compare(prefix.size() + digits, 2, ": ") != 0 || e.size() == prefix.size() + digits + 2)
    fuzz::die("an error not of the form 'fuzz.xml line N: why': " + e);
  const long line = std::stol(e.substr(prefix.size(), digits));
  long lines = 1;
  for (char c : text) lines += c == '\n';
  if (line < 1 || line > lines) fuzz::die("an error on line " + std::to_string(line));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  pilot::Expected<Machine> big = readNcclXml(std::string((16u << 20) + 1, ' '), "big.xml");
  if (big.ok() || big.error() != "big.xml: 16777217 bytes, more than 16 MiB")
    fuzz::die("a text above 16 MiB was read");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  pilot::Expected<Machine> m = readNcclXml(text, "fuzz.xml");
  pilot::Expected<Machine> again = readNcclXml(text, "fuzz.xml");
  if (m.ok() != again.ok() || (!m.ok() && m.error() != again.error()))
    fuzz::die("reading is not deterministic");
  const std::vector<std::string> rules = test::checkNcclRules(text, test::RulesMode::Nccl);
  const bool ncclFails = !rules.empty() && rules[0].find("NCCL fails") != std::string::npos;
  if (!m.ok()) {
    checkRefusal(m.error(), text);
    if (grammarError(m.error()) && !ncclFails)
      fuzz::die("a grammar error NCCL's parser does not see: " + m.error());
    return 0;
  }
  for (const std::string& r : rules) {
    if (r.find("more than 256 XML nodes") == std::string::npos)
      fuzz::die("accepted a file NCCL refuses: " + r);
  }
  if (m->gpus.size() != again->gpus.size() || m->nics.size() != again->nics.size() ||
      m->pci.size() != again->pci.size())
    fuzz::die("reading is not deterministic");
  fuzz::checkMachine(*m, fuzz::kMaxPciHops, 253);
  fuzz::checkNcclXmlRoundTrip(*m);
  return 0;
}
