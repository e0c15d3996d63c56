// The profiler's per-process side: settings read once, the communicators being measured, and
// one exporter thread that writes the Prometheus textfile and the JSON-lines summary every
// NCCL_PILOT_METRICS_INTERVAL_S (atomically: write beside, rename over), serves HTTP /metrics
// when a port is set, and warns once per (communicator, rule) when a tuned band's live bus
// bandwidth stays below its calibrated one. The thread starts with the first measured
// communicator and is joined when the last one closes (NCCL may unload the library then).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pilot/core/config.h"
#include "pilot/core/log.h"
#include "pilot/metrics/comm_monitor.h"
#include "pilot/metrics/report.h"
#include "pilot/metrics/settings.h"
#include "pilot/tuner/tuner_runtime.h"

namespace pilot::metrics {

class MetricsRuntime {
 public:
  explicit MetricsRuntime(EnvLookup env);
  ~MetricsRuntime();
  MetricsRuntime(const MetricsRuntime&) = delete;
  MetricsRuntime& operator=(const MetricsRuntime&) = delete;

  /// The process-wide runtime, reading the real environment.
  static MetricsRuntime& process();

  /// Whether communicators are measured (settings are read, and logged, on the first call).
  bool enabled(Logger& log);

  /// A communicator's monitor, or nullptr when metrics are off or it cannot be measured (then
  /// its events are ignored). The identity's gpu is filled in here when empty.
  CommMonitor* open(CommIdentity identity, std::unique_ptr<Logger> logger);
  /// Exports once more with the communicator's last figures, then lets it go. Closing the last
  /// one stops the exporter thread.
  void close(CommMonitor* monitor);

  /// One export now (what the exporter thread does every interval).
  void exportNow();
  /// The textfile of the last export (what GET /metrics answers).
  std::string lastTextfile();
  /// Where the files go; empty without a directory.
  std::string textfilePath();
  std::string summaryPath();
  /// The HTTP endpoint's port, 0 when there is none.
  int httpPort();

  /// Finalized communicators whose last figures the summary keeps.
  static constexpr size_t kMaxFinishedComms = 1024;

 private:
  struct Exporter;  // the thread, its wake-up pipe and its HTTP endpoint
  struct Comm {
    CommMonitor* monitor = nullptr;
    std::unique_ptr<Logger> logger;
    std::vector<KeyTotals> previous;  // per aggregate index, at the previous export
    std::set<uint16_t> driftWarned;
  };

  const MetricsSettings& loadSettings(Logger& log);  // mutex_ held
  void startExporter(Logger& log);                   // mutex_ held
  void stopExporter(bool evenWithComms);
  void exporterLoop(Exporter& exporter);
  CommReport reportOf(Comm& comm, bool finalized);  // mutex_ held
  void warnDrift(Comm& comm, const CommReport& report);
  void exportLocked(const Comm* closing);  // mutex_ held

  EnvLookup env_;
  std::mutex mutex_;
  std::optional<MetricsSettings> settings_;
  std::string node_;
  std::vector<std::unique_ptr<Comm>> comms_;
  std::vector<CommReport> finished_;
  std::string textfile_;
  bool writeWarned_ = false;
  int localRank_ = 0;

  std::unique_ptr<Exporter> exporter_;
  int httpPort_ = 0;
  bool httpWarned_ = false;
  tuner::TunerRuntime tables_;  // our own: the tuner's log lines stay the tuner's
};

}  // namespace pilot::metrics
