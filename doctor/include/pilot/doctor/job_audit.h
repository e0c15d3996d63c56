// `nccl-pilot doctor --job DIR`: every rank's provenance record (provenance/record.h: the NCCL
// that called our plugin, every libnccl the process mapped, our plugins and their ABIs, the table
// digest, the effective NCCL_* settings) read back from a metrics directory and compared across
// the ranks of each communicator. The reader takes whatever a shared filesystem or a gather left
// there (per-node subfolders, truncated, foreign or newer files: one note each, the rest kept);
// the audit turns the records into doctor findings. Nothing here prints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/doctor/finding.h"
#include "pilot/provenance/record.h"

namespace pilot::doctor {

/// The reader's bounds: what a broken or hostile directory can make it hold or walk.
inline constexpr size_t kJobMaxRecordFileBytes = 4u << 20;  ///< a .provenance.json
inline constexpr size_t kJobMaxSummaryBytes = 256u << 20;   ///< a summary, read line by line
inline constexpr size_t kJobMaxLineBytes = 1u << 20;
inline constexpr int kJobMaxDepth = 8;              ///< below each directory named
inline constexpr size_t kJobMaxEntries = 1u << 20;  ///< directory entries looked at
inline constexpr size_t kJobMaxFiles = 65536;       ///< files read
inline constexpr size_t kJobMaxProcesses = 65536;   ///< records kept (one per node and pid)
inline constexpr size_t kJobMaxComms = 65536;
inline constexpr size_t kJobMaxMemberships = 1u << 20;  ///< (communicator, process) pairs
inline constexpr size_t kJobMaxTextBytes = 4096;        ///< any string, cut at a UTF-8 boundary
inline constexpr size_t kJobMaxListEntries = 32;        ///< plugins, conf files, plugin settings
inline constexpr size_t kJobMaxNotes = 512;
inline constexpr int64_t kJobMaxPid = int64_t{1} << 40;
inline constexpr int64_t kJobMaxRanks = int64_t{1} << 24;

/// One process's record and where it was read ("DIR/x.provenance.json:1").
struct JobProcess {
  provenance::ProcessRecord record;
  int64_t format = provenance::kRecordFormat;
  std::string file;
};

/// One process's place in a communicator, from the summaries' "communicator" lines.
struct CommMember {
  std::string node;
  int64_t pid = 0;
  int64_t rank = 0, nranks = 0;
};

struct JobRecords {
  std::vector<JobProcess> processes;  ///< one per (node, pid): the newest written_ms
  std::map<std::string, std::vector<CommMember>> comms;  ///< comm id -> one entry per process
  std::vector<std::string> notes;  ///< one per unusable file: "FILE[:LINE]: why"
  size_t filesRead = 0;
};

/// Reads every nccl_pilot_*.provenance.json and nccl_pilot_*.jsonl under the paths: directories
/// to kJobMaxDepth, files named whatever their name (a summary when it ends in .jsonl). Never
/// throws.
JobRecords readJobRecords(const std::vector<std::string>& paths);

/// The same reading of one file's bytes, as if read from `path`: for tests and the fuzzer.
/// Records of a (node, pid) already in `records` are deduplicated as readJobRecords does.
void addJobFileText(const std::string& path, std::string_view text, JobRecords* records);

/// A process as the findings name it.
struct JobRank {
  std::string node;
  int64_t pid = 0;
  int64_t rank = -1;     ///< the launcher's rank, else its rank in its largest communicator
  std::string rankFrom;  ///< "RANK", "comm 0x1a2b", "" (unknown)
  std::string label;     ///< "rank 3 (node-b)", "pid 1234 (node-b)", "rank 3 (node-b, pid 9)"
  bool shared = false;   ///< another process has the same rank: named with its pid too
  const JobProcess* process = nullptr;
};

struct JobAudit {
  std::string job;             ///< the directory (or inputs) as given
  std::string scope;           ///< "4 ranks on 2 nodes, compared across the job"
  std::vector<JobRank> ranks;  ///< in rank order; pointers into the JobRecords audited
  std::vector<Finding> findings;
  std::vector<std::string> notes;
  /// One short line per FAIL, in the order of the findings ("NCCL 2.28.3 on rank 3 (node-b),
  /// majority 2.28.9"), for monitor's and hang's one-line mention.
  std::vector<std::string> failBriefs;
};

/// The checks (job-records, job-nccl, job-libnccl, job-table, job-plugins, job-settings) on the
/// records read; `job` names the input in the headline and the JSON. `records` must outlive
/// the audit (the ranks point into it).
JobAudit auditJob(const JobRecords& records, const std::string& job);

/// "" without a FAIL; else one line: "doctor --job: FAIL NCCL 2.28.3 on rank 3 (node-b),
/// majority 2.28.9 (and 1 more FAIL; nccl-pilot doctor --job DIR)".
std::string jobAuditHeadline(const JobAudit& audit);

/// The headline of the audit of these inputs (named "A B" in it): `monitor`'s and `hang`'s one
/// line on what they were given. "" without records or without a FAIL.
std::string jobHeadline(const std::vector<std::string>& paths);

}  // namespace pilot::doctor
