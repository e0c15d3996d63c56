// `nccl-pilot monitor FILES|DIR...`: the profiler's per-rank summaries of a job, per
// collective and size: calls, p50/p99 kernel time, bus bandwidth, which rule decided, the
// calibrated value and drift, and which rank the others waited for. Text on stdout, and with
// --html one self-contained page.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "monitor/analysis.h"
#include "monitor/report.h"
#include "monitor/summary_reader.h"
#include "pilot/core/file.h"
#include "pilot/version.h"

namespace pilot::cli {
namespace {

struct MonitorArgs {
  std::vector<std::string> inputs;
  std::string html;
  double drift = 0.2;
};

int runMonitor(const MonitorArgs& args) {
  auto summaries = monitor::readSummaries(args.inputs);
  if (!summaries.ok()) return reportError(summaries.error());
  const monitor::Analysis analysis = monitor::analyze(*summaries, args.drift);
  for (const std::string& note : analysis.notes) std::cerr << "note: " << note << "\n";
  if (analysis.groups.empty()) return reportError("the summaries hold no measured collective");
  std::cout << monitor::reportText(analysis, args.drift);
  if (!args.html.empty()) {
    monitor::HtmlOptions options;
    options.toolVersion = pilot::kVersion;
    options.driftThreshold = args.drift;
    if (Status s = writeFile(args.html, monitor::reportHtml(analysis, options)); !s.ok()) {
      return reportError(s.error());
    }
    std::cout << "wrote " << args.html << "\n";
  }
  return 0;
}

}  // namespace

Command addMonitorCommand(CLI::App& app) {
  auto args = std::make_shared<MonitorArgs>();
  CLI::App* sub = app.add_subcommand(
      "monitor",
      "Read the profiler's summaries of a job (NCCL_PILOT_METRICS_DIR): per collective and size "
      "the calls, kernel times, bus bandwidth, deciding rule, drift and the late-arriving rank");
  sub->add_option("inputs", args->inputs,
                  "Summary files (nccl_pilot_*.jsonl) or directories holding them")
      ->required();
  sub->add_option("--html", args->html, "Also write a self-contained HTML page here");
  sub->add_option("--drift", args->drift,
                  "Flag tuned groups whose live bus bandwidth is below (1 - this) x calibrated")
      ->check(CLI::Range(0.01, 0.99));
  return {sub, [args] { return runMonitor(*args); }};
}

}  // namespace pilot::cli
