// `nccl-pilot monitor`'s live section (monitor/live.h) from hang's judgement: the state files
// among monitor's inputs read and judged exactly as `nccl-pilot hang` on the same inputs would,
// then written down as monitor's plain facts (the straggler of each communicator, each stall in
// one line with its `why`).
#pragma once

#include <string>
#include <vector>

#include "hang/judge.h"
#include "monitor/live.h"

namespace pilot::cli::hang {

struct LiveRead {
  /// live.present() is false when no state file holds a communicator (none at all, or only
  /// the final, empty files of a job that ended); then notes are empty too.
  monitor::Live live;
  std::vector<std::string> notes;
};

/// Reads what `hang` would among monitor's inputs: directories (searched to any depth), the
/// files named *.state.json and the summaries named nccl_pilot_*.jsonl (which ranks finalized
/// a communicator). Other files and missing paths are monitor's own to read and report: a file
/// monitor reads as a summary under another name is no state file here.
LiveRead readLive(const std::vector<std::string>& inputs, const HangOptions& options);

/// The facts of `report`, as judged from `stateFilesSeen` state files, with `hangCommand` as
/// where every rank of a stall is shown.
monitor::Live liveOf(const HangReport& report, size_t stateFilesSeen,
                     const std::string& hangCommand);

}  // namespace pilot::cli::hang
