// `nccl-pilot hang DIR... [--json] [--now UNIX_MS] [--stall-s S]`: every rank's live state
// (and summaries) of a job, read while it hangs or after: per stalled communicator, which ranks
// never launched the stuck operation, are frozen, stuck, missing, or left it, whom to look at
// first and why; and each communicator's straggler. Exit 0: nothing stalled; 1: something is;
// 2: bad input.
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "hang/judge.h"
#include "hang/prometheus_source.h"
#include "hang/report.h"
#include "hang/state_reader.h"
#include "hang/timeline.h"
#include "hang/watch.h"
#include "pilot/doctor/job_audit.h"

namespace pilot::cli {
namespace {

void sleepMs(int64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

struct HangArgs {
  std::vector<std::string> inputs;
  std::string prometheus, job;
  bool json = false;
  int64_t nowMs = -1;
  double stallS = 0;
};

int runHang(const HangArgs& args) {
  hang::HangOptions options;
  if (args.nowMs >= 0) options.nowMs = args.nowMs;
  if (args.stallS > 0) options.stallS = args.stallS;
  if (args.inputs.empty() == args.prometheus.empty())
    return reportError(
        "give the inputs (metrics directories or state files) or --prometheus URL, one of them",
        kExitUsage);
  hang::Watched watched;
  if (!args.prometheus.empty()) {
    // The ranks' series as of their last scrape, judged at the newest sample: no watch (the
    // scrapes are the writes), no /proc (the ranks run elsewhere).
    Expected<hang::PrometheusRead> read = hang::readPrometheus(args.prometheus, args.job);
    if (!read.ok()) return reportError(read.error(), kExitUsage);
    if (!options.nowMs) options.nowMs = read->newestMs;
    watched.inputs = std::move(read->inputs);
    watched.report = hang::judge(watched.inputs, options);
  } else {
    options.probe.hostName = hang::thisHostName();
    watched = hang::judgeWatching(args.inputs, options, hang::readerClockMs, sleepMs);
  }
  const hang::Inputs& inputs = watched.inputs;
  hang::HangReport& report = watched.report;
  for (const std::string& note : report.notes) std::cerr << "note: " << note << "\n";
  if (!inputs.anyReadable) return reportError("no readable input", kExitUsage);
  if (inputs.stateFilesSeen == 0) {
    return reportError("no nccl-pilot state file (*.state.json) under the inputs", kExitUsage);
  }
  if (inputs.states.empty()) {
    return reportError("none of the " + std::to_string(inputs.stateFilesSeen) +
                           " state file(s) could be used (notes above)",
                       kExitUsage);
  }
  // What every rank ran, when the same files say a rank runs another NCCL: one line.
  if (!args.inputs.empty()) report.jobAudit = doctor::jobHeadline(args.inputs);
  if (args.json) {
    std::cout << hang::reportJson(report);
  } else {
    std::cout << hang::reportText(report);
    if (!report.jobAudit.empty()) std::cout << report.jobAudit << "\n";
  }
  return report.stalls.empty() ? 0 : kExitFailure;
}

}  // namespace

Command addHangCommand(CLI::App& app) {
  auto args = std::make_shared<HangArgs>();
  CLI::App* sub = app.add_subcommand(
      "hang",
      "Read every rank's live state (NCCL_PILOT_METRICS_DIR: *.state.json and the summaries) of "
      "a job and name, per stalled communicator, the ranks that never launched the stuck "
      "operation, are frozen, stuck or missing, and whom to look at first; and the straggler. "
      "Exit 0: nothing stalled, 1: a stall, 2: bad input");
  sub->add_option("inputs", args->inputs,
                  "Metrics directories (searched to any depth) or state/summary files");
  sub->add_option("--prometheus", args->prometheus,
                  "Judge from the series the ranks export, through the HTTP API of the "
                  "Prometheus at this URL (http://host:9090) instead of their files");
  sub->add_option("--job", args->job,
                  "With --prometheus: only the series of this Prometheus job label");
  sub->add_flag("--json", args->json, "One JSON object on stdout instead of text");
  sub->add_option("--now", args->nowMs,
                  "Judge as of this unix time in ms (default: this machine's clock, or the "
                  "newest file when every file is older than that by more than 60 s)")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000'000'000'000}));
  sub->add_option("--stall-s", args->stallS,
                  "A rank waiting this many seconds in an operation is stalled (default: each "
                  "file's NCCL_PILOT_STALL_S)")
      ->check(CLI::PositiveNumber);
  return {sub, [args] { return runHang(*args); }};
}

}  // namespace pilot::cli
