// The state files regrouped per communicator: every rank's view of one communicator, keyed by
// (job, comm id) so that two jobs reusing an id in one directory stay apart. A communicator
// whose every process stopped writing more than kEarlierJobMs before the newest state file,
// and that shares no process with a communicator still written, belongs to an earlier job: one
// note, not judged.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hang/state_file.h"
#include "hang/timeline.h"

namespace pilot::cli::hang {

constexpr int64_t kEarlierJobMs = 10 * 60 * 1000;

struct Member {
  const StateFile* file = nullptr;
  const CommState* state = nullptr;
};

/// Which communicator: its job (SLURM_JOB_ID, "" when none), id as the summaries write it, name.
struct CommKey {
  std::string job, comm, commName;
};

struct CommGroup : CommKey {
  int nRanks = 0;
  std::map<int, Member> ranks;  ///< the ranks a state file holds it for
};

struct Grouping {
  std::vector<CommGroup> groups;  ///< by job, then comm id
  std::vector<std::string> notes;
};

Grouping groupComms(const std::vector<StateFile>& states, const Timeline& timeline);

}  // namespace pilot::cli::hang
