// libFuzzer target: arbitrary bytes as a node's doctor fingerprint (DIR/<node>.json, written by
// other nodes and read by `doctor --compare`) through readFingerprints. For every input:
//  1. no crash, no exception, no undefined behaviour (ASan/UBSan);
//  2. the same bytes in two files give one fingerprint and "a second fingerprint of node", or
//     two unreadable files each naming its path and why; a refusal agrees with an independent
//     reading of the format ("format", "version" 1, a non-empty "node", string "facts");
//  3. a fingerprint read holds exactly the file's node and facts (within the 16 KiB field
//     bound) and one finding per "checks" entry with a known status; checked once at start: a
//     file above 4 MiB is unreadable, a field above 16 KiB is cut to 16 KiB;
//  4. written again by writeFingerprint and read back, it is the same fingerprint;
//  5. compared with two copies of itself, one of which differs in one fact, that copy is the
//     one odd node, in that fact, with the value the other two hold as the majority.
// Any violation aborts with the details on stderr.
#include <string>

#include <nlohmann/json.hpp>

#include "doctor/fingerprint_file.h"
#include "fuzz_support.h"

using namespace pilot;
using doctor::Fingerprint;

namespace {

std::vector<Fingerprint> readDir(const std::string& dir,
                                 std::vector<cli::UnreadableFingerprint>* bad) {
  auto read = cli::readFingerprints(dir, bad);
  if (!read.ok()) fuzz::die("a folder that lists refused: " + read.error());
  return *read;
}

/// Whether the text is a fingerprint by the format's rules, read apart from the reader.
bool isFingerprint(const std::string& text, size_t* findings) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() ||
      j.value("format", nlohmann::json()) != "nccl-pilot-doctor-fingerprint")
    return false;
  const nlohmann::json version = j.value("version", nlohmann::json());
  const nlohmann::json node = j.value("node", nlohmann::json());
  const nlohmann::json facts = j.value("facts", nlohmann::json());
  if (!version.is_number_integer() || version != 1 || !node.is_string() ||
      node.get<std::string>().empty() || !facts.is_object())
    return false;
  for (const auto& fact : facts) {
    if (!fact.is_string()) return false;
  }
  *findings = 0;
  const nlohmann::json checks = j.value("checks", nlohmann::json());
  for (const auto& c : checks.is_array() ? checks : nlohmann::json::array()) {
    if (!c.is_object() || !c.contains("status") || !c["status"].is_string()) continue;
    const std::string s = c["status"].get<std::string>();
    *findings += s == "PASS" || s == "WARN" || s == "FAIL" || s == "SKIP";
  }
  return true;
}

bool same(const Fingerprint& a, const Fingerprint& b) {
  if (a.node != b.node || a.facts != b.facts || a.findings.size() != b.findings.size())
    return false;
  for (size_t i = 0; i < a.findings.size(); ++i) {
    const doctor::Finding &x = a.findings[i], &y = b.findings[i];
    if (x.check != y.check || x.verdict != y.verdict || x.subject != y.subject ||
        x.evidence != y.evidence || x.fix != y.fix)
      return false;
  }
  return true;
}

void checkRoundTrip(const Fingerprint& f) {
  doctor::DoctorReport report;
  report.machine = "fuzz";
  report.facts = f.facts;
  report.findings = f.findings;
  const std::string dir = fuzz::emptyScratch("written");
  if (Status s = cli::writeFingerprint(dir, f.node, report); !s.ok())
    fuzz::die("cannot write a fingerprint read from a file: " + s.error());
  std::vector<cli::UnreadableFingerprint> bad;
  const std::vector<Fingerprint> back = readDir(dir, &bad);
  if (back.size() != 1 || !bad.empty() || !same(back[0], f))
    fuzz::die("written and read back, the fingerprint of " + f.node + " changed");
}

void checkComparison(const Fingerprint& f) {
  Fingerprint odd = f, even = f;
  odd.node += "~1";
  even.node += "~2";
  const std::string key = f.facts.empty() ? "fuzz-fact" : f.facts.begin()->first;
  const std::string majority = f.facts.count(key) ? f.facts.at(key) : "(absent)";
  odd.facts[key] = majority == "fuzz-value" ? "fuzz-other" : "fuzz-value";
  const doctor::Comparison c = doctor::compareFingerprints({f, odd, even});
  if (c.nodes != 3 || !c.splits.empty() || c.differences.size() != 1 ||
      c.differences[0].node != odd.node || c.differences[0].key != key ||
      c.differences[0].value != odd.facts[key] || c.differences[0].majority != majority ||
      c.differences[0].majorityNodes != 2 || c.oddNodes() != std::vector<std::string>{odd.node})
    fuzz::die("the comparison does not name the one odd node in fact " + key);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string dir = fuzz::emptyScratch("limits");
  const std::string head = R"({"format": "nccl-pilot-doctor-fingerprint", "version": 1, "node": ")";
  fuzz::writeScratch("limits/big.json", head + std::string(4u << 20, 'n') + R"(", "facts": {}})");
  fuzz::writeScratch("limits/long.json", head + std::string(20000, 'n') + R"(", "facts": {}})");
  std::vector<cli::UnreadableFingerprint> bad;
  const std::vector<Fingerprint> read = readDir(dir, &bad);
  if (bad.size() != 1 || bad[0].file != dir + "/big.json" || bad[0].why.find("larger than") != 0 ||
      read.size() != 1 || read[0].node != std::string(16u << 10, 'n'))
    fuzz::die("a file above 4 MiB was read, or a field above 16 KiB kept whole");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string dir = fuzz::emptyScratch("read");
  fuzz::writeScratch("read/a.json", text);
  fuzz::writeScratch("read/b.json", text);
  std::vector<cli::UnreadableFingerprint> bad;
  const std::vector<Fingerprint> read = readDir(dir, &bad);
  size_t findings = 0;
  const bool expected = isFingerprint(text, &findings);
  if (read.empty()) {
    if (expected) fuzz::die("a fingerprint refused: " + (bad.empty() ? "" : bad[0].why));
    if (bad.size() != 2 || bad[0].file != dir + "/a.json" || bad[1].file != dir + "/b.json" ||
        bad[0].why.empty() || bad[0].why != bad[1].why)
      fuzz::die("two refused files not named with why");
    return 0;
  }
  if (!expected) fuzz::die("a file that is not a fingerprint was read");
  if (read.size() != 1 || bad.size() != 1 || bad[0].file != dir + "/b.json" ||
      bad[0].why != "a second fingerprint of node " + read[0].node)
    fuzz::die("the same fingerprint twice is not one fingerprint and one duplicate");
  const nlohmann::json j = nlohmann::json::parse(text);
  std::map<std::string, std::string> facts;
  for (const auto& [k, v] : j["facts"].items()) facts[k] = v.get<std::string>();
  if (read[0].node != j["node"].get<std::string>() || read[0].facts != facts ||
      read[0].findings.size() != findings)
    fuzz::die("the fingerprint read is not the file's");
  checkRoundTrip(read[0]);
  checkComparison(read[0]);
  return 0;
}
