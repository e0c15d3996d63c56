// What `nccl-pilot hang` reads: every *.state.json under the inputs (directories are searched
// to any depth: files gathered from the nodes often sit in a folder per node) and the
// profiler's summaries beside them (nccl_pilot_*.jsonl, through monitor's reader: which ranks
// finalized a communicator, and its name). A file that cannot be used is one note naming it and
// why; the rest is kept. One process's state read twice keeps its newest.
#pragma once

#include <string>
#include <vector>

#include "hang/state_file.h"
#include "monitor/summary_reader.h"

namespace pilot::cli::hang {

struct Inputs {
  std::vector<StateFile> states;  ///< one per (node, pid), the newest
  monitor::Summaries summaries;   ///< empty when there are none
  std::vector<std::string> notes;
  bool anyReadable = false;   ///< some input path could be listed or opened
  size_t stateFilesSeen = 0;  ///< *.state.json found, used or not
};

Inputs readInputs(const std::vector<std::string>& paths);

}  // namespace pilot::cli::hang
