// What `fit`, `evaluate` and `report` share: reading nccl-tests outputs with --label rules, or
// the profiler's metrics, and the fit options (--margin, --min-repeats) with the provenance a
// table records.
#pragma once

#include <string>
#include <vector>

#include "pilot/calibration/fit.h"
#include "pilot/calibration/measurements.h"
#include "pilot/core/result.h"
#include "pilot/tuner/table.h"

namespace CLI {
class App;
}

namespace pilot::cli {

struct FitInputArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> labels;
  double margin = calibration::kDefaultMargin;
  double callsMargin = calibration::kDefaultCallsMargin;
  int minRepeats = calibration::kDefaultMinRepeats;
};

/// INPUT... --label --margin --min-repeats.
void addFitInputOptions(CLI::App* sub, FitInputArgs& args);

/// Usage errors before anything is read: a malformed --label, INPUTs that mix profiler metrics
/// with nccl-tests sweeps (`holdout`, when given, is checked the same way on its own).
Status checkInputs(const FitInputArgs& args, const std::vector<std::string>& holdout = {});

/// What fit, evaluate and report read: nccl-tests sweeps (the runs kept for --evaluate) or the
/// profiler's metrics, both summarised into Measurements.
struct LoadedInputs {
  calibration::Measurements measured;  ///< notes hold the input-level problems
  calibration::Dataset runs;           ///< sweeps only
  bool metrics = false;                ///< INPUTs are profiler metrics (.jsonl, directories)
};

/// Loads every input; input-level problems and excluded runs are printed to stderr. An error
/// when a --label is malformed or nothing is usable (no run, no calibration line).
Expected<LoadedInputs> loadFitInputs(const FitInputArgs& args);

/// Loads other inputs (a held-out sweep or job) with the same --label rules.
Expected<LoadedInputs> loadInputs(const std::vector<std::string>& inputs, const FitInputArgs& args);

/// Reads a tuning table for scoring: an unreadable file is an error, a skipped line a warning
/// on stderr.
Expected<tuner::TuningTable> loadTableForScoring(const std::string& path);

/// Fit options with the provenance: tool version, inputs, and the date (SOURCE_DATE_EPOCH
/// when set, for reproducible tables; else now).
calibration::FitOptions fitOptions(const FitInputArgs& args);

}  // namespace pilot::cli
