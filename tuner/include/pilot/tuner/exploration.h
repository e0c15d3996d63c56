// In-job exploration (NCCL_PILOT_TUNER_EXPLORE, docs/calibration.md "Calibrate from your jobs"):
// some calls of each (communicator, collective, size) run an alternative algorithm x protocol
// instead of the table's or NCCL's choice, so that the profiler measures the alternatives under
// the job's real traffic and `nccl-pilot fit` can learn from them.
//
// The setting is a budget of the job's time, not of its calls: 0.05 lets exploration add at most
// about 5% to the time NCCL's own choices take. Exploring a 128 MiB all-reduce on a slow cell
// costs as much as thousands of 8-byte explorations, so the calls that explore are mostly the
// cheap ones, where NCCL's model is also most often wrong (issue 29).
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

/// The largest budget: more would be a benchmark, not a job.
constexpr double kMaxExploreFraction = 0.25;
/// NCCL's cost tables are 7 x 3 cells; anything larger is not explored (the candidates of a
/// pair are a mask of 21 bits).
constexpr int kMaxExploreCells = 21;

/// The schedule's constants (docs/calibration.md "Exploration: the tuner"; measured in the
/// simulator with NCCL's own cost model, tests/sim).
struct ExploreSchedule {
  /// Calls that may explore come 1 .. kDueGap calls apart (mean 6.5: about 15% of each size's
  /// calls, at most 18.5-19.5% of any size's in the simulated jobs), wherever the budget allows:
  /// well under a quarter.
  static constexpr uint64_t kDueGap = 12;
  /// An exploration is charged as if the alternative took kMargin times NCCL's predicted cost
  /// of it, less NCCL's predicted cost of its own pick. NCCL's model errs: on a TCP cluster it
  /// predicts Ring/LL at 2x Ring/Simple for large messages, which measure 4-6x.
  static constexpr double kMargin = 3.0;
  /// Of the budget, the share the schedule spends: the rest absorbs the model's misses.
  static constexpr double kSpend = 0.8;
  /// A single exploration may cost at most this many average calls of the communicator (the
  /// mean of NCCL's predicted cost of its pick over the calls so far): the window of
  /// alternatives is wide where calls are cheap and closes where they are the job's largest,
  /// so the budget buys many measurements `fit` can use rather than a few it cannot.
  static constexpr double kWindow = 4.0;
  /// Rounds over a pair's candidates in one job (each candidate at most this many times): more
  /// adds little to what `fit` can tell apart at 12% per-call noise.
  static constexpr uint32_t kRounds = 32;
};

struct ExploreSettings {
  double fraction = 0;  ///< the budget, a share of NCCL's own time; 0 = off
  bool on() const { return fraction > 0; }
};

/// NCCL_PILOT_TUNER_EXPLORE: unset or 0 = off; a fraction in (0, kMaxExploreFraction]. Anything
/// else is an Error naming the variable (the caller keeps exploration off and says that this
/// rank may now decide apart from ranks that read a valid value).
Expected<ExploreSettings> readExploreSettings(const EnvLookup& env);

/// The schedule's inputs besides NCCL's (the budget, the schedule's constants and version, the
/// table's digest) as 8 hex digits of their SHA-256: equal on every rank, or ranks decide apart.
std::string exploreDigest(const ExploreSettings& settings, const std::string& tableSha256);

/// NCCL's choice among a cost table's cells: the first minimum over cells >= 0, -1 when none
/// (research/tuner.md §1.2: topoGetAlgoInfo's search).
int cheapestCell(const float* costs, int numCells) noexcept;

/// What the table says of a (collective, size)'s alternatives (`explore=` lines, written by
/// `nccl-pilot fit`): cells measured clearly slower, or measured enough, are not explored again.
struct ExploreHints {
  uint32_t exclude = 0;  ///< cells (algo * 3 + proto) not to explore
};

/// One communicator's exploration state, allocated at construction; due() and cellFor() are
/// lock-free and allocation-free. NCCL drives a communicator from one thread at a time, so the
/// counters are relaxed loads and stores, not read-modify-writes.
///
/// Which calls may explore: the communicator counts its calls; the next one that may comes a
/// gap of 1 .. kDueGap calls later, the gap a hash of the call count and the communicator id.
/// A call that may not costs a load, a store and a compare.
///
/// Whether it does, and which cell: on a call that may explore, the budget grows by what NCCL's
/// predicted cost of its own pick (the cheapest usable cell) says this call's share of the job
/// is (fraction x kSpend x that cost, per call that may explore scaled by the gap), so that over
/// the job it grows by kSpend x fraction x NCCL's predicted time. The pair's next candidate is
/// charged kMargin x NCCL's cost of it less NCCL's cost of its pick; it runs when the charge
/// fits both the budget and the window (kWindow x the mean cost of the communicator's calls so
/// far), and the charge is spent. Otherwise the call runs the decision and the budget keeps.
///
/// The candidates of a (collective, size) pair are the cells NCCL left usable in the cost table
/// it passed (never one it marked ignored) but the cell the decision runs and the cells the
/// table's `explore=` lines exclude. NCCL's table is the same on every rank; the decision is
/// taken as if regBuff were unknown (the only per-process input a rule may have). They are found
/// at the pair's first call that may explore and kept with its turns in a table of kKeys pairs
/// (a pair whose set of it is full is not explored: a job of more sizes than that calls each
/// too rarely for `fit` to learn from). The pair's explorations take turns over the candidates
/// within the window, in cell order, kRounds rounds at most.
class Explorer {
 public:
  static constexpr unsigned kLogSets = 7;
  static constexpr unsigned kWays = 4;
  static constexpr unsigned kKeys = kWays << kLogSets;

  Explorer(const ExploreSettings& settings, uint64_t commId);

  /// Counts this call and says whether it may explore; never once the communicator captured a
  /// collective into a CUDA graph (graph_capture.h).
  bool due() noexcept {
    const uint64_t n = calls_.load(std::memory_order_relaxed);
    calls_.store(n + 1, std::memory_order_relaxed);
    if (__builtin_expect(n != next_.load(std::memory_order_relaxed), 1)) return false;
    return dueAt(n);
  }

  /// The cell (algo * numProto + proto) a call that may explore of (collType, nBytes) runs, in
  /// NCCL's table `ncclCosts`; -1 = none (the decision runs). `decided()` gives the cell the
  /// decision runs (without regBuff) and `hints()` the table's ExploreHints, both asked only
  /// when the pair's candidates are found.
  template <typename Decided, typename Hints>
  int cellFor(int collType, uint64_t nBytes, const float* ncclCosts, int numCells,
              Decided&& decided, Hints&& hints) noexcept {
    if (numCells <= 0 || numCells > kMaxExploreCells) return -1;
    const int pick = cheapestCell(ncclCosts, numCells);
    if (pick < 0) return -1;
    const double pickCost = ncclCosts[pick];
    // No alternative costs less than NCCL's pick, so none is charged less than
    // (kMargin - 1) x its cost: when that does not fit, the pair is not even looked up.
    if (!fund(pickCost, (ExploreSchedule::kMargin - 1) * pickCost)) return -1;
    Entry* e = entryOf(keyOf(collType, nBytes));
    if (e == nullptr) return -1;  // its set of the turn table is full: not explored
    if ((e->state.load(std::memory_order_relaxed) & kFound) != 0) {
      return nextTurn(*e, 0, ncclCosts, pickCost);
    }
    const uint32_t found = candidates(ncclCosts, numCells, decided()) & ~hints().exclude;
    return nextTurn(*e, found | kFound, ncclCosts, pickCost);
  }

  /// The usable cells of a cost table (bit c: cell c) without `decided` (-1: none).
  static uint32_t candidates(const float* ncclCosts, int numCells, int decided) noexcept;

  uint64_t explorations() const { return explorations_.load(std::memory_order_relaxed); }
  /// The budget left, in microseconds of NCCL's predicted time. For tests.
  double budget() const { return budget_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::atomic<uint64_t> key{0};  ///< 0 = free; else a mix of (collective, size) | 1
    /// candidates (bits 0..20), rounds begun (bits 21..30), kFound (bit 31); the candidates
    /// not yet run in this round (bits 32..52)
    std::atomic<uint64_t> state{0};
  };
  struct alignas(64) Set {  ///< one cache line
    Entry ways[kWays];
  };
  static constexpr uint64_t kFound = uint64_t{1} << 31;
  static constexpr uint32_t kCellMask = (1u << kMaxExploreCells) - 1;
  uint64_t keyOf(int collType, uint64_t nBytes) const noexcept;
  Entry* entryOf(uint64_t key) noexcept;
  /// Adds a call's share of the budget, and its cost to the communicator's mean; whether an
  /// exploration charged `leastCharge` would fit the budget and the window.
  bool fund(double pickCost, double leastCharge) noexcept;
  /// The window: one exploration may cost kWindow x the mean of the `calls` so far (their
  /// predicted costs add up to `sum`), tested without a division.
  static bool inWindow(double charge, double calls, double sum) noexcept {
    return charge * calls <= ExploreSchedule::kWindow * sum;
  }
  /// The pair's next candidate within the window and the budget, or -1; `found` (with kFound)
  /// when its candidates were just found.
  int nextTurn(Entry& e, uint64_t found, const float* costs, double pickCost) noexcept;
  /// Call n may explore: schedules the next one; whether this one may.
  bool dueAt(uint64_t n) noexcept;
  /// The calls from one that may explore to the next after call n: 1 .. kDueGap.
  uint64_t gapAfter(uint64_t n) const noexcept;

  uint64_t commId_;
  double perCall_;  ///< the budget a call that may explore adds per µs of NCCL's predicted cost
  uint64_t commSalt_;
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> next_;  ///< the call that may explore next; UINT64_MAX = never
  std::atomic<double> budget_{0};
  std::atomic<double> costSum_{0};   ///< NCCL's predicted cost of its picks, calls that may explore
  std::atomic<uint64_t> funded_{0};  ///< calls that may explore so far
  std::unique_ptr<Set[]> sets_;
  std::atomic<uint64_t> explorations_{0};
};

}  // namespace pilot::tuner
