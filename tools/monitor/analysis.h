// What `nccl-pilot monitor` concludes from the ranks' summaries: per communicator and
// (collective, size bucket, algorithm/protocol, channels, decision) the pooled figures of all
// ranks, whether a tuned band drifted below its calibration, and which rank the others waited
// for (late_arriver.h: the rank whose kernels are the shortest in most groups).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "monitor/late_arriver.h"
#include "monitor/summary_reader.h"

namespace pilot::cli::monitor {

struct RankFigures {
  int rank = 0;
  uint64_t calls = 0;
  double meanUs = 0;
  double busGbs = 0;
};

struct Group {
  std::string comm, commName;
  int nRanks = 0, nNodes = 0;
  std::string collective, messageSize, algo, proto, decision, band;
  uint64_t sizeBucketBytes = 0;
  int channels = 0;
  uint64_t calls = 0;  ///< over all ranks
  double p50Us = 0, p99Us = 0;
  double busGbs = 0;               ///< time-weighted over ranks
  double expectedUs = 0;           ///< mean calibrated time, 0 = none
  double driftRatio = 0;           ///< live over calibrated bus bandwidth, 0 = none
  bool drift = false;              ///< driftRatio below 1 - threshold
  std::vector<RankFigures> ranks;  ///< ascending by rank
  int shortestRank = -1;           ///< set when >= 2 ranks differ by more than the noise
  double spread = 0;               ///< (median - shortest) / median of the ranks' mean times
};

struct LateArriver : LateVote {
  std::string comm, commName;
};

struct Analysis {
  std::vector<Group> groups;  ///< by communicator, collective, size
  /// Per communicator id: how many finished communicators its records fold (the most any rank
  /// says; absent for a live one).
  std::map<std::string, uint64_t> folded;
  std::vector<LateArriver> late;
  std::vector<std::string> notes;
  size_t files = 0;
  size_t rankRecords = 0;  ///< (communicator, rank) pairs read
};

Analysis analyze(const Summaries& summaries, double driftThreshold);

}  // namespace pilot::cli::monitor
