// A calibration sweep: collectives x forcing configurations x node counts x repeats, each one
// nccl-tests invocation through the cluster's launcher. The plan is written to a directory as
// manifest.json (what `sweep run` executes and the loader reads back) and commands.sh (the
// same commands for reading or running by hand). docs/sweep.md describes both.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pilot/calibration/measurements.h"
#include "pilot/core/result.h"

namespace pilot::calibration {

enum class Launcher { Local, Srun, Mpirun };
const char* launcherName(Launcher launcher);
std::optional<Launcher> parseLauncher(std::string_view name);

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct PlanOptions {
  std::vector<std::string> collectives = {"allreduce", "allgather", "reducescatter"};
  std::vector<Config> configs;  ///< empty = defaultSweepConfigs()
  /// Runs of each forced configuration, and of NCCL's default. The default's repeats measure
  /// the noise every gain must beat (docs/calibration.md); a forced configuration's repeats
  /// let a gain be checked in every run. See budgetNotes for what fewer cost.
  int repeats = 2;
  int defaultRepeats = 3;
  std::vector<int> nodes = {1};
  int gpusPerNode = 0;  ///< ranks per node; required
  uint64_t minBytes = 8;
  uint64_t maxBytes = uint64_t{16} << 30;
  int stepFactor = 2;
  int iters = 20;
  int warmup = 5;
  int check = 1;  ///< nccl-tests -c: validation, so wrong results fail the run
  Launcher launcher = Launcher::Local;
  std::string testsDir;            ///< where the *_perf binaries are; "" = PATH
  std::vector<std::string> hosts;  ///< mpirun: -H host:slots for the first N; empty = -npernode
  std::vector<std::string> launcherArgs;  ///< appended to srun/mpirun's own options
  std::vector<std::string> testArgs;      ///< appended to nccl-tests' options
  EnvList env;                            ///< set for every run (not the forcing variables)
  bool jsonOutput = false;  ///< the binaries take -J (probeJsonSupport); written into commands
  std::string setup;        ///< free text recorded as every run's Run::setup
};

struct PlannedRun {
  std::string id;  ///< "0007-allreduce-n2-ring-r1": order, collective, nodes, label, repeat
  std::string collective;
  int nodes = 0;
  int ranks = 0;
  Config config;
  int repeat = 0;
  std::string program;                    ///< "all_reduce_perf"
  std::vector<std::string> launcherArgv;  ///< "srun --nodes=2 ..."; empty for local
  std::string binary;                     ///< as planned: "<tests-dir>/all_reduce_perf" or the name
  std::vector<std::string> testArgv;      ///< nccl-tests options, without -J
  EnvList env;                            ///< common env, then the configuration's variables
  std::string log;                        ///< "runs/<id>.log", relative to the plan directory
  std::string json;                       ///< "runs/<id>.json"
};

struct SweepPlan {
  PlanOptions options;
  std::vector<PlannedRun> runs;
  std::vector<std::string> notes;  ///< combinations left out, and why
};

/// default, NCCL_ALGO=Ring, NCCL_ALGO=Tree, NCCL_PROTO=LL, NCCL_PROTO=LL128, NCCL_PROTO=Simple.
std::vector<Config> defaultSweepConfigs();

/// The repeats fit needs for its strongest evidence: the default 3 times, forced
/// configurations twice.
constexpr int kBudgetDefaultRepeats = 3;
constexpr int kBudgetForcedRepeats = 2;

/// What a plan's repeats cost in evidence when they fall short of the budget above, one line
/// each (empty when they meet it).
std::vector<std::string> budgetNotes(const PlanOptions& options);

/// Checks the options and lays out the runs: repeats outermost, then node counts,
/// collectives and configurations, so a slow drift of the machine spreads over every
/// configuration instead of biasing the ones measured last. A single forced algorithm NCCL
/// does not have for a collective (Tree for AllGather) is left out with a note.
Expected<SweepPlan> makePlan(const PlanOptions& options);

/// "allreduce" -> "all_reduce_perf".
std::string programFor(std::string_view collective);

/// The whole command: launcher, binary (`binary` overrides the planned one when not empty),
/// options, and "-J <json>" when `withJson`.
std::vector<std::string> runArgv(const PlannedRun& run, bool withJson,
                                 const std::string& binary = "");

/// One POSIX sh line: "VAR=value ... command ... > log 2>&1", quoted as needed.
std::string shellCommand(const PlannedRun& run, bool withJson);

/// Single-quotes a word for sh when it has anything but safe characters.
std::string shellQuote(std::string_view word);

/// manifest.json text, and back.
std::string formatManifest(const SweepPlan& plan);
Expected<SweepPlan> parseManifest(std::string_view text);

/// commands.sh text.
std::string formatCommands(const SweepPlan& plan);

/// Creates DIR and DIR/runs and writes manifest.json and commands.sh. Refuses a directory
/// that already holds a manifest unless `overwrite` (its runs/ and state.json are kept).
Status writePlan(const SweepPlan& plan, const std::string& dir, bool overwrite);

/// DIR/manifest.json.
Expected<SweepPlan> readPlan(const std::string& dir);

}  // namespace pilot::calibration
