// How a fitted table does on runs it did not see. `fit --evaluate` splits the repeats: in fold
// j, run j of every configuration measured more than once is held out, the table is fitted on
// the rest and scored on the held-out runs (leave one repeat out); configurations measured once
// cannot be split, their one run is used for both. `evaluate --table` and `fit --holdout`
// score a table on whole sweeps it was not fitted on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pilot/calibration/fit.h"
#include "pilot/tuner/table.h"

namespace pilot::calibration {

/// One measured size, over the folds that scored it.
struct SizeScore {
  ShapeKey shape;
  uint64_t size = 0;
  std::string chosen;  ///< the fitted choice ("default", "ring"); "a/b" when folds differ
  std::string best;    ///< the fastest on held-out runs (most folds)
  /// Geometric means over folds of held-out times, microseconds.
  double chosenUs = 0, bestUs = 0, defaultUs = 0;
  /// Geometric means over folds of best / chosen, best / default and default / chosen.
  double oracleFraction = 1, defaultOracleFraction = 1, speedup = 1;
  double noise = 0;     ///< the run-to-run noise at this size, from every run (noiseAt)
  bool slower = false;  ///< chosen slower than the default by more than the noise
  int folds = 0;
};

struct Evaluation {
  std::vector<SizeScore> sizes;
  int folds = 0;
  bool inSample = false;  ///< no configuration had two runs: fitted and scored on all data
  /// Geometric means over every scored size.
  double oracleFraction = 1, defaultOracleFraction = 1, speedup = 1;
  int slowerSizes = 0;
  int worst = -1;  ///< index into sizes of the lowest speedup, -1 when none
  std::vector<std::string> notes;

  /// The done criterion: at least NCCL's oracle fraction, and never slower beyond noise.
  bool meetsCriterion() const {
    return oracleFraction >= defaultOracleFraction - 1e-12 && slowerSizes == 0;
  }
};

Evaluation evaluate(const Dataset& data, const FitOptions& options);

/// The aligned text report, one block per shape and a summary.
std::string evaluationText(const Evaluation& e);

nlohmann::ordered_json evaluationJson(const Evaluation& e);

/// Geometric mean of positive values; 1 for an empty list.
double geomean(const std::vector<double>& values);

// ---- Scoring a table on sweeps (`nccl-pilot evaluate --table`, `fit --holdout`) ----

/// One measured size of a scored sweep: what the table picks there, as the tuner would, and
/// how the sweep measured that choice against NCCL's default and the fastest configuration.
struct TableSizeScore {
  ShapeKey shape;
  uint64_t size = 0;
  int ruleLine = 0;    ///< the table line that applies; 0 = none (NCCL's default)
  std::string chosen;  ///< the measured configuration the rule makes NCCL run, or "default"
  bool scored = true;  ///< false: the rule picks a configuration the sweep did not measure
  double chosenUs = 0, defaultUs = 0, bestUs = 0;  ///< medians over the sweep's repeats
  std::string best;                                ///< fastest expressible, or "default"
  double speedup = 1;                              ///< default / chosen
  double fraction = 1;                             ///< best / chosen
  double defaultFraction = 1;                      ///< best / default
  double noise = 0;     ///< the sweep's own noise at this size (as fit would see it)
  bool slower = false;  ///< chosen slower than the default by more than the noise
};

struct TableScore {
  std::vector<TableSizeScore> sizes;
  int scored = 0, unscored = 0;
  /// Geometric means over the scored sizes.
  double fraction = 1, defaultFraction = 1, speedup = 1;
  /// Share of the default-to-fastest gap the table closes: (fraction - defaultFraction) /
  /// (1 - defaultFraction); NaN when the default was the fastest everywhere (no gap).
  double gapCaptured = 0;
  int slowerSizes = 0;
  int worst = -1;  ///< index into sizes of the lowest scored speedup, -1 when none
  std::vector<std::string> notes;
};

/// Scores `table` on the measured sizes of every shape of `data` that has a default. The noise
/// behind `slower` is the sweep's own, as fit (with `options`) would measure or estimate it.
TableScore scoreTable(const tuner::TuningTable& table, const Dataset& data,
                      const FitOptions& options);
/// The same on measurements already summarised (the profiler's metrics: summarizeMetrics).
TableScore scoreTable(const tuner::TuningTable& table, const Measurements& data,
                      const FitOptions& options);

/// Per shape an aligned row per size, then the summary.
std::string tableScoreText(const TableScore& score);

/// The summary lines only: fractions, gap, speedup, sizes slower, worst size.
std::string tableScoreSummary(const TableScore& score);

/// In-sample and held-out summaries side by side.
std::string scoreComparisonText(const TableScore& inSample, const TableScore& heldOut);

nlohmann::ordered_json tableScoreJson(const TableScore& score);

}  // namespace pilot::calibration
