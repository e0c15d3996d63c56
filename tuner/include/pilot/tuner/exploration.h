// In-job exploration (NCCL_PILOT_TUNER_EXPLORE, docs/calibration.md "Calibrate from your jobs"):
// a small share of the calls of each (communicator, collective, size) runs an alternative
// algorithm x protocol instead of the table's or NCCL's choice, so that the profiler measures
// the alternatives under the job's real traffic and `nccl-pilot fit` can learn from them.
//
// Every rank must run the same cell for the same collective, or the job hangs. The schedule
// therefore depends only on what every rank sees alike: the communicator id (NCCL's commHash)
// and shape, the collective, its size, how many calls of that (collective, size) the
// communicator made before (NCCL enqueues collectives in the same order on every rank), NCCL's
// cost table and the settings. Never on time, the PID, the host, the rank or a measurement.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "pilot/core/config.h"
#include "pilot/core/result.h"

namespace pilot::tuner {

/// An alternative is tried only where NCCL's own predicted cost of it is at most this many
/// times the cheapest usable cell's: with fraction f, a job costs at most f x (bound - 1) more
/// than NCCL alone where NCCL's model holds (5% x 1 = 5% at the defaults).
constexpr float kExploreCostBound = 2.0f;
/// The largest share of calls that may explore; more would be a benchmark, not a job.
constexpr double kMaxExploreFraction = 0.25;
/// NCCL's cost tables are 7 x 3 cells; anything larger is not explored.
constexpr int kMaxExploreCells = 32;

struct ExploreSettings {
  double fraction = 0;  ///< 0 = off
  float costBound = kExploreCostBound;
  bool on() const { return fraction > 0; }
};

/// NCCL_PILOT_TUNER_EXPLORE: unset or 0 = off; a fraction in (0, kMaxExploreFraction]. Anything
/// else is an Error naming the variable (the caller keeps exploration off and says that this
/// rank may now decide apart from ranks that read a valid value).
Expected<ExploreSettings> readExploreSettings(const EnvLookup& env);

/// The schedule's inputs besides NCCL's (fraction, bound, the table's digest, the schedule's
/// version) as 8 hex digits of their SHA-256: equal on every rank, or ranks decide apart.
std::string exploreDigest(const ExploreSettings& settings, const std::string& tableSha256);

/// One communicator's exploration state: a fixed table of per-(collective, size) call counts,
/// allocated at construction. explore() is lock-free and allocation-free.
class Explorer {
 public:
  static constexpr unsigned kKeys = 512;  ///< distinct (collective, size) pairs counted

  Explorer(const ExploreSettings& settings, uint64_t commId);

  /// Counts this call of (collType, nBytes) and says whether it explores. Calls past kKeys
  /// distinct pairs are not counted and never explore (the same pairs on every rank: NCCL's
  /// call order is the same everywhere), nor does any call once the communicator captured a
  /// collective into a CUDA graph (graph_capture.h).
  bool scheduled(int collType, uint64_t nBytes, uint64_t* ordinal) noexcept;

  /// The cell (algo * numProto + proto) the `ordinal`-th exploration of (collType, nBytes)
  /// runs, or -1 when no alternative is worth a try: candidates are the cells usable in NCCL's
  /// own table (`ncclCosts`, as NCCL passed it) other than `baseline` (the cell the normal
  /// decision leaves NCCL to run), whose cost is within the bound of the cheapest; they take
  /// turns in cell order.
  int pick(int collType, uint64_t nBytes, uint64_t ordinal, const float* ncclCosts, int numCells,
           int baseline) const noexcept;

  uint64_t explorations() const { return explorations_.load(std::memory_order_relaxed); }
  void countExploration() { explorations_.fetch_add(1, std::memory_order_relaxed); }

 private:
  struct Entry {
    std::atomic<uint64_t> key{0};  ///< 0 = free; else mix of (collective, size) | 1
    std::atomic<uint64_t> calls{0};
  };
  uint64_t keyOf(int collType, uint64_t nBytes) const noexcept;

  uint64_t commId_;
  uint64_t step_;  ///< fraction x 2^32: call n explores when (n + offset) x step crosses 2^32
  float costBound_;
  uint64_t commSalt_;
  std::unique_ptr<Entry[]> entries_;
  std::atomic<uint64_t> explorations_{0};
};

/// NCCL's choice among a cost table's cells: the first minimum over cells >= 0, -1 when none
/// (research/tuner.md §1.2: topoGetAlgoInfo's search).
int cheapestCell(const float* costs, int numCells) noexcept;

}  // namespace pilot::tuner
