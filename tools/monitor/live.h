// The live section of `nccl-pilot monitor`: when its inputs hold the ranks' live state files
// (*.state.json) of a job still running, or of one killed while it ran, what `nccl-pilot hang`
// concludes from them, as plain facts the report shows: per communicator the straggler of the
// last export window, and each stalled communicator in one line. monitor does not judge state
// files (hang does, and hang reads summaries through this library): hang/live.h fills these
// facts, and monitor's command (its own library above both) hands them to the report.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pilot::cli::monitor {

/// The rank the others waited for in a communicator's last export window (late_arriver.h).
struct LiveStraggler {
  std::string comm, commName, job;
  int rank = -1;
  size_t wins = 0, compared = 0;  ///< groups where it was the shortest, of those compared
  double lostMsPerOp = 0;         ///< what each operation cost the others waiting for it
};

/// A stalled communicator in the words of `nccl-pilot hang`.
struct LiveStall {
  std::string comm, commName, job;
  int nRanks = 0;
  std::string operation;  ///< "AllReduce #40, 4M bytes", or "operation unknown"
  double stalledS = 0;
  std::string suspects;  ///< "3", "0-2 and 5"; "" when nobody is suspected
  std::string why;       ///< hang's sentence
};

struct Live {
  /// 0: no section (the inputs hold no state file, or none holding a communicator: a job that
  /// ended leaves each process's final file, empty)
  size_t stateFilesSeen = 0;
  size_t stateFiles = 0;  ///< of those, used
  size_t comms = 0;       ///< communicators judged
  size_t measured = 0;    ///< of those, with a closed export window (a straggler looked for)
  std::string asOf;       ///< the moment judged, "2025-12-03 13:53:20 UTC"
  std::vector<LiveStraggler> stragglers;
  std::vector<LiveStall> stalls;
  std::string hangCommand;  ///< "nccl-pilot hang DIR": where every rank of a stall is shown

  bool present() const { return stateFilesSeen > 0; }
};

}  // namespace pilot::cli::monitor
