// Executing a sweep plan: one process (launcher + nccl-tests) per planned run, output to
// PLAN_DIR/runs/<id>.log (and <id>.json with -J), a record per run in PLAN_DIR/state.json.
//
// Resumable: a run recorded `done` whose log (and JSON, when one was written) still exists is
// skipped. A failed run is recorded with its exit status and the tail of its log and is run
// again only with retryFailed. Ctrl-C (SIGINT), SIGTERM and SIGHUP stop the running process
// groups, record those runs as interrupted (run again next time) and save the state before
// returning. One `sweep run` per directory at a time (a lock file says so).
#pragma once

#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pilot/core/result.h"

namespace pilot::calibration {

enum class RunStatus { Pending, Running, Done, Failed, Interrupted };
const char* runStatusName(RunStatus status);

struct RunRecord {
  RunStatus status = RunStatus::Pending;
  int exitCode = -1;  ///< -1 = none (killed by a signal, or never started)
  int signal = 0;     ///< the signal that ended it, 0 = none
  double seconds = 0;
  int attempts = 0;
  bool json = false;              ///< it was run with -J
  std::string message;            ///< why it failed, or a note
  std::vector<std::string> tail;  ///< last lines of a failed run's log
  std::string finished;           ///< UTC time, ISO 8601
};

struct SweepState {
  std::map<std::string, RunRecord> runs;  ///< by run id
};

/// DIR/state.json; an empty state when the file does not exist.
Expected<SweepState> readState(const std::string& dir);
Status writeState(const std::string& dir, const SweepState& state);

struct RunOptions {
  int jobs = 1;                 ///< runs at once; keep 1 unless they use disjoint resources
  bool dryRun = false;          ///< say what would run, run nothing
  bool retryFailed = false;     ///< run failed runs again
  double timeoutSeconds = 0;    ///< per run; 0 = none. A run past it is stopped and failed
  double killGraceSeconds = 5;  ///< SIGTERM, then this long, then SIGKILL
  std::string testsDir;         ///< overrides the plan's binaries' directory
  bool progressBar = false;     ///< redraw one status line (a terminal) instead of plain lines
  std::ostream* out = nullptr;  ///< progress and notes; nullptr = std::cerr
};

struct RunSummary {
  int planned = 0;
  int skipped = 0;       ///< done before, left alone
  int done = 0;          ///< completed now
  int failed = 0;        ///< failed now, or failed before and not retried
  int interrupted = 0;   ///< stopped by a signal now
  bool stopped = false;  ///< a signal ended the sweep early
};

/// Runs the plan in DIR. Errors are about the sweep itself (no manifest, locked directory);
/// run failures are in the summary and state.json.
Expected<RunSummary> runSweep(const std::string& dir, const RunOptions& options);

/// `program` in `testsDir`, else on PATH; "" when not found or not executable.
std::string findTestBinary(const std::string& testsDir, const std::string& program);

/// Whether the binary takes -J (nccl-tests 2.18.5+): runs `binary --help` once (5 s at most)
/// and looks for "output_file". nullopt when it could not be run.
std::optional<bool> probeJsonSupport(const std::string& binary);

}  // namespace pilot::calibration
