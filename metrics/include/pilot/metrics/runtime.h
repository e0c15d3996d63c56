// The profiler's per-process side: settings read once, the communicators being measured, and
// one exporter thread that writes the Prometheus textfile and the JSON-lines summary every
// NCCL_PILOT_METRICS_INTERVAL_S (atomically: write beside, rename over), serves HTTP /metrics
// when a port is set, and warns once per (communicator, rule) when a tuned band's live bus
// bandwidth stays below its calibrated one. The thread starts with the first measured
// communicator and is joined when the last one closes (NCCL may unload the library then).
//
// A job may create and finalize tens of thousands of communicators (finished_comms.h): init
// and finalize do a constant amount of work, and no export holds their lock while it renders.
// A finalize lets go of the communicator's tasks still in flight (EventPath::abandon) and hands
// it to the exporter, which writes its last figures within kCloseExportDelayMs (at once when
// it was the last: the thread writes, then stops) and folds it into the finished records; the
// textfile holds the live communicators, as NCCL's Inspector does.
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
#include "pilot/metrics/finished_comms.h"
#include "pilot/metrics/report.h"
#include "pilot/metrics/settings.h"
#include "pilot/metrics/state_file.h"
#include "pilot/provenance/record.h"
#include "pilot/tuner/tuner_runtime.h"

namespace pilot::metrics {

class MetricsRuntime {
 public:
  /// `abandonAtFinalize` false keeps a finalized communicator's tasks in flight until their
  /// events come, which NCCL never sends after the finalize (the stress test's ledgers use it).
  explicit MetricsRuntime(EnvLookup env, bool abandonAtFinalize = true);
  ~MetricsRuntime();
  MetricsRuntime(const MetricsRuntime&) = delete;
  MetricsRuntime& operator=(const MetricsRuntime&) = delete;

  /// The process-wide runtime, reading the real environment.
  static MetricsRuntime& process();

  /// Whether communicators are measured (settings are read, and logged, on the first call).
  bool enabled(Logger& log);
  /// Which of NCCL's network progress events to ask for (read with the settings).
  MetricsSettings::Proxy proxyEvents();

  /// A communicator's monitor, or nullptr when metrics are off or it cannot be measured (then
  /// its events are ignored). The identity's gpu is filled in here when empty.
  CommMonitor* open(CommIdentity identity, std::unique_ptr<Logger> logger);
  /// Lets go of its tasks in flight and hands it to the exporter, which writes its last figures
  /// and folds it into the finished records. Closing the last one stops the exporter thread
  /// once it has written them.
  void close(CommMonitor* monitor);

  /// One export now (what the exporter thread does every interval): every live communicator's
  /// figures and those of the ones closed since the last, the finished records' text.
  void exportNow();
  /// The textfile of the last export (what GET /metrics answers).
  std::string lastTextfile();
  /// What this process runs (provenance/record.h), built by the plugin at an init (the node,
  /// pid and time are filled in here, as the other files name them): kept for
  /// every later summary (its "provenance" line) and textfile (nccl_pilot_process_* series), and
  /// written now to nccl_pilot_<node>_<pid>.provenance.json when metrics have a directory.
  /// `first`: the first record written in this process (by any copy of the library), which
  /// starts the file; later ones (another copy, another plugin kind) are appended to it, and
  /// readers merge a process's lines. Reads the settings (and logs them) if nothing did yet.
  void publishRecord(provenance::ProcessRecord record, bool first, Logger& log);
  std::string recordPath();

  /// Where the files go; empty without a directory.
  std::string textfilePath();
  std::string summaryPath();
  /// The HTTP endpoint's port, 0 when there is none.
  int httpPort();

  /// How soon after a finalize the exporter writes its last figures (finalizes coming faster
  /// share one export).
  static constexpr int kCloseExportDelayMs = 50;
  /// Finalized communicators one textfile shows with their last figures (the summary has all).
  static constexpr size_t kMaxClosedInTextfile = 16;
  /// How often the state file is rewritten while an operation is in flight.
  static constexpr int kStateRefreshMs = 1000;
  std::string statePath();

  /// Finalized communicators as the summary keeps them (tests).
  std::vector<CommReport> finishedRecords();

 private:
  struct Exporter;  // the thread, its wake-up pipe and its HTTP endpoint
  struct Comm {
    CommMonitor* monitor = nullptr;  // mutex_: one reference while live; null once finalized
    std::unique_ptr<Logger> logger;
    std::vector<KeyTotals> previous;    // exportMutex_: per aggregate index, at the last export
    std::set<uint16_t> driftWarned;     // exportMutex_
    std::unique_ptr<CommReport> final;  // its last figures, read at the finalize
    std::vector<WindowKey> window;      // exportMutex_: the last export window's collectives
    double windowS = 0;                 // exportMutex_: that window's length
    uint64_t lastExportNs = 0;          // exportMutex_
    uint64_t stallWarnedLaunchNs = 0;   // exportMutex_: the stalled operation warned about
    std::string stallWarnedWhat;        // exportMutex_: how it was named
    uint64_t writtenMark = 0;           // exportMutex_: launches and last completion written
    ~Comm();
  };

  const MetricsSettings& loadSettings(Logger& log);  // mutex_ held
  void startExporter(Logger& log);                   // mutex_ held
  /// Stops the thread (unless a communicator opened meanwhile and `evenWithComms` is false);
  /// `finalExport`: it writes once more first.
  void stopExporter(bool evenWithComms, bool finalExport);
  void exporterLoop(Exporter& exporter);
  /// A communicator's figures now, totals only (no lock: the monitor's atomics).
  static CommReport snapshotOf(const CommMonitor& m, bool finalized);
  /// The interval figures since the last export (exportMutex_ held).
  void addIntervals(Comm& comm, CommReport& report);
  /// A live communicator's in-flight state now (exportMutex_ held); one WARN line when an
  /// operation stalls, one INFO line when a warned one completes.
  LiveState liveStateOf(Comm& comm, const CommMonitor& monitor, uint64_t nowNs);
  /// The state file (state_file.h) of the states taken at `takenMs` (unix ms); `busy`:
  /// something is in flight, so the next write comes within a second (exportMutex_ held).
  void writeState(std::vector<StateComm> comms, bool busy, const std::string& node,
                  uint64_t takenMs);
  /// The exporter's look every second: rewrites the state file when something is in flight,
  /// or something launched or completed since the last write (or `always`). Returns whether
  /// something is in flight.
  bool refreshState(bool always);
  void warnDrift(Comm& comm, const CommReport& report);

  EnvLookup env_;
  const bool abandonAtFinalize_;
  // Held by init, finalize and exports for a constant amount of work: the lists below, the
  // settings, the exporter's start and stop. Never while rendering or writing.
  std::mutex mutex_;
  std::optional<MetricsSettings> settings_;
  std::string node_;
  std::vector<std::shared_ptr<Comm>> comms_;    // live
  std::vector<std::shared_ptr<Comm>> closing_;  // finalized, not yet exported
  int localRank_ = 0;
  // One export at a time (only exports take it): the finished records, each Comm's previous.
  std::mutex exportMutex_;
  FinishedComms finished_;
  bool writeWarned_ = false;
  std::mutex textfileMutex_;  // the last textfile, for GET /metrics
  std::string textfile_;
  std::string recordJson_, recordSeries_;  // mutex_

  std::unique_ptr<Exporter> exporter_;
  int httpPort_ = 0;
  bool httpWarned_ = false;
  tuner::TunerRuntime tables_;  // our own: the tuner's log lines stay the tuner's
};

}  // namespace pilot::metrics
