// The clock-free late-arriver method, shared by `monitor` (the job's summaries) and `hang` (the
// last export window of the live state files). A collective's kernels run from when the last
// rank joins to the end, so among the ranks' mean kernel times of one group of like calls (same
// operation and size) the rank that arrived last has the shortest; the rank shortest in most
// groups, beyond the noise, is the one the others waited for. No clock is compared across nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pilot::cli::monitor {

/// Below this relative spread a group's ranks count as equal (noise, not waiting).
constexpr double kNoiseSpread = 0.02;

/// One rank's figures in one group of like calls.
struct RankTime {
  int rank = 0;
  uint64_t calls = 0;
  double meanUs = 0;  ///< mean kernel time per call
};

struct GroupShortest {
  int rank = -1;      ///< -1: fewer than 2 ranks, or the shortest is within the noise
  double spread = 0;  ///< (median - shortest) / median of the ranks' means; 0 below 2 ranks
};
GroupShortest shortestOf(const std::vector<RankTime>& ranks);

struct LateVote {
  int rank = -1;        ///< -1: no rank is the shortest in a majority of the groups
  size_t wins = 0;      ///< groups where it was the shortest
  size_t compared = 0;  ///< groups with two or more ranks
  double spread = 0;    ///< median spread of the groups it won
  /// What each operation cost the others: over the compared groups it is in, weighted by its
  /// calls, the others' mean time (the mean of their means) minus its own, in ms.
  double lostMsPerOp = 0;
};
/// The late arriver of one communicator from its groups (each the ranks that ran those calls).
LateVote lateArriverOf(const std::vector<std::vector<RankTime>>& groups);

}  // namespace pilot::cli::monitor
