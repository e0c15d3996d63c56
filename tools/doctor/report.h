// `nccl-pilot doctor` output: one line per finding (text) or one JSON object, and the
// comparison of node fingerprints.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pilot/doctor/doctor.h"
#include "pilot/doctor/fingerprint.h"
#include "pilot/doctor/job_audit.h"

namespace pilot::cli {

/// "FAIL  pcie-acs      SUBJECT | EVIDENCE | fix: FIX" (no fix: without its part).
void printFinding(std::ostream& out, const doctor::Finding& finding);

/// A line per finding, then the summary and the notes.
void printDoctorText(std::ostream& out, const doctor::DoctorReport& report);

/// {"machine", "checks": [{"id", "status", "subject", "evidence", "fix"}],
///  "summary": {"pass", "warn", "fail", "skip", "exit"}, "notes": [...]}
nlohmann::ordered_json doctorJson(const doctor::DoctorReport& report);

nlohmann::ordered_json findingJson(const doctor::Finding& finding);

/// A fingerprint file that could not be used, named with why.
struct UnreadableFingerprint {
  std::string file;
  std::string why;
};

/// "DIFF  NODE  KEY = VALUE (majority VALUE on M of N nodes)" lines, splits, unreadable
/// files, and a last line naming the odd nodes (or saying all agree).
void printComparisonText(std::ostream& out, const doctor::Comparison& comparison,
                         const std::vector<doctor::Fingerprint>& fingerprints,
                         const std::vector<UnreadableFingerprint>& unreadable);
nlohmann::ordered_json comparisonJson(const doctor::Comparison& comparison,
                                      const std::vector<doctor::Fingerprint>& fingerprints,
                                      const std::vector<UnreadableFingerprint>& unreadable);

/// `doctor --job`: "nccl-pilot doctor --job DIR: SCOPE", a line per finding as above, the
/// notes (files that could not be used), then the summary.
void printJobText(std::ostream& out, const doctor::JobAudit& audit);

/// {"job", "ranks": [{"rank", "rank_from", "node", "pid", "label", "nccl_version", "nccl_path",
///  "libraries", "plugins", "pilot_version", "table", "table_sha256", "env_plugin",
///  "settings", "file"}], "checks": [...], "notes": [...],
///  "summary": {"ranks", "nodes", "scope", "pass", "warn", "fail", "skip", "exit"}}
nlohmann::ordered_json jobJson(const doctor::JobAudit& audit);

}  // namespace pilot::cli
