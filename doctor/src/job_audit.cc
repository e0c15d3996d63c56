// `doctor --job`: who each record's process is (the launcher's rank, else its rank in its
// largest communicator), which ranks must agree (each communicator's, from the summaries; the
// whole job when they do not cover every record), whether every rank wrote a record, and the
// checks of job_checks.cc and job_settings.cc on those groups.
#include "pilot/doctor/job_audit.h"

#include <algorithm>
#include <set>

#include "job_check.h"
#include "pilot/core/text.h"

namespace pilot::doctor {
namespace {

using detail::counted;
using detail::JobBuilder;
using detail::JobGroup;
using detail::Members;
using detail::shown;

constexpr size_t kMaxGroups = 4096;
constexpr size_t kHeadlineBytes = 240;
constexpr size_t kMissingListed = 64;

using ProcessKey = std::pair<std::string, int64_t>;

std::vector<JobRank> namedRanks(const JobRecords& records) {
  // Each process's largest communicator, for a record that names no launcher rank.
  std::map<ProcessKey, std::pair<const std::string*, const CommMember*>> largest;
  for (const auto& [comm, members] : records.comms) {
    for (const CommMember& m : members) {
      auto& best = largest[{m.node, m.pid}];
      if (!best.second || m.nranks > best.second->nranks) best = {&comm, &m};
    }
  }
  std::vector<JobRank> ranks;
  std::map<int64_t, size_t> perRank;
  for (const JobProcess& p : records.processes) {
    JobRank r;
    r.node = p.record.node;
    r.pid = p.record.pid;
    r.process = &p;
    if (std::optional<uint64_t> n = text::parseUnsigned(p.record.rank)) {
      r.rank = static_cast<int64_t>(*n);
      r.rankFrom = p.record.rankFrom.empty() ? "the launcher" : p.record.rankFrom;
    } else if (auto it = largest.find({r.node, r.pid}); it != largest.end()) {
      r.rank = it->second.second->rank;
      r.rankFrom = "comm " + shown(*it->second.first, 24);
    }
    if (r.rank >= 0) ++perRank[r.rank];
    ranks.push_back(std::move(r));
  }
  for (JobRank& r : ranks) {
    const std::string node = shown(r.node, 32);
    r.shared = r.rank >= 0 && perRank[r.rank] > 1;
    if (r.rank < 0) {
      r.label = "pid " + std::to_string(r.pid) + " (" + node + ")";
    } else {
      r.label = "rank " + std::to_string(r.rank) + " (" + node +
                (r.shared ? ", pid " + std::to_string(r.pid) : "") + ")";
    }
  }
  std::sort(ranks.begin(), ranks.end(), [](const JobRank& a, const JobRank& b) {
    return std::make_tuple(a.rank < 0, a.rank, a.node, a.pid) <
           std::make_tuple(b.rank < 0, b.rank, b.node, b.pid);
  });
  return ranks;
}

/// The communicators with two processes or more among the records, without those whose ranks
/// all sit in a larger one compared already (what differs in it differs in the larger one).
std::vector<JobGroup> groupsOf(const JobRecords& records, const std::vector<JobRank>& ranks,
                               std::vector<std::string>* notes) {
  std::map<ProcessKey, const JobRank*> byProcess;
  for (const JobRank& r : ranks) byProcess[{r.node, r.pid}] = &r;
  std::map<Members, std::string> candidates;  // one per distinct set of ranks
  for (const auto& [comm, members] : records.comms) {
    Members ms;
    for (const CommMember& m : members) {
      if (auto it = byProcess.find({m.node, m.pid}); it != byProcess.end())
        ms.push_back(it->second);
    }
    std::sort(ms.begin(), ms.end());
    ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
    if (ms.size() >= 2) candidates.emplace(std::move(ms), comm);
  }
  std::vector<std::pair<const Members*, const std::string*>> order;
  for (const auto& [ms, comm] : candidates) order.push_back({&ms, &comm});
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first->size() > b.first->size(); });
  std::vector<JobGroup> kept;
  std::map<const JobRank*, std::vector<size_t>> keptOf;  // the kept groups each rank is in
  const auto within = [&keptOf](const JobRank* r, size_t g) {
    const auto it = keptOf.find(r);
    return it != keptOf.end() &&
           std::find(it->second.begin(), it->second.end(), g) != it->second.end();
  };
  for (const auto& [ms, comm] : order) {
    if (kept.size() >= kMaxGroups) break;
    bool inside = false;
    if (const auto first = keptOf.find(ms->front()); first != keptOf.end()) {
      for (size_t g : first->second) {
        inside =
            std::all_of(ms->begin(), ms->end(), [&](const JobRank* r) { return within(r, g); });
        if (inside) break;
      }
    }
    if (inside) continue;
    for (const JobRank* r : *ms) keptOf[r].push_back(kept.size());
    kept.push_back(
        {"comm " + shown(*comm, 24) + " (" + counted(ms->size(), "rank", "ranks") + ")", *ms});
  }
  Members everyone;
  for (const JobRank& r : ranks) everyone.push_back(&r);
  if (!kept.empty() && keptOf.size() < ranks.size()) {
    notes->push_back(std::to_string(ranks.size() - keptOf.size()) + " of the " +
                     std::to_string(ranks.size()) +
                     " processes share no communicator with another record (no summary, or "
                     "summaries without communicators): the job is compared as one group");
    kept.clear();
  }
  if (kept.empty()) kept.push_back({"", everyone});
  return kept;
}

void checkRecords(JobBuilder& b, const JobRecords& records) {
  std::map<int64_t, Members> byRank;
  int64_t expected = 0;
  for (const JobRank& r : b.ranks()) {
    if (r.rank < 0) continue;
    byRank[r.rank].push_back(&r);
    expected = std::max(expected, r.rank + 1);
  }
  for (const auto& [comm, members] : records.comms) {
    for (const CommMember& m : members) expected = std::max(expected, m.nranks);
  }
  // A rank on several processes: one finding for all of them (a restart into the same
  // directory duplicates every rank at once, for one cause).
  std::vector<int64_t> doubled;
  Members doubledProcesses;
  bool sameNode = true;
  for (const auto& [rank, ms] : byRank) {
    // Ranks in two communicators of their own are alike by nature; launchers' ranks are not.
    const bool launcher = std::any_of(
        ms.begin(), ms.end(), [](const JobRank* r) { return r->rankFrom.rfind("comm ", 0) != 0; });
    if (ms.size() < 2 || !launcher) continue;
    doubled.push_back(rank);
    doubledProcesses.insert(doubledProcesses.end(), ms.begin(), ms.end());
    const std::string& node = ms.front()->node;
    sameNode = sameNode && std::all_of(ms.begin(), ms.end(),
                                       [&node](const JobRank* r) { return r->node == node; });
  }
  if (!doubled.empty()) {
    const bool one = doubled.size() == 1;
    const std::string cause =
        sameNode ? "a restart into the same directory (torchrun --max-restarts, an elastic or "
                   "requeued job: each rank again on its node with a new pid), or two jobs' files "
                   "in one directory"
                 : "two jobs' files in one directory, or a rank variable (" +
                       shown(doubledProcesses.front()->rankFrom, 32) +
                       ") that is not the job's global rank";
    b.add("job-records", Verdict::Warn,
          std::string(one ? "rank " : "ranks ") + detail::numberList(doubled) + " on " +
              std::string(one ? "more than one process" : "more than one process each") + ": " +
              detail::rankList(doubledProcesses),
          cause + ": these are named with their pid",
          "give each job (and each restart) its own NCCL_PILOT_METRICS_DIR (e.g. "
          "/shared/metrics/$SLURM_JOB_ID/$TORCHELASTIC_RESTART_COUNT)");
  }
  std::vector<int64_t> missing;
  for (int64_t n = 0; n < expected && missing.size() < kMissingListed; ++n) {
    if (!byRank.count(n)) missing.push_back(n);
  }
  const int64_t absent = expected - static_cast<int64_t>(byRank.size());
  if (absent > 0) {
    b.add("job-records", Verdict::Warn,
          "no record from " + std::string(absent == 1 ? "rank " : "ranks ") +
              detail::numberList(missing) +
              (absent > static_cast<int64_t>(missing.size()) ? " ..." : ""),
          "records from " + counted(byRank.size(), "rank", "ranks") + " of " +
              std::to_string(expected) +
              " (the highest rank seen, or the largest communicator): the others wrote none, or "
              "their files were not gathered; they are not compared",
          "set NCCL_PILOT_METRICS_DIR in the job's environment on every rank and gather every "
          "node's files");
  }
  b.passUnlessFound("job-records", "a record from every process: " + detail::rankList(b.all()) +
                                       " (" + counted(records.filesRead, "file", "files") +
                                       " read)");
}

std::string scopeOf(const JobBuilder& b) {
  const std::vector<JobGroup>& groups = b.groups();
  if (groups.size() > 1) {
    return b.scope() + ", compared within " +
           counted(groups.size(), "communicator", "communicators");
  }
  if (!groups.front().name.empty()) return b.scope() + ", compared within " + groups.front().name;
  return b.scope() + ", compared across the job";
}

}  // namespace

JobAudit auditJob(const JobRecords& records, const std::string& job) {
  JobAudit audit;
  audit.job = job;
  audit.notes = records.notes;
  audit.ranks = namedRanks(records);
  if (audit.ranks.empty()) return audit;
  std::vector<JobGroup> groups = groupsOf(records, audit.ranks, &audit.notes);
  JobBuilder b(&audit, std::move(groups));
  audit.scope = scopeOf(b);
  checkRecords(b, records);
  detail::checkNccl(b);
  detail::checkLibnccl(b);
  detail::checkTable(b);
  detail::checkPlugins(b);
  detail::checkSettings(b);
  b.finish();
  return audit;
}

std::string jobAuditHeadline(const JobAudit& audit) {
  if (audit.failBriefs.empty()) return "";
  std::string line = "doctor --job: FAIL " + shown(audit.failBriefs.front(), kHeadlineBytes);
  const size_t more = audit.failBriefs.size() - 1;
  line += " (";
  if (more > 0) line += "and " + std::to_string(more) + " more FAIL; ";
  return line + "nccl-pilot doctor --job " + audit.job + ")";
}

std::string jobHeadline(const std::vector<std::string>& paths) {
  const JobRecords records = readJobRecords(paths);
  if (records.processes.empty()) return "";
  std::string job;
  for (const std::string& p : paths) job += (job.empty() ? "" : " ") + p;
  return jobAuditHeadline(auditJob(records, job));
}

}  // namespace pilot::doctor
