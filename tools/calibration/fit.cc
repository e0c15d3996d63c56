// `nccl-pilot fit`: a tuning table from nccl-tests sweeps, overriding NCCL only where the
// measured gain beats the noise (docs/calibration.md); `--evaluate` scores that procedure on
// repeats it did not see, `--holdout` the written table on sweeps it did not see.
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

namespace pilot::cli {
namespace {

struct FitArgs {
  FitInputArgs in;
  std::string output;
  std::string json;
  bool evaluate = false;
  std::vector<std::string> holdout;
  std::string nccl, fabric;
};

int runFit(const FitArgs& a) {
  if (a.output.empty() && !a.evaluate) {
    return reportError("-o TABLE is required unless --evaluate is given", kExitUsage);
  }
  if (!a.holdout.empty() && a.output.empty()) {
    return reportError("--holdout scores the fitted table: give -o TABLE", kExitUsage);
  }
  if (Status s = checkInputs(a.in, a.holdout); !s.ok()) return reportError(s.error(), kExitUsage);
  calibration::FitOptions options = fitOptions(a.in);
  options.nccl = a.nccl;
  options.fabric = a.fabric;
  if (Status s = calibration::checkKeyOptions(options); !s.ok()) {
    return reportError(s.error(), kExitUsage);
  }
  auto data = loadFitInputs(a.in);
  if (!data.ok()) return reportError(data.error());
  if (a.evaluate && data->metrics) {
    return reportError(
        "--evaluate leaves one repeat of a sweep out; profiler metrics have none to split: "
        "score the table on another job's metrics with `nccl-pilot evaluate --table`",
        kExitUsage);
  }
  LoadedInputs heldOut;
  if (!a.holdout.empty()) {
    auto loaded = loadInputs(a.holdout, a.in);
    if (!loaded.ok()) return reportError("--holdout: " + loaded.error());
    heldOut = std::move(*loaded);
  }
  const calibration::FitResult result = calibration::fit(data->measured, options);
  for (const std::string& note : result.notes) std::cerr << "note: " << note << "\n";
  nlohmann::ordered_json json = calibration::fitJson(result);

  if (!a.output.empty()) {
    const std::string table = calibration::tableText(result);
    // The table must load exactly as written: anything else is a bug here, not in the data.
    const tuner::ParsedTable check = tuner::parseTable(table, a.output);
    if (!check.diagnostics.empty() ||
        check.table.rules.size() != result.rules.size() + result.marks.size()) {
      const auto& d = check.diagnostics;
      return reportError("internal error: the fitted table does not load cleanly" +
                         (d.empty()
                              ? std::string()
                              : " (line " + std::to_string(d[0].line) + ": " + d[0].message + ")"));
    }
    if (Status s = writeFile(a.output, table); !s.ok()) return reportError(s.error());
    std::cout << calibration::reportText(result, calibration::fitChoices(result));
    std::cout << "wrote " << a.output << ": " << result.rules.size()
              << (result.rules.size() == 1 ? " rule" : " rules");
    if (!result.marks.empty()) std::cout << ", " << result.marks.size() << " exploration marks";
    std::cout << "\n";
    if (!a.holdout.empty()) {
      // The same table, scored on the runs it was fitted on and on sweeps it never saw.
      const calibration::TableScore in =
          calibration::scoreTable(check.table, data->measured, options);
      const calibration::TableScore out =
          calibration::scoreTable(check.table, heldOut.measured, options);
      std::cout << "\n" << calibration::scoreComparisonText(in, out);
      std::cout << "\nheld out, per size:\n" << calibration::tableScoreText(out);
      json["holdout"] = {{"inputs", a.holdout},
                         {"in_sample", calibration::tableScoreJson(in)},
                         {"held_out", calibration::tableScoreJson(out)}};
    }
  }
  if (a.evaluate) {
    const calibration::Evaluation e = calibration::evaluate(data->runs, options);
    if (!a.output.empty()) std::cout << "\n";
    std::cout << calibration::evaluationText(e);
    json["evaluation"] = calibration::evaluationJson(e);
  }
  if (!a.json.empty()) {
    if (Status s = writeFile(a.json, json.dump(2) + "\n"); !s.ok()) return reportError(s.error());
  }
  return 0;
}

}  // namespace

Command addFitCommand(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* sub = app.add_subcommand(
      "fit",
      "Fit a tuning table to nccl-tests sweeps or the profiler's metrics from jobs: "
      "override NCCL only where it measured slower beyond noise");
  addFitInputOptions(sub, args->in);
  sub->add_option("-o,--output", args->output, "Tuning table to write");
  sub->add_option("--json", args->json,
                  "Also write every decision and the figures behind the table as JSON");
  sub->add_option("--holdout", args->holdout,
                  "Sweeps or jobs' metrics not fitted on (same --label rules): score the written "
                  "table on them and on its own inputs, side by side. Repeatable")
      ->allow_extra_args(false);
  sub->add_option("--nccl", args->nccl,
                  "The rules' nccl= key (2.27, 2.27-2.29, any for none); default: the NCCL "
                  "version the runs report, unkeyed when unknown");
  sub->add_option("--fabric", args->fabric,
                  "The rules' fabric= key (ib, roce, ethernet, a |-list, any for none); default: "
                  "what NCCL's logs, the sweep's environment or the metrics show, unkeyed "
                  "when unknown");
  sub->add_flag("--evaluate", args->evaluate,
                "Fit on some repeats, score on the others (leave one repeat out); print oracle "
                "fractions and speedups per size (sweeps only)");
  return {sub, [args] { return runFit(*args); }};
}

}  // namespace pilot::cli
