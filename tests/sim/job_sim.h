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
//   - The cost table NCCL passes to getCollInfo comes from one of two models (CostModel):
//     Nccl (applyNcclModel, issue 29): NCCL's own cost model (nccl_model.h) for the machine's
//       shape. Per size, the table holds the model's cost of each cell the sweep measured and
//       NCCL enables, plus the model's pick (which NCCL runs even where the sweep never forced
//       it: PAT); every other cell is -1. NCCL's pick is the model's pick, and it runs in the
//       measured default's time (NCCL's default IS the model's pick on that machine); the
//       twin stays in `twinCell`, to measure how often the model and the sweep agree. Cells
//       the model disables never run and are never the fastest.
//     Truth (what loadTruth returns): every measured cell costs its truth time in µs, except
//       NCCL's pick (the twin), which costs 0.95 x the fastest truth, so that NCCL's minimum
//       search (cells >= 0, strict <, lowest index on ties) picks it without a plugin.
//
// The job: `calls` iterations, each running every size once (a training step), in the same
// order on every rank. Per call: cost table -> getCollInfo -> NCCL's minimum search -> the cell
// that runs -> its truth time x noise (lognormal, median 1, sigma 0.12) x 3 for 1% stragglers.
// The noise comes from an RNG seeded per rank: it is rank-local and reaches the profiler only
// (Coll start/stop, KernelCh events whose longest channel takes the call's time); nothing the
// tuner sees depends on it. Every rank writes its decisions and times (rank<R>.decisions);
// runJob reads them back.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl_model.h"

namespace sim {

constexpr int kNumAlgo = 7;  ///< NCCL 2.23+: Tree Ring CollNetDirect CollNetChain NVLS NVLSTree PAT
constexpr int kNumProto = 3;  ///< LL LL128 Simple
constexpr int kNumCells = kNumAlgo * kNumProto;

/// "Ring/LL", "none" for -1.
std::string cellName(int cell);

/// Where the cost table NCCL passes comes from (see the header comment).
enum class CostModel { Nccl, Truth };

struct SizeTruth {
  uint64_t bytes = 0;
  double forcedUs[kNumCells];  ///< the forced time of each cell, -1 = never measured
  double defaultUs = 0;        ///< NCCL's default's time
  int ncclCell = -1;           ///< NCCL's pick: the twin (Truth) or the model's pick (Nccl)
  int twinCell = -1;           ///< the forced cell whose time is nearest the default's
  CostModel costModel = CostModel::Truth;
  /// Nccl: NCCL's model of every cell, µs, -1 = NCCL disables it (whether measured or not).
  std::array<float, kNumCells> modelUs{};
  /// The time of `cell` when it runs: the default's for NCCL's pick, else its forced time;
  /// -1 = never measured, or (Nccl) disabled by NCCL.
  double runUs(int cell) const;
  double fastestUs() const;
  int fastestCell() const;  ///< over the cells that can run (NCCL enables them, Nccl)
  /// The cost table NCCL passes (see the header comment).
  std::vector<float> costs() const;
};

struct Truth {
  std::string source;
  std::string collective;
  int nodes = 0, ranks = 0;
  std::vector<SizeTruth> sizes;  ///< ascending; sizes without a default or a cell are left out
  CostModel costModel = CostModel::Truth;
  NcclShape shape;  ///< Nccl: the machine the model ran for
};

/// Label rules naming the configurations of both published sweeps (g5: default, ring_ll ..
/// tree_simple; L40S: iteration_*, ring, tree, auto_*).
const std::vector<std::string>& defaultLabels();

/// Reads `path` for `collective`; "" on success, else why not.
std::string loadTruth(const std::string& path, const std::string& collective, Truth& out,
                      const std::vector<std::string>& labels = defaultLabels());

/// Switches `truth` to CostModel::Nccl: NCCL's model for `shape` (its nodes and ranks are the
/// sweep's) per size (see the header comment). "" on success, else why not (the truth is then
/// unchanged).
std::string applyNcclModel(Truth& truth, const NcclShape& shape);

/// One change of the model's pick between two adjacent sizes, and where the default's twin
/// shows it.
struct ModelSwitch {
  uint64_t bytes = 0;  ///< the first size of the new pick
  int from = -1, to = -1;
  /// The sweep can show it: the protocol changes, or the algorithm changes between two cells
  /// the sweep forced. An algorithm change to or from a cell never forced (PAT) is not.
  bool observable = false;
  /// Size steps from `bytes` to the nearest place where the enabled twin makes the same change
  /// (old half below, new half from there on, in what changes); -1 = nowhere.
  int twinSteps = -1;
  uint64_t twinBytes = 0;  ///< that place
};

/// The model (CostModel::Nccl) against the measured default, size by size. The "enabled twin"
/// is the twin among the cells NCCL enables (NCCL cannot have run a cell it disables; a
/// disabled cell's forced time is still measured, as NCCL_PROTO overrides the path check).
struct ModelAgreement {
  int sizes = 0;
  int comparable = 0;            ///< sizes where the sweep forced the model's pick
  int agreeTwin = 0;             ///< of those, pick == twin
  int agreeEnabledTwin = 0;      ///< pick == enabled twin
  int agreeProtocol = 0;         ///< protocol of the pick == that of the enabled twin (all sizes)
  std::vector<int> enabledTwin;  ///< per size
  std::vector<ModelSwitch> switches;    ///< the model's
  std::vector<uint64_t> twinSwitches;   ///< sizes where the enabled twin changes
  std::vector<uint64_t> disagreements;  ///< comparable sizes with pick != enabled twin
};
ModelAgreement compareModel(const Truth& truth);

/// The `pilot_job_sim model` report: per size the model's pick, the twins, the fastest enabled
/// cell, each cell's predicted and measured µs; then the switch points and the agreement.
std::string describeModel(const Truth& truth);

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

/// The job of `options` again with exploration off and no profiler, in options.outDir/shadow:
/// what each call would have run (compareRuns' baseline).
JobResult runShadow(const Truth& truth, const JobOptions& options);

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
  /// A job calling every size alike: its time with the table, with NCCL's picks, with the
  /// fastest cell NCCL enables (sums over sizes of one call each).
  double totalTableUs = 0, totalNcclUs = 0, totalFastestUs = 0;
};

/// Drives the real tuner with `table` (exploration off, one process, one call per size) and
/// scores what it picks against the truth.
Score scoreTable(const Truth& truth, const JobOptions& base, const std::string& table);

/// The in-job calibration loop: job 1 explores around NCCL (profiler on), `nccl-pilot fit` on
/// its metrics; each later job runs the last table and explores what it leaves unknown, and
/// fit reads every job's metrics so far.
struct LoopOptions {
  int jobs = 1;
  std::string explore = "0.05";  ///< NCCL_PILOT_TUNER_EXPLORE of every job
  std::string fitCommand;        ///< the nccl-pilot binary (its `fit` subcommand is run)
  std::string fitFlags;          ///< extra flags for fit
};

struct LoopJob {
  std::string error;       ///< "" = it ran, fit wrote a table, the table was scored
  JobResult job;           ///< rank 0's calls (the metrics are in outDir/jobN/metrics)
  ExplorationStats stats;  ///< against the same job with exploration off
  Score score;             ///< the table fitted after this job
  std::string table;       ///< its path
  std::string fitOutput;
};

/// Runs `options.jobs` jobs of the loop under base.outDir (job1, job2, ...).
std::vector<LoopJob> runLoop(const Truth& truth, const JobOptions& base,
                             const LoopOptions& options);

/// Human-readable lines of the figures (for logs and docs/calibration.md).
std::string describe(const ExplorationStats& s);
std::string describe(const Score& s);
/// One line per job of the loop: job time against NCCL alone, explorations, table score.
std::string describe(const LoopJob& j, int number);

}  // namespace sim
