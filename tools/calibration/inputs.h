// What `fit` and `report` share: reading nccl-tests outputs with --label rules, and the fit
// options (--margin, --min-repeats) with the provenance a table records.
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
  int minRepeats = calibration::kDefaultMinRepeats;
};

/// INPUT... --label --margin --min-repeats.
void addFitInputOptions(CLI::App* sub, FitInputArgs& args);

/// Checks the --label rules before anything is read (a bad one is a usage error).
Status checkLabels(const FitInputArgs& args);

/// Loads every input; input-level problems and excluded runs are printed to stderr. An error
/// when a --label is malformed or no run is usable.
Expected<calibration::Dataset> loadFitInputs(const FitInputArgs& args);

/// Loads other inputs (a held-out sweep) with the same --label rules.
Expected<calibration::Dataset> loadInputs(const std::vector<std::string>& inputs,
                                          const FitInputArgs& args);

/// Reads a tuning table for scoring: an unreadable file is an error, a skipped line a warning
/// on stderr.
Expected<tuner::TuningTable> loadTableForScoring(const std::string& path);

/// Fit options with the provenance: tool version, inputs, and the date (SOURCE_DATE_EPOCH
/// when set, for reproducible tables; else now).
calibration::FitOptions fitOptions(const FitInputArgs& args);

}  // namespace pilot::cli
