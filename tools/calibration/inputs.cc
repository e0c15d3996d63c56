#include "calibration/inputs.h"

#include <cstdlib>
#include <ctime>
#include <iostream>

#include <CLI/CLI.hpp>

#include "pilot/calibration/dataset_loader.h"
#include "pilot/calibration/labels.h"
#include "pilot/core/text.h"
#include "pilot/version.h"

namespace pilot::cli {

void addFitInputOptions(CLI::App* sub, FitInputArgs& args) {
  sub->add_option("inputs", args.inputs,
                  "nccl-tests outputs (text or -J JSON), directories of them, sweep plan "
                  "directories")
      ->required();
  sub->add_option("--label", args.labels,
                  "PATTERN=SPEC: runs whose '# RUN config=' name (else file name) matches "
                  "PATTERN ('*' wildcards) ran SPEC (default, or NCCL_ALGO=Ring,NCCL_PROTO=LL; "
                  "'*' in SPEC is what the pattern's first '*' matched). Repeatable")
      ->allow_extra_args(false);  // one value each: a later INPUT is not a label
  sub->add_option("--margin", args.margin,
                  "Smallest relative gain over NCCL's default that may override it; the "
                  "measured noise raises the bar where it is larger")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  sub->add_option("--min-repeats", args.minRepeats,
                  "Runs a configuration needs for its spread to count as a noise estimate; the "
                  "default needs this many for any rule to be written")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
}

Status checkLabels(const FitInputArgs& args) {
  for (const std::string& l : args.labels) {
    auto rule = calibration::parseLabelRule(l);
    if (!rule.ok()) return Error{"--label " + l + ": " + rule.error()};
  }
  return Status::success();
}

Expected<calibration::Dataset> loadFitInputs(const FitInputArgs& args) {
  return loadInputs(args.inputs, args);
}

Expected<tuner::TuningTable> loadTableForScoring(const std::string& path) {
  tuner::ParsedTable parsed = tuner::loadTableFile(path);
  for (const tuner::Diagnostic& d : parsed.diagnostics) {
    if (d.line == 0) return Error{"table " + path + ": " + d.message};
    std::cerr << path << ":" << d.line << ": warning: " << d.message << "\n";
  }
  return std::move(parsed.table);
}

Expected<calibration::Dataset> loadInputs(const std::vector<std::string>& inputs,
                                          const FitInputArgs& args) {
  calibration::LoadOptions options;
  for (const std::string& l : args.labels) {
    auto rule = calibration::parseLabelRule(l);
    if (!rule.ok()) return Error{"--label " + l + ": " + rule.error()};
    options.labels.push_back(*rule);
  }
  calibration::Dataset data = calibration::loadDataset(inputs, options);
  int usable = 0;
  for (const calibration::Run& run : data.runs) {
    if (!run.failed) {
      ++usable;
      continue;
    }
    std::cerr << "excluded: " << run.source << " ("
              << (run.config.label.empty() ? "?" : run.config.label)
              << "): " << (run.problems.empty() ? std::string("failed") : run.problems.front())
              << "\n";
  }
  if (usable == 0) {
    return Error{"no usable run in the input" +
                 std::string(data.runs.empty() ? "" : " (every run was excluded; see above)")};
  }
  return data;
}

calibration::FitOptions fitOptions(const FitInputArgs& args) {
  calibration::FitOptions o;
  o.margin = args.margin;
  o.minRepeats = args.minRepeats;
  o.toolVersion = pilot::kVersion;
  o.inputs = args.inputs;
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) {
    if (auto seconds = text::parseUnsigned(epoch)) {
      const std::time_t t = static_cast<std::time_t>(*seconds);
      std::tm tm{};
      gmtime_r(&t, &tm);
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
      o.date = buf;
    }
  }
  return o;
}

}  // namespace pilot::cli
