// libFuzzer target: arbitrary bytes as a rank's provenance record file and as its summary
// (nccl_pilot_*.provenance.json and nccl_pilot_*.jsonl under a metrics directory, written by
// other nodes and read by `doctor --job`, `monitor` and `hang`) through readJobRecords and the
// audit. For every input:
//  1. no crash, no exception, no undefined behaviour (ASan/UBSan);
//  2. every record kept holds job_audit.h's bounds: strings within kJobMaxTextBytes and
//     without control characters, lists within theirs, pid in range, rank "" or decimal,
//     settings named NCCL_*; every communicator member's rank within its nranks;
//  3. at most one note per file, each naming its file; the same bytes in a second record file
//     give the same processes (one per node and pid), not more;
//  4. the audit runs: findings of the known check ids only, every rank in a finding's list
//     bounded, a headline of one line, empty exactly when no finding FAILs;
//  5. a record read, written again by the library's renderer and read back, is the same (for
//     records whose text is ASCII: the renderer writes other bytes as \u00XX).
// Any violation aborts with the details on stderr.
#include <set>
#include <string>

#include "fuzz_support.h"
#include "pilot/core/text.h"
#include "pilot/doctor/job_audit.h"

using namespace pilot;
using doctor::JobProcess;
using doctor::JobRecords;

namespace {

bool bounded(const std::string& s) {
  if (s.size() > doctor::kJobMaxTextBytes) return false;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

bool ascii(const std::string& s) {
  for (unsigned char c : s) {
    if (c >= 0x7f) return false;
  }
  return true;
}

/// Every string of the record, to check them alike.
std::vector<const std::string*> strings(const provenance::ProcessRecord& r) {
  std::vector<const std::string*> out = {&r.node,         &r.rank,    &r.rankFrom,    &r.localRank,
                                         &r.pilotVersion, &r.table,   &r.tableSha256, &r.nccl.path,
                                         &r.nccl.version, &r.ncclHow, &r.envPlugin};
  for (const auto& l : r.libraries) out.insert(out.end(), {&l.path, &l.version});
  for (const auto& p : r.plugins) out.insert(out.end(), {&p.kind, &p.path});
  for (const auto& [name, value] : r.pluginSettings) out.insert(out.end(), {&name, &value});
  for (const auto& c : r.confFiles) out.push_back(&c);
  for (const auto& s : r.settings) {
    out.insert(out.end(), {&s.name, &s.value, &s.source, &s.why, &s.closest});
  }
  return out;
}

void checkBounds(const JobProcess& p) {
  const provenance::ProcessRecord& r = p.record;
  for (const std::string* s : strings(r)) {
    if (!bounded(*s)) fuzz::die("a string past its bound or with a control character kept");
  }
  if (r.node.empty() || r.pid < 1 || r.pid > doctor::kJobMaxPid)
    fuzz::die("a record without a node or with a pid out of range kept");
  if (!r.rank.empty() && !text::parseUnsigned(r.rank)) fuzz::die("a rank that is no number");
  if (r.settings.size() > provenance::kMaxSettings ||
      r.libraries.size() > provenance::kMaxLibraries ||
      r.plugins.size() > doctor::kJobMaxListEntries ||
      r.confFiles.size() > doctor::kJobMaxListEntries ||
      r.pluginSettings.size() > doctor::kJobMaxListEntries)
    fuzz::die("a list past its bound kept");
  for (const provenance::Setting& s : r.settings) {
    if (s.name.rfind("NCCL_", 0) != 0) fuzz::die("a setting not named NCCL_* kept");
  }
  if (p.format < 1) fuzz::die("a record of format below 1 kept");
}

void checkNotes(const JobRecords& r, const std::vector<std::string>& files) {
  if (r.notes.size() > files.size()) fuzz::die("more than one note for a file");
  for (const std::string& note : r.notes) {
    bool named = false;
    for (const std::string& f : files) named |= note.rfind(f, 0) == 0;
    if (!named) fuzz::die("a note that names no file: " + note);
  }
}

void checkAudit(const JobRecords& records) {
  const doctor::JobAudit audit = doctor::auditJob(records, "fuzz");
  static const std::set<std::string> kIds = {"job-records", "job-nccl",    "job-libnccl",
                                             "job-table",   "job-plugins", "job-settings"};
  bool fail = false;
  for (const doctor::Finding& f : audit.findings) {
    if (!kIds.count(f.check) || f.subject.empty()) fuzz::die("a finding of no known check");
    // A rank list names at most 8 items, each a short node name: bounded whatever the input.
    if (f.subject.size() + f.evidence.size() > 4 * doctor::kJobMaxTextBytes)
      fuzz::die("a finding's line is not bounded: " + f.subject);
    fail |= f.verdict == doctor::Verdict::Fail;
  }
  if (!records.processes.empty() && audit.findings.empty()) fuzz::die("records, no finding");
  const std::string headline = doctor::jobAuditHeadline(audit);
  if (headline.empty() == fail) fuzz::die("the headline does not follow the FAILs");
  if (headline.find('\n') != std::string::npos) fuzz::die("a headline of two lines");
}

bool same(const provenance::ProcessRecord& a, const provenance::ProcessRecord& b) {
  const auto sa = strings(a), sb = strings(b);
  if (sa.size() != sb.size() || a.pid != b.pid || a.writtenMs != b.writtenMs ||
      a.settingsDropped != b.settingsDropped || a.settings.size() != b.settings.size() ||
      a.plugins.size() != b.plugins.size() || a.libraries.size() != b.libraries.size() ||
      a.confFiles.size() != b.confFiles.size())
    return false;
  for (size_t i = 0; i < sa.size(); ++i) {
    if (*sa[i] != *sb[i]) return false;
  }
  for (size_t i = 0; i < a.settings.size(); ++i) {
    if (a.settings[i].cls != b.settings[i].cls) return false;
  }
  for (size_t i = 0; i < a.plugins.size(); ++i) {
    if (a.plugins[i].abi != b.plugins[i].abi) return false;
  }
  return true;
}

void checkRoundTrip(const provenance::ProcessRecord& r) {
  for (const std::string* s : strings(r)) {
    if (!ascii(*s)) return;
  }
  JobRecords back;
  doctor::addJobFileText("nccl_pilot_x.provenance.json", provenance::renderRecordJson(r), &back);
  if (back.processes.size() != 1 || !back.notes.empty())
    fuzz::die("a record written again is not read back: " +
              (back.notes.empty() ? std::string("no record") : back.notes[0]));
  if (!same(back.processes[0].record, r)) fuzz::die("a record written again reads differently");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string dir = fuzz::emptyScratch("job");
  const std::vector<std::string> files = {
      fuzz::writeScratch("job/nccl_pilot_a_1.provenance.json", bytes),
      fuzz::writeScratch("job/nccl_pilot_a_1.jsonl", bytes)};
  const JobRecords records = doctor::readJobRecords({dir});
  if (records.filesRead != 2) fuzz::die("the two files were not both read");
  checkNotes(records, files);
  for (const JobProcess& p : records.processes) {
    checkBounds(p);
    if (p.format == provenance::kRecordFormat) checkRoundTrip(p.record);
  }
  for (const auto& [comm, members] : records.comms) {
    for (const doctor::CommMember& m : members) {
      if (m.rank < 0 || m.rank >= m.nranks || m.nranks > doctor::kJobMaxRanks || comm.empty())
        fuzz::die("a communicator member out of range kept");
    }
  }
  // The same record file twice: the same processes, one per node and pid.
  const std::string second = fuzz::writeScratch("job/nccl_pilot_b_2.provenance.json", bytes);
  const JobRecords twice = doctor::readJobRecords({dir});
  if (twice.processes.size() != records.processes.size())
    fuzz::die("the same record in a second file counts twice");
  checkNotes(twice, {files[0], files[1], second});
  checkAudit(records);
  return 0;
}
