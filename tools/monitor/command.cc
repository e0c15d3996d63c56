// `nccl-pilot monitor FILES|DIR...`: the profiler's per-rank summaries of a job, per
// collective and size: calls, p50/p99 kernel time, bus bandwidth, which rule decided, the
// calibrated value and drift, and which rank the others waited for. When the inputs hold the
// ranks' live state files, first what `nccl-pilot hang` says of them: each stalled communicator
// and each one's straggler now. Text on stdout, and with --html one self-contained page; with
// the ranks' provenance records beside the summaries, one line when `doctor --job` finds a FAIL.
#include <iostream>
#include <memory>
#include <set>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "hang/live.h"
#include "hang/timeline.h"
#include "monitor/analysis.h"
#include "monitor/report.h"
#include "monitor/summary_reader.h"
#include "pilot/core/file.h"
#include "pilot/doctor/job_audit.h"
#include "pilot/version.h"

namespace pilot::cli {
namespace {

struct MonitorArgs {
  std::vector<std::string> inputs;
  std::string html;
  double drift = 0.2;
};

int runMonitor(const MonitorArgs& args) {
  // The live state files first: a job that hangs in its first operation has measured nothing
  // yet, and its stall is still worth saying.
  hang::HangOptions hangOptions;
  hangOptions.readerNowMs = hang::readerClockMs();
  hangOptions.probe.hostName = hang::thisHostName();
  const hang::LiveRead live = hang::readLive(args.inputs, hangOptions);
  auto summaries = monitor::readSummaries(args.inputs);
  if (!summaries.ok() && !live.live.present()) return reportError(summaries.error());
  monitor::Analysis analysis;
  if (summaries.ok()) {
    analysis = monitor::analyze(*summaries, args.drift);
  } else {
    analysis.notes.push_back(summaries.error());
  }
  // hang reads the summaries beside the state files too: a note is said once.
  std::set<std::string> said;
  const auto sayOnce = [&said](const std::vector<std::string>& notes) {
    for (const std::string& note : notes) {
      if (said.insert(note).second) std::cerr << "note: " << note << "\n";
    }
  };
  sayOnce(analysis.notes);
  sayOnce(live.notes);
  if (analysis.groups.empty() && !live.live.present()) {
    return reportError("the summaries hold no measured collective");
  }
  std::cout << monitor::reportText(analysis, args.drift, live.live);
  // What every rank ran, when the same files say a rank runs another NCCL: one line.
  if (const std::string line = doctor::jobHeadline(args.inputs); !line.empty()) {
    std::cout << line << "\n";
  }
  if (!args.html.empty()) {
    monitor::HtmlOptions options;
    options.toolVersion = pilot::kVersion;
    options.driftThreshold = args.drift;
    if (Status s = writeFile(args.html, monitor::reportHtml(analysis, options, live.live));
        !s.ok()) {
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
      "the calls, kernel times, bus bandwidth, deciding rule, drift and the late-arriving rank; "
      "with live state files (*.state.json), each stalled communicator and straggler now");
  sub->add_option("inputs", args->inputs,
                  "Summary files (nccl_pilot_*.jsonl), state files (*.state.json) or directories "
                  "holding them")
      ->required();
  sub->add_option("--html", args->html, "Also write a self-contained HTML page here");
  sub->add_option("--drift", args->drift,
                  "Flag tuned groups whose live bus bandwidth is below (1 - this) x calibrated")
      ->check(CLI::Range(0.01, 0.99));
  return {sub, [args] { return runMonitor(*args); }};
}

}  // namespace pilot::cli
