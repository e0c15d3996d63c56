// A job simulator for the tests (issue 20, item 5): a cluster replayed from a sweep taken as
// truth, its ranks separate processes, each driving the BUILT library's real tuner
// (ncclTunerPlugin_v5, through tests/plugin's fake NCCL) and real profiler (ncclProfiler_v5,
// through tests/profiler's host) the way NCCL 2.28 does.
//
// The truth (one collective of one sweep, nccl-tests text parsed by calibration/):
//   - Per size, each forced configuration is one cell (algorithm x protocol) of NCCL's cost
//     table, timed by the sweep: `ring_ll` .. `tree_simple` force both. A configuration that
//     forces only one of them (`ring`, `auto_ll`, ...: NCCL chose the other) becomes the cell
//     whose other half is that of the configuration forcing the other variable whose time is
//     nearest (log distance); two configurations landing on one cell are two measurements of
//     it (geometric mean).
//   - NCCL's own pick at a size is the cell of the "twin": the forced cell whose time is
//     nearest the default's (log distance). When that cell runs, it takes the default's time
//     (median over the default's runs); any other cell takes its forced time. Cells the sweep
//     never measured are IGNORE (-1) in the cost table.
//   - The cost table NCCL passes to getCollInfo: every measured cell costs its truth time in
//     µs, except NCCL's pick, which costs 0.95 x the fastest truth, so that NCCL's minimum
//     search (cells >= 0, strict <, lowest index on ties) picks it without a plugin.
//
// The job: `calls` iterations, each running every size once (a training step), in the same
// order on every rank. Per call: cost table -> getCollInfo -> NCCL's minimum search -> the cell
// that runs -> its truth time x noise (lognormal, median 1, sigma 0.12) x 3 for 1% stragglers.
// The noise comes from an RNG seeded per rank: it is rank-local and reaches the profiler only
// (Coll start/stop, KernelCh events whose longest channel takes the call's time); nothing the
// tuner sees depends on it. Every rank writes its decisions and times (rank<R>.decisions);
// runJob reads them back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sim {

constexpr int kNumAlgo = 7;  ///< NCCL 2.23+: Tree Ring CollNetDirect CollNetChain NVLS NVLSTree PAT
constexpr int kNumProto = 3;  ///< LL LL128 Simple
constexpr int kNumCells = kNumAlgo * kNumProto;

/// "Ring/LL", "none" for -1.
std::string cellName(int cell);

struct SizeTruth {
  uint64_t bytes = 0;
  double forcedUs[kNumCells];  ///< the forced time of each cell, -1 = never measured
  double defaultUs = 0;        ///< NCCL's default's time
  int ncclCell = -1;           ///< NCCL's pick: the twin of the default
  /// The time of `cell` when it runs: the default's for NCCL's pick, else its forced time;
  /// -1 = never measured.
  double runUs(int cell) const;
  double fastestUs() const;
  int fastestCell() const;
  /// The cost table NCCL passes (see the header comment).
  std::vector<float> costs() const;
};

struct Truth {
  std::string source;
  std::string collective;
  int nodes = 0, ranks = 0;
  std::vector<SizeTruth> sizes;  ///< ascending; sizes without a default or a cell are left out
};

/// Label rules naming the configurations of both published sweeps (g5: default, ring_ll ..
/// tree_simple; L40S: iteration_*, ring, tree, auto_*).
const std::vector<std::string>& defaultLabels();

/// Reads `path` for `collective`; "" on success, else why not.
std::string loadTruth(const std::string& path, const std::string& collective, Truth& out,
                      const std::vector<std::string>& labels = defaultLabels());

struct JobOptions {
  std::string tunerModule;     ///< the built libnccl-tuner-pilot.so
  std::string profilerModule;  ///< the built libnccl-profiler-pilot.so ("" = no profiler)
  std::string outDir;          ///< rank<R>.decisions, rank<R>.log
  int calls = 400;             ///< per size
  int processes = 0;           ///< rank processes; 0 = the sweep's ranks
  uint64_t seed = 1;
  double sigma = 0.12;  ///< lognormal noise per call
  double stragglerShare = 0.01;
  double stragglerFactor = 3.0;
  // The library's settings (unset when empty).
  std::string table;       ///< NCCL_PILOT_TUNER_TABLE
  std::string explore;     ///< NCCL_PILOT_TUNER_EXPLORE
  std::string metricsDir;  ///< NCCL_PILOT_METRICS_DIR (the profiler is driven only with it)
};

/// One call as one rank ran it.
struct CallRecord {
  int iteration = 0;
  int size = 0;   ///< index into Truth::sizes
  int cell = -1;  ///< what ran
  int nChannels = 0;
  double truthUs = 0, noisyUs = 0;
};

struct RankResult {
  std::vector<CallRecord> calls;
  bool exploreLogged = false;  ///< the tuner logged a line about exploration at init
  std::vector<std::string> log;
};

struct JobResult {
  std::string error;  ///< "" = every rank ran and reported
  std::vector<RankResult> ranks;
  /// The first call where two ranks decided apart ("" = none): "call N: rank 0 X, rank R Y".
  std::string divergence;
  double jobUs = 0;       ///< rank 0: sum of the truth times of what ran
  double jobNoisyUs = 0;  ///< rank 0: with noise and stragglers
  double ncclUs = 0;      ///< the same calls with NCCL's pick every time
};

/// Forks one process per rank, runs the job, reads the ranks' files back.
JobResult runJob(const Truth& truth, const JobOptions& options);

/// What an exploring job did, against the same job with exploration off (`baseline`: same
/// truth, table and calls): a call explores when its cell differs from the baseline's.
struct ExplorationStats {
  int calls = 0, explorations = 0;
  std::vector<int> callsPerSize, explorationsPerSize;
  std::vector<int> alternativesPerSize;  ///< distinct cells other than the baseline's tried
  double share() const { return calls ? static_cast<double>(explorations) / calls : 0; }
  double maxSizeShare() const;
  /// Sizes where at least `n` alternatives were tried.
  int sizesWithAlternatives(int n) const;
};
ExplorationStats compareRuns(const Truth& truth, const JobResult& job, const JobResult& baseline);

struct SizeScore {
  uint64_t bytes = 0;
  int ncclCell = -1, tableCell = -1, fastestCell = -1;
  double ncclUs = 0, tableUs = 0, fastestUs = 0;
};

struct Score {
  std::string error;
  std::vector<SizeScore> sizes;
  double effNccl = 0, effTable = 0;  ///< geometric mean over sizes of fastest / time
  double captured = 0;               ///< (effTable - effNccl) / (1 - effNccl); 1 when no gap
  double worst = 0;                  ///< max over sizes of tableUs / ncclUs
  uint64_t worstBytes = 0;
};

/// Drives the real tuner with `table` (exploration off, one process, one call per size) and
/// scores what it picks against the truth.
Score scoreTable(const Truth& truth, const JobOptions& base, const std::string& table);

/// Human-readable lines of the figures (for logs and docs/calibration.md).
std::string describe(const ExplorationStats& s);
std::string describe(const Score& s);

}  // namespace sim
