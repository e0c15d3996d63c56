// `nccl-pilot fit`: a tuning table from nccl-tests sweeps, overriding NCCL only where the
// measured gain beats the noise (docs/calibration.md); `--evaluate` scores that procedure on
// repeats it did not see.
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
};

int runFit(const FitArgs& a) {
  if (a.output.empty() && !a.evaluate) {
    return reportError("-o TABLE is required unless --evaluate is given", kExitUsage);
  }
  if (Status s = checkLabels(a.in); !s.ok()) return reportError(s.error(), kExitUsage);
  auto data = loadFitInputs(a.in);
  if (!data.ok()) return reportError(data.error());
  const calibration::FitOptions options = fitOptions(a.in);
  const calibration::FitResult result = calibration::fit(*data, options);
  for (const std::string& note : result.notes) std::cerr << "note: " << note << "\n";
  nlohmann::ordered_json json = calibration::fitJson(result);

  if (!a.output.empty()) {
    const std::string table = calibration::tableText(result);
    // The table must load exactly as written: anything else is a bug here, not in the data.
    const tuner::ParsedTable check = tuner::parseTable(table, a.output);
    if (!check.diagnostics.empty() || check.table.rules.size() != result.rules.size()) {
      const auto& d = check.diagnostics;
      return reportError("internal error: the fitted table does not load cleanly" +
                         (d.empty()
                              ? std::string()
                              : " (line " + std::to_string(d[0].line) + ": " + d[0].message + ")"));
    }
    if (Status s = writeFile(a.output, table); !s.ok()) return reportError(s.error());
    std::cout << calibration::reportText(result, calibration::fitChoices(result));
    std::cout << "wrote " << a.output << ": " << result.rules.size()
              << (result.rules.size() == 1 ? " rule" : " rules") << "\n";
  }
  if (a.evaluate) {
    const calibration::Evaluation e = calibration::evaluate(*data, options);
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
      "Fit a tuning table to nccl-tests sweeps: override NCCL only where it measured "
      "slower beyond noise");
  addFitInputOptions(sub, args->in);
  sub->add_option("-o,--output", args->output, "Tuning table to write");
  sub->add_option("--json", args->json,
                  "Also write every decision and the figures behind the table as JSON");
  sub->add_flag("--evaluate", args->evaluate,
                "Fit on some repeats, score on the others (leave one repeat out); print oracle "
                "fractions and speedups per size");
  return {sub, [args] { return runFit(*args); }};
}

}  // namespace pilot::cli
