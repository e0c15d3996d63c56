// In-job exploration (NCCL_PILOT_TUNER_EXPLORE, docs/calibration.md "Calibrate from your jobs"):
// a small share of the calls of each (communicator, collective, size) runs an alternative
// algorithm x protocol instead of the table's or NCCL's choice, so that the profiler measures
// the alternatives under the job's real traffic and `nccl-pilot fit` can learn from them.
//
// Every rank must run the same cell for the same collective, or the job hangs. The schedule
// therefore depends only on what every rank sees alike: the communicator id (NCCL's commHash)
// and shape, the collective, its size, how many calls the communicator made before (NCCL
// enqueues collectives in the same order on every rank), NCCL's cost table, the table and the
// settings. Never on time, the PID, the host, the rank or a measurement.
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
/// NCCL's cost tables are 7 x 3 cells; anything larger is not explored (the candidates of a
/// pair are a 32-bit mask with one bit of its own).
constexpr int kMaxExploreCells = 31;

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

/// One communicator's exploration state, allocated at construction; due() and cellFor() are
/// lock-free and allocation-free.
///
/// Which calls: the communicator counts its calls; after each exploration the next one comes a
/// gap of 1 .. 2/f - 1 calls later (mean 1/f), the gap a hash of the call count and the
/// communicator id. So a share f of all calls explores, each size in proportion to its calls,
/// at positions no training step's order lines up with; a call that does not explore costs a
/// load, a store and a compare. NCCL drives a communicator from one thread at a time, so the
/// count is a load and a store, not an atomic add.
///
/// Which alternative: the candidates of a (collective, size) pair are the cells NCCL left usable
/// in the cost table it passed (never one it marked ignored) whose predicted cost is within the
/// bound of the cheapest, but the cell the decision runs. NCCL's table is the same on every
/// rank; the decision is taken as if regBuff were unknown (the only per-process input a rule
/// may have), so the candidates are the same on every rank too. The pair's explorations take
/// turns over them in cell order, from a start of its own. They are found at the pair's first
/// exploration and kept with its turns (a table of kKeys pairs; a pair whose set is full finds
/// them every time and takes the communicator's count as its turn).
class Explorer {
 public:
  static constexpr unsigned kLogSets = 7;
  static constexpr unsigned kWays = 4;
  static constexpr unsigned kKeys = kWays << kLogSets;

  Explorer(const ExploreSettings& settings, uint64_t commId);

  /// Counts this call and says whether it explores; never once the communicator captured a
  /// collective into a CUDA graph (graph_capture.h).
  bool due() noexcept {
    const uint64_t n = calls_.load(std::memory_order_relaxed);
    calls_.store(n + 1, std::memory_order_relaxed);
    if (__builtin_expect(n != next_.load(std::memory_order_relaxed), 1)) return false;
    return dueAt(n);
  }

  /// The cell (algo * numProto + proto) an exploring call of (collType, nBytes) runs: the
  /// pair's next turn over its candidates in NCCL's table `ncclCosts`; -1 when none is usable.
  /// `decided()` gives the cell the decision runs (without regBuff), asked only when the
  /// pair's candidates are found.
  template <typename Decided>
  int cellFor(int collType, uint64_t nBytes, const float* ncclCosts, int numCells,
              Decided&& decided) noexcept {
    if (numCells <= 0 || numCells > kMaxExploreCells) return -1;
    const uint64_t key = keyOf(collType, nBytes);
    Entry* e = entryOf(key);
    if (e != nullptr && (e->state.load(std::memory_order_relaxed) >> 32) & kFound) {
      return nextTurn(*e, key, 0);
    }
    const uint32_t mask = candidates(ncclCosts, numCells, costBound_, decided());
    return e != nullptr ? nextTurn(*e, key, mask | kFound) : anyTurn(key, mask);
  }

  /// The candidate cells of a cost table (bit c: cell c) for a bound on NCCL's predicted cost,
  /// without `decided` (-1: none).
  static uint32_t candidates(const float* ncclCosts, int numCells, float costBound,
                             int decided) noexcept;

  uint64_t explorations() const { return explorations_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::atomic<uint64_t> key{0};    ///< 0 = free; else a mix of (collective, size) | 1
    std::atomic<uint64_t> state{0};  ///< candidates | kFound (high half), this round's rest (low)
  };
  struct alignas(64) Set {  ///< one cache line
    Entry ways[kWays];
  };
  static constexpr uint32_t kFound = 1u << 31;
  uint64_t keyOf(int collType, uint64_t nBytes) const noexcept;
  Entry* entryOf(uint64_t key) noexcept;
  /// The pair's next candidate; `found` (with kFound) when its candidates were just found.
  int nextTurn(Entry& e, uint64_t key, uint32_t found) noexcept;
  /// A pair without an entry: the communicator's count takes turns.
  int anyTurn(uint64_t key, uint32_t mask) noexcept;
  /// Call n explores: schedules the next exploration; whether this one may.
  bool dueAt(uint64_t n) noexcept;
  /// The calls from one exploration to the next after call n: 1 .. gapRange_.
  uint64_t gapAfter(uint64_t n) const noexcept;

  uint64_t commId_;
  uint64_t gapRange_;  ///< 2 / fraction - 1: gaps of 1 .. gapRange_ calls, mean 1 / fraction
  float costBound_;
  uint64_t commSalt_;
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> next_;  ///< the call that explores next; UINT64_MAX = never
  std::unique_ptr<Set[]> sets_;
  std::atomic<uint64_t> explorations_{0};
};

/// NCCL's choice among a cost table's cells: the first minimum over cells >= 0, -1 when none
/// (research/tuner.md §1.2: topoGetAlgoInfo's search).
int cheapestCell(const float* costs, int numCells) noexcept;

}  // namespace pilot::tuner
