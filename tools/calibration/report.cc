// `nccl-pilot report`: the evidence behind a table as one self-contained HTML page, plus
// gnuplot charts when gnuplot is installed and a summary on stdout.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "calibration/inputs.h"
#include "cli/commands.h"
#include "pilot/calibration/evaluate.h"
#include "pilot/calibration/fit.h"
#include "pilot/calibration/report.h"
#include "pilot/core/file.h"
#include "pilot/tuner/table.h"
#include "pilot/version.h"

namespace pilot::cli {
namespace {

struct ReportArgs {
  FitInputArgs in;
  std::string output;
  std::string table;
  std::string title;
  std::vector<std::string> holdout;
  bool noGnuplot = false;
};

int runReport(const ReportArgs& a) {
  if (Status s = checkInputs(a.in, a.holdout); !s.ok()) return reportError(s.error(), kExitUsage);
  auto data = loadFitInputs(a.in);
  if (!data.ok()) return reportError(data.error());
  const calibration::FitOptions options = fitOptions(a.in);
  const calibration::FitResult fit = calibration::fit(data->measured, options);
  for (const std::string& note : fit.notes) std::cerr << "note: " << note << "\n";

  calibration::ReportChoices choices;
  tuner::TuningTable table;  // what the report's choices come from, for --holdout
  if (a.table.empty()) {
    choices = calibration::fitChoices(fit);
    table = tuner::parseTable(calibration::tableText(fit), "fitted").table;
  } else {
    auto loaded = loadTableForScoring(a.table);
    if (!loaded.ok()) return reportError(loaded.error());
    table = std::move(*loaded);
    choices = calibration::tableChoices(fit, table, a.table);
  }

  calibration::ReportOptions ro;
  if (!a.holdout.empty()) {
    auto heldOut = loadInputs(a.holdout, a.in);
    if (!heldOut.ok()) return reportError("--holdout: " + heldOut.error());
    ro.scores = calibration::HeldOutScores{
        a.holdout, calibration::scoreTable(table, data->measured, options),
        calibration::scoreTable(table, heldOut->measured, options)};
  }
  if (!a.title.empty()) ro.title = a.title;
  ro.inputs = a.in.inputs;
  ro.toolVersion = pilot::kVersion;
  ro.date = options.date;
  if (Status s = writeFile(a.output, calibration::reportHtml(fit, choices, ro)); !s.ok()) {
    return reportError(s.error());
  }

  std::cout << calibration::reportText(fit, choices);
  if (ro.scores) {
    std::cout << "\n" << calibration::scoreComparisonText(ro.scores->inSample, ro.scores->heldOut);
  }
  std::cout << "wrote " << a.output << "\n";
  if (!a.noGnuplot) {
    std::string stem = a.output;
    if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".html") == 0) {
      stem.resize(stem.size() - 5);
    }
    const calibration::GnuplotOutput g = calibration::plotWithGnuplot(fit, choices, stem);
    if (!g.error.empty()) std::cerr << "note: " << g.error << "; the HTML page is complete\n";
    if (!g.files.empty()) {
      std::cout << "gnuplot:";
      for (const std::string& file : g.files) std::cout << " " << file;
      std::cout << "\n";
    }
  }
  return 0;
}

}  // namespace

Command addReportCommand(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* sub = app.add_subcommand(
      "report",
      "Write an HTML page with the charts of a sweep (or of jobs' metrics), the chosen "
      "configuration per size band and the gain over NCCL's default");
  addFitInputOptions(sub, args->in);
  sub->add_option("-o,--output", args->output, "HTML file to write")->required();
  sub->add_option("--table", args->table,
                  "Show what this tuning table picks per size instead of fitting one now");
  sub->add_option("--title", args->title, "Page title");
  sub->add_option("--holdout", args->holdout,
                  "Sweeps or jobs' metrics the table was not fitted on (same --label rules): show "
                  "its scores there beside the in-sample ones. Repeatable")
      ->allow_extra_args(false);
  sub->add_flag("--no-gnuplot", args->noGnuplot,
                "Skip the gnuplot SVG/PNG charts even when gnuplot is installed");
  return {sub, [args] { return runReport(*args); }};
}

}  // namespace pilot::cli
