#include "doctor/report.h"

#include <iomanip>

namespace pilot::cli {
namespace {

/// For a status.<check> difference: that node's worst finding of the check, so the line says
/// why and not only that.
std::string whyOf(const std::vector<doctor::Fingerprint>& fingerprints, const std::string& node,
                  const std::string& key) {
  const std::string prefix = "status.";
  if (key.rfind(prefix, 0) != 0) return "";
  const std::string check = key.substr(prefix.size());
  for (const doctor::Fingerprint& f : fingerprints) {
    if (f.node != node) continue;
    const doctor::Verdict worst = doctor::worstVerdict(f.findings, check);
    for (const doctor::Finding& finding : f.findings) {
      if (finding.check == check && finding.verdict == worst && worst != doctor::Verdict::Pass)
        return finding.subject + ": " + finding.evidence;
    }
  }
  return "";
}

}  // namespace

void printFinding(std::ostream& out, const doctor::Finding& f) {
  out << std::left << std::setw(6) << doctor::verdictName(f.verdict) << std::setw(14) << f.check
      << f.subject << " | " << f.evidence;
  if (!f.fix.empty()) out << " | fix: " << f.fix;
  out << "\n";
}

void printDoctorText(std::ostream& out, const doctor::DoctorReport& report) {
  out << "nccl-pilot doctor: " << report.machine << "\n";
  for (const doctor::Finding& f : report.findings) printFinding(out, f);
  const doctor::Summary s = doctor::summarize(report.findings);
  out << "summary: " << s.pass << " PASS, " << s.warn << " WARN, " << s.fail << " FAIL, " << s.skip
      << " SKIP (exit " << doctor::exitStatus(s) << ")\n";
  for (const std::string& note : report.notes) out << "note: " << note << "\n";
}

nlohmann::ordered_json findingJson(const doctor::Finding& f) {
  return {{"id", f.check},
          {"status", doctor::verdictName(f.verdict)},
          {"subject", f.subject},
          {"evidence", f.evidence},
          {"fix", f.fix}};
}

nlohmann::ordered_json doctorJson(const doctor::DoctorReport& report) {
  nlohmann::ordered_json out;
  out["machine"] = report.machine;
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  for (const doctor::Finding& f : report.findings) checks.push_back(findingJson(f));
  out["checks"] = std::move(checks);
  const doctor::Summary s = doctor::summarize(report.findings);
  out["summary"] = {{"pass", s.pass},
                    {"warn", s.warn},
                    {"fail", s.fail},
                    {"skip", s.skip},
                    {"exit", doctor::exitStatus(s)}};
  out["notes"] = report.notes;
  return out;
}

void printComparisonText(std::ostream& out, const doctor::Comparison& c,
                         const std::vector<doctor::Fingerprint>& fingerprints,
                         const std::vector<UnreadableFingerprint>& unreadable) {
  out << "nccl-pilot doctor --compare: " << c.nodes << " nodes";
  for (const doctor::Fingerprint& f : fingerprints) out << " " << f.node;
  out << "\n";
  for (const doctor::Difference& d : c.differences) {
    out << "DIFF  " << d.node << "  " << d.key << " = " << d.value << " (majority " << d.majority
        << " on " << d.majorityNodes << " of " << c.nodes << " nodes)";
    const std::string why = whyOf(fingerprints, d.node, d.key);
    if (!why.empty()) out << " | " << why;
    out << "\n";
  }
  for (const doctor::Split& s : c.splits) {
    out << "SPLIT " << s.key << ":";
    for (const auto& [value, nodes] : s.groups) {
      out << " " << value << " on";
      for (const std::string& n : nodes) out << " " << n;
      out << ";";
    }
    out << " no value is held by a majority\n";
  }
  for (const UnreadableFingerprint& u : unreadable)
    out << "UNREADABLE " << u.file << ": " << u.why << "\n";
  const std::vector<std::string> odd = c.oddNodes();
  if (odd.empty() && c.splits.empty() && unreadable.empty()) {
    out << "result: all " << c.nodes << " nodes agree\n";
    return;
  }
  out << "result: odd nodes:";
  for (const std::string& n : odd) out << " " << n;
  if (odd.empty()) out << " none (see the splits above)";
  out << "\n";
}

nlohmann::ordered_json comparisonJson(const doctor::Comparison& c,
                                      const std::vector<doctor::Fingerprint>& fingerprints,
                                      const std::vector<UnreadableFingerprint>& unreadable) {
  nlohmann::ordered_json out;
  out["nodes"] = c.nodes;
  nlohmann::ordered_json names = nlohmann::ordered_json::array();
  for (const doctor::Fingerprint& f : fingerprints) names.push_back(f.node);
  out["node_names"] = std::move(names);
  out["odd_nodes"] = c.oddNodes();
  nlohmann::ordered_json diffs = nlohmann::ordered_json::array();
  for (const doctor::Difference& d : c.differences) {
    diffs.push_back({{"node", d.node},
                     {"key", d.key},
                     {"value", d.value},
                     {"majority", d.majority},
                     {"majority_nodes", d.majorityNodes},
                     {"why", whyOf(fingerprints, d.node, d.key)}});
  }
  out["differences"] = std::move(diffs);
  nlohmann::ordered_json splits = nlohmann::ordered_json::array();
  for (const doctor::Split& s : c.splits) {
    nlohmann::ordered_json groups = nlohmann::ordered_json::array();
    for (const auto& [value, nodes] : s.groups)
      groups.push_back({{"value", value}, {"nodes", nodes}});
    splits.push_back({{"key", s.key}, {"groups", std::move(groups)}});
  }
  out["splits"] = std::move(splits);
  nlohmann::ordered_json bad = nlohmann::ordered_json::array();
  for (const UnreadableFingerprint& u : unreadable)
    bad.push_back({{"file", u.file}, {"why", u.why}});
  out["unreadable"] = std::move(bad);
  return out;
}

}  // namespace pilot::cli
