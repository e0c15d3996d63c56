// Reading the profiler's JSON-lines summaries (metrics/include/pilot/metrics/summary.h): every
// nccl_pilot_*.jsonl of a directory, or the files given, one record per "collective", "p2p"
// and "communicator" line. A line that does not parse is a note naming file and line, not an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pilot/core/result.h"
#include "pilot/metrics/histogram.h"

namespace pilot::cli::monitor {

struct CollectiveRecord {
  std::string file;
  bool p2p = false;  ///< a Send or Recv ("collective" names it; no algo, proto)
  std::string comm, commName, node;
  int rank = 0, nRanks = 0, nNodes = 0;
  std::string collective;  ///< "other" for the shared overflow key
  std::string messageSize;
  uint64_t sizeBucketBytes = 0;
  std::string algo, proto, decision, band;
  int channels = 0;
  uint64_t calls = 0;
  double timeSumUs = 0, minUs = 0, maxUs = 0, p50Us = 0, p99Us = 0;
  double busGbs = 0;
  double expectedUs = 0;  ///< 0 = no calibrated expectation
  uint64_t expectedCalls = 0;
  double driftRatio = 0;  ///< 0 = none
  uint64_t bins[metrics::kBins] = {};
};

struct CommRecord {
  std::string file, comm, commName, node, gpu;
  int rank = 0, nRanks = 0, nNodes = 0;
  bool finalized = false;
  /// Finished communicators of one name and shape folded into this record (the library keeps
  /// those so: metrics/finished_comms.h); 0 for a live one.
  uint64_t folded = 0;
  std::string firstComm, lastComm;  ///< of a folded record: the first and last it finalized
  int64_t pid = 0;
  uint64_t seen = 0, measured = 0;
};

struct Summaries {
  std::vector<std::string> files;
  std::vector<CollectiveRecord> collectives;
  std::vector<CommRecord> comms;
  std::vector<std::string> notes;
};

/// Each path is a summary file or a directory holding them. An error when nothing is readable.
Expected<Summaries> readSummaries(const std::vector<std::string>& paths);

}  // namespace pilot::cli::monitor
