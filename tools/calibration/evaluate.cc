// `nccl-pilot evaluate --table T SWEEP...`: a table scored on sweeps it was not fitted on
// (docs/calibration.md, "Scoring a table on other sweeps").
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "calibration/inputs.h"
#include "cli/commands.h"
#include "pilot/calibration/evaluate.h"
#include "pilot/core/file.h"

namespace pilot::cli {
namespace {

struct EvaluateArgs {
  FitInputArgs in;
  std::string table;
  std::string json;
};

int runEvaluate(const EvaluateArgs& a) {
  if (Status s = checkInputs(a.in); !s.ok()) return reportError(s.error(), kExitUsage);
  auto table = loadTableForScoring(a.table);
  if (!table.ok()) return reportError(table.error());
  auto data = loadFitInputs(a.in);
  if (!data.ok()) return reportError(data.error());
  for (const std::string& note : data->measured.notes) std::cerr << "note: " << note << "\n";
  const calibration::TableScore score =
      calibration::scoreTable(*table, data->measured, fitOptions(a.in));
  std::cout << "table " << a.table << " (" << table->rules.size()
            << (table->rules.size() == 1 ? " rule" : " rules") << ") on";
  for (const std::string& input : a.in.inputs) std::cout << " " << input;
  std::cout << "\n" << calibration::tableScoreText(score);
  if (!a.json.empty()) {
    nlohmann::ordered_json j = calibration::tableScoreJson(score);
    j["table"] = a.table;
    j["inputs"] = a.in.inputs;
    if (Status s = writeFile(a.json, j.dump(2) + "\n"); !s.ok()) return reportError(s.error());
  }
  return 0;
}

}  // namespace

Command addEvaluateCommand(CLI::App& app) {
  auto args = std::make_shared<EvaluateArgs>();
  CLI::App* sub = app.add_subcommand(
      "evaluate",
      "Score a tuning table on sweeps or jobs' metrics it was not fitted on: per size the "
      "chosen configuration against NCCL's default and the fastest measured, and every size "
      "slower beyond noise");
  addFitInputOptions(sub, args->in);
  sub->add_option("--table", args->table, "Tuning table to score")->required();
  sub->add_option("--json", args->json, "Also write the scores as JSON");
  return {sub, [args] { return runEvaluate(*args); }};
}

}  // namespace pilot::cli
