// What the job checks share: the groups of ranks compared (a communicator each, or the whole
// job), the bounded wording of rank lists, and the majority comparison of one value across a
// group. Not public API (job_audit.h is).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/doctor/job_audit.h"

namespace pilot::doctor::detail {

using Members = std::vector<const JobRank*>;

/// Ranks whose values must agree: a communicator's, or the whole job's (name "").
struct JobGroup {
  std::string name;  ///< "comm 0x1a2b (4 ranks)"
  Members members;
};

/// Where the checks put their findings. Each (check, verdict) keeps at most kMaxPerKind
/// findings: a job of thousands of ranks with as many odd values still gives a short report.
class JobBuilder {
 public:
  static constexpr size_t kMaxPerKind = 24;

  JobBuilder(JobAudit* audit, std::vector<JobGroup> groups)
      : audit_(audit), groups_(std::move(groups)) {}

  const std::vector<JobGroup>& groups() const { return groups_; }
  const std::vector<JobRank>& ranks() const { return audit_->ranks; }
  /// Every rank, as one list.
  Members all() const;
  /// " in comm 0x1a2b (4 ranks)" when more than one group is compared, else "".
  std::string where(const JobGroup& group) const;
  /// "4 ranks on 2 nodes".
  std::string scope() const;

  void add(const char* check, Verdict verdict, std::string subject, std::string evidence,
           std::string fix, std::string brief = "");
  /// PASS with `evidence` unless the check found something.
  void passUnlessFound(const char* check, std::string evidence);
  /// One line per (check, verdict) that kept no more than kMaxPerKind.
  void finish();

 private:
  JobAudit* audit_;
  std::vector<JobGroup> groups_;
  std::map<std::pair<std::string, Verdict>, size_t> counts_;
};

/// "rank 3 (node-b)", "ranks 0-2 (node-a), 5 (node-b), pid 77 (node-c)": consecutive ranks on
/// one node as a range, at most 8 items, then "and N more".
std::string rankList(const Members& ranks);
/// rankList, but a node whose every rank (of `all`, two or more, not one range) is in `side` is
/// named as a node: "every rank of node node-b (8)", "every rank of nodes a, b (8 each), and
/// rank 3 (c)".
std::string sideList(const Members& side, const Members& all);
/// "0-2, 5": numbers as ranges, at most 8 items.
std::string numberList(const std::vector<int64_t>& sorted);
/// The value as a line shows it: at most `max` bytes, "..." when cut.
std::string shown(std::string_view value, size_t max = 96);
/// "1 rank", "3 ranks".
std::string counted(size_t n, const char* one, const char* many);

/// The ranks holding one value.
struct Side {
  std::string value;
  Members ranks;
};
/// The members by value, the most held first (then by value); nullopt leaves a rank out.
std::vector<Side> sidesOf(const Members& members,
                          const std::function<std::optional<std::string>(const JobRank&)>& value);

/// How one compared value reads in the lines.
struct Wording {
  std::function<std::string(const std::string&)> thing;   ///< "NCCL 2.28.3"
  std::function<std::string(const std::string&)> others;  ///< "run 2.28.9" (the other ranks ...)
  std::function<std::string(const std::string&)> brief;   ///< "2.28.9" (the headline)
  std::string differ;                                     ///< "NCCL versions differ"
  std::function<std::string(const Side&)> detail;         ///< more evidence for an odd side
};
/// With more than one side: with a majority (more than half the compared ranks), one finding
/// per odd side naming it and what the majority has; else one naming every side. A majority
/// rank is never named as odd.
void reportSides(JobBuilder& b, const JobGroup& group, const std::vector<Side>& sides,
                 const Wording& wording, const char* check, Verdict verdict,
                 const std::string& fix);

// The checks, in the order they report (job_checks.cc, job_settings.cc).
void checkNccl(JobBuilder& b);
void checkLibnccl(JobBuilder& b);
void checkTable(JobBuilder& b);
void checkPlugins(JobBuilder& b);
void checkSettings(JobBuilder& b);

}  // namespace pilot::doctor::detail
