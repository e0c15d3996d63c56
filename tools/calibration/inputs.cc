#include "calibration/inputs.h"

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "pilot/calibration/dataset_loader.h"
#include "pilot/calibration/labels.h"
#include "pilot/calibration/metrics_summary.h"
#include "pilot/core/text.h"
#include "pilot/version.h"

namespace pilot::cli {

void addFitInputOptions(CLI::App* sub, FitInputArgs& args) {
  sub->add_option("inputs", args.inputs,
                  "nccl-tests outputs (text or -J JSON), directories of them, sweep plan "
                  "directories; or the profiler's metrics: .jsonl files, or directories of "
                  "them (NCCL_PILOT_METRICS_DIR, one level of job directories), not mixed "
                  "with sweeps")
      ->required();
  sub->add_option("--label", args.labels,
                  "PATTERN=SPEC: runs whose '# RUN config=' name (else file name) matches "
                  "PATTERN ('*' wildcards) ran SPEC (default, or NCCL_ALGO=Ring,NCCL_PROTO=LL; "
                  "'*' in SPEC is what the pattern's first '*' matched). Repeatable; sweeps "
                  "only")
      ->allow_extra_args(false);  // one value each: a later INPUT is not a label
  sub->add_option("--margin", args.margin,
                  "Smallest relative gain over NCCL's default that may override it; the "
                  "measured noise raises the bar where it is larger")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  sub->add_option("--calls-margin", args.callsMargin,
                  "The same, for the profiler's per-call samples (the configurations ran "
                  "interleaved in one job; two standard errors of the calls raise the bar)")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  sub->add_option("--min-repeats", args.minRepeats,
                  "Runs a configuration needs for its spread to count as a noise estimate; the "
                  "default needs this many for any rule to be written")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
}

namespace {

/// The first input of each kind; an error when INPUTs mix profiler metrics with sweeps.
Expected<bool> metricsInputs(const std::vector<std::string>& inputs) {
  std::string metrics, sweeps;
  for (const std::string& in : inputs) {
    std::string& first = calibration::isMetricsInput(in) ? metrics : sweeps;
    if (first.empty()) first = in;
  }
  if (!metrics.empty() && !sweeps.empty()) {
    return Error{"the inputs mix profiler metrics (" + metrics + ") with nccl-tests output (" +
                 sweeps + "): fit them in separate calls"};
  }
  return !metrics.empty();
}

/// A directory without a single file in it or one level down.
bool isEmptyDirectory(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return false;
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (it.depth() > 1) continue;
    if (!it->is_directory(ec)) return false;
  }
  return true;
}

void printNotes(const std::vector<std::string>& notes) {
  for (const std::string& n : notes) std::cerr << "note: " << n << "\n";
}

Expected<LoadedInputs> loadMetricsInputs(const std::vector<std::string>& inputs,
                                         const FitInputArgs& args) {
  if (!args.labels.empty()) {
    std::cerr << "note: --label names what a sweep's runs forced; profiler metrics say it "
                 "themselves: ignored\n";
  }
  const calibration::MetricsData data = calibration::loadMetrics(inputs);
  if (data.records.empty()) {
    printNotes(data.problems);
    printNotes(data.notes);
    return Error{"no calibration line in the profiler's metrics (" +
                 std::to_string(data.files.size()) +
                 " .jsonl file(s) read): the profiler writes them with NCCL_PILOT_METRICS=1 "
                 "into NCCL_PILOT_METRICS_DIR"};
  }
  LoadedInputs out;
  out.metrics = true;
  out.measured = calibration::summarizeMetrics(data);
  return out;
}

}  // namespace

Status checkInputs(const FitInputArgs& args, const std::vector<std::string>& holdout) {
  for (const std::string& l : args.labels) {
    auto rule = calibration::parseLabelRule(l);
    if (!rule.ok()) return Error{"--label " + l + ": " + rule.error()};
  }
  if (auto kind = metricsInputs(args.inputs); !kind.ok()) return Error{kind.error()};
  if (auto kind = metricsInputs(holdout); !kind.ok()) return Error{"--holdout: " + kind.error()};
  return Status::success();
}

Expected<LoadedInputs> loadFitInputs(const FitInputArgs& args) {
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

Expected<LoadedInputs> loadInputs(const std::vector<std::string>& inputs,
                                  const FitInputArgs& args) {
  for (const std::string& in : inputs) {
    if (isEmptyDirectory(in)) {
      return Error{in +
                   ": an empty directory: neither nccl-tests output nor the profiler's "
                   "metrics (.jsonl) to read"};
    }
  }
  auto metrics = metricsInputs(inputs);
  if (!metrics.ok()) return Error{metrics.error()};
  if (*metrics) return loadMetricsInputs(inputs, args);
  calibration::LoadOptions options;
  for (const std::string& l : args.labels) {
    auto rule = calibration::parseLabelRule(l);
    if (!rule.ok()) return Error{"--label " + l + ": " + rule.error()};
    options.labels.push_back(*rule);
  }
  LoadedInputs out;
  out.runs = calibration::loadDataset(inputs, options);
  const calibration::Dataset& data = out.runs;
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
    printNotes(data.problems);
    return Error{"no usable run in the input" +
                 std::string(data.runs.empty() ? "" : " (every run was excluded; see above)")};
  }
  out.measured = calibration::summarize(data);
  out.measured.notes.insert(out.measured.notes.begin(), data.problems.begin(), data.problems.end());
  return out;
}

calibration::FitOptions fitOptions(const FitInputArgs& args) {
  calibration::FitOptions o;
  o.margin = args.margin;
  o.callsMargin = args.callsMargin;
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
