#include "hang/comm_groups.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <utility>

namespace pilot::cli::hang {
namespace {

using Key = std::pair<std::string, std::string>;  // (job, comm)

/// Files that share a communicator are one job's processes: a union-find over file indices.
class Processes {
 public:
  explicit Processes(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  size_t root(size_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  void join(size_t a, size_t b) { parent_[root(a)] = root(b); }

 private:
  std::vector<size_t> parent_;
};

std::string listed(const std::vector<std::string>& items, size_t most) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < most; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > most) out += " and " + std::to_string(items.size() - most) + " more";
  return out;
}

std::string commLabel(const std::string& comm, const std::string& name) {
  return name.empty() ? comm : comm + " \"" + name + "\"";
}

/// Comm keys whose processes all stopped long before the newest file: an earlier job's.
std::set<Key> earlierJobs(const std::vector<StateFile>& states, const Timeline& timeline,
                          std::vector<std::string>* notes) {
  int64_t newest = 0;
  for (const StateFile& s : states) newest = std::max(newest, timeline.writtenOnReference(s));
  Processes processes(states.size());
  std::map<Key, size_t> firstHolder;
  for (size_t i = 0; i < states.size(); ++i) {
    for (const CommState& c : states[i].comms) {
      auto [it, fresh] = firstHolder.try_emplace({states[i].job, c.comm}, i);
      if (!fresh) processes.join(i, it->second);
    }
  }
  std::map<size_t, bool> current;  // per root: some process of it still writes
  for (size_t i = 0; i < states.size(); ++i) {
    const bool recent = newest - timeline.writtenOnReference(states[i]) <= kEarlierJobMs;
    current[processes.root(i)] |= recent;
  }
  std::set<Key> earlier;
  std::vector<std::string> labels;
  for (size_t i = 0; i < states.size(); ++i) {
    if (current[processes.root(i)]) continue;
    for (const CommState& c : states[i].comms) {
      if (earlier.insert({states[i].job, c.comm}).second)
        labels.push_back(commLabel(c.comm, c.commName));
    }
  }
  if (!labels.empty()) {
    notes->push_back(std::to_string(labels.size()) + " communicator(s) (" + listed(labels, 5) +
                     ") whose every process stopped writing more than " +
                     std::to_string(kEarlierJobMs / 60000) +
                     " min before the newest state file: an earlier job's, not judged");
  }
  return earlier;
}

void noteJobs(const std::vector<StateFile>& states, std::vector<std::string>* notes) {
  std::map<std::string, size_t> files;
  for (const StateFile& s : states) ++files[s.job];
  if (files.size() < 2) return;
  std::vector<std::string> jobs;
  for (const auto& [job, n] : files)
    jobs.push_back((job.empty() ? "(none)" : job) + ": " + std::to_string(n) + " file(s)");
  notes->push_back("the state files come from " + std::to_string(files.size()) + " jobs (" +
                   listed(jobs, 8) + "): each communicator is judged with its job's files");
}

/// The size most of the ranks give; the members that say otherwise are dropped, with a note.
void settleSize(CommGroup* g, std::vector<Member>* all, std::vector<std::string>* notes) {
  std::map<int, size_t> votes;
  for (const Member& m : *all) ++votes[m.state->nRanks];
  g->nRanks = std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) {
                return a.second < b.second;
              })->first;
  if (votes.size() > 1) {
    notes->push_back("comm " + g->comm + ": its ranks disagree on its size; " +
                     std::to_string(g->nRanks) + " (most of them) is used");
    all->erase(std::remove_if(all->begin(), all->end(),
                              [&](const Member& m) { return m.state->nRanks != g->nRanks; }),
               all->end());
  }
}

void addMembers(CommGroup* g, const std::vector<Member>& all, std::vector<std::string>* notes) {
  for (const Member& m : all) {
    auto [it, fresh] = g->ranks.try_emplace(m.state->rank, m);
    if (fresh) continue;
    const bool newer = m.file->writtenMs > it->second.file->writtenMs;
    notes->push_back("comm " + g->comm + " rank " + std::to_string(m.state->rank) + " is in " +
                     it->second.file->path + " and " + m.file->path + ": the newer (" +
                     (newer ? m.file->path : it->second.file->path) + ") is used");
    if (newer) it->second = m;
  }
  for (const auto& [rank, m] : g->ranks) {
    if (g->commName.empty()) g->commName = m.state->commName;
  }
}

}  // namespace

Grouping groupComms(const std::vector<StateFile>& states, const Timeline& timeline) {
  Grouping out;
  noteJobs(states, &out.notes);
  const std::set<Key> earlier = earlierJobs(states, timeline, &out.notes);
  std::map<Key, std::vector<Member>> members;
  for (const StateFile& s : states) {
    for (const CommState& c : s.comms) {
      if (earlier.count({s.job, c.comm}) == 0) members[{s.job, c.comm}].push_back({&s, &c});
    }
  }
  for (auto& [key, all] : members) {
    CommGroup g;
    g.job = key.first;
    g.comm = key.second;
    settleSize(&g, &all, &out.notes);
    addMembers(&g, all, &out.notes);
    out.groups.push_back(std::move(g));
  }
  return out;
}

}  // namespace pilot::cli::hang
