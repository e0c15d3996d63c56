// fit --evaluate: how a fitted table would have done on runs it did not see. The repeats are
// split: in fold j, run j of every configuration measured more than once is held out, the
// table is fitted on the rest and scored on the held-out runs (leave one repeat out).
// Configurations measured once cannot be split: their one run is used for both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pilot/calibration/fit.h"

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

}  // namespace pilot::calibration
