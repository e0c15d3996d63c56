// nccl-pilot report: the evidence behind a table as one self-contained HTML page (inline SVG,
// no scripts or styles fetched), a text summary, and optionally gnuplot charts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pilot/calibration/evaluate.h"
#include "pilot/calibration/fit.h"
#include "pilot/tuner/table.h"

namespace pilot::calibration {

/// The report's table scored on its own inputs and on sweeps it was not fitted on.
struct HeldOutScores {
  std::vector<std::string> inputs;  ///< the held-out sweeps
  TableScore inSample, heldOut;
};

struct ReportOptions {
  std::string title = "nccl-pilot calibration report";
  std::vector<std::string> inputs;
  std::string toolVersion;
  std::string date;                     ///< "" = now, UTC
  std::optional<HeldOutScores> scores;  ///< report --holdout
};

/// Which choices the report shows: the fit's own, or a given table's.
struct ReportChoices {
  std::string source;                    ///< "fit" or the table's path
  std::vector<Decision> decisions;       ///< parallel to FitResult::decisions
  std::vector<std::vector<Band>> bands;  ///< per shape, parallel to FitResult::shapes
  std::vector<std::string> notes;
};

/// A choice of a table rule that names no measured configuration: Band::series and
/// Decision::chosen hold kUnmeasuredRule - (rule index), Decision::gain is NaN.
constexpr int kUnmeasuredRule = -2;

ReportChoices fitChoices(const FitResult& fit);

/// What `table` picks at each measured size, as the tuner would (first matching rule, with
/// numPipeOps 1 and unregistered buffers, as nccl-tests runs), mapped back to the measured
/// configuration that forced the same thing.
ReportChoices tableChoices(const FitResult& fit, const tuner::TuningTable& table,
                           const std::string& path);

std::string reportHtml(const FitResult& fit, const ReportChoices& choices,
                       const ReportOptions& options);

/// The summary printed on stdout.
std::string reportText(const FitResult& fit, const ReportChoices& choices);

struct GnuplotOutput {
  bool found = false;  ///< gnuplot is on PATH
  std::vector<std::string> files;
  std::string error;  ///< gnuplot ran and failed
};

/// With gnuplot on PATH: per shape, time and bus-bandwidth charts as `<stem>-<n>-time.svg`,
/// `-busbw.svg` and `.png`. Without it: found = false and nothing is written.
GnuplotOutput plotWithGnuplot(const FitResult& fit, const ReportChoices& choices,
                              const std::string& stem);

}  // namespace pilot::calibration
