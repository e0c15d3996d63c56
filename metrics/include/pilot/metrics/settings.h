// NCCL_PILOT_METRICS_*: whether the profiler measures at all, what it keeps and where it
// exports (docs/configuration.md, docs/monitoring.md). Read once per process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pilot/core/config.h"

namespace pilot::metrics {

namespace setting {
constexpr const char* kMetrics = "NCCL_PILOT_METRICS";
constexpr const char* kDir = "NCCL_PILOT_METRICS_DIR";
constexpr const char* kInterval = "NCCL_PILOT_METRICS_INTERVAL_S";
constexpr const char* kSample = "NCCL_PILOT_METRICS_SAMPLE";
constexpr const char* kMinBytes = "NCCL_PILOT_METRICS_MIN_BYTES";
constexpr const char* kPort = "NCCL_PILOT_METRICS_PORT";
constexpr const char* kBind = "NCCL_PILOT_METRICS_BIND";
constexpr const char* kDrift = "NCCL_PILOT_METRICS_DRIFT";
constexpr const char* kDriftCalls = "NCCL_PILOT_METRICS_DRIFT_CALLS";
constexpr const char* kStall = "NCCL_PILOT_STALL_S";
constexpr const char* kProxy = "NCCL_PILOT_METRICS_PROXY";
constexpr const char* kSlurmJobId = "SLURM_JOB_ID";
}  // namespace setting

struct MetricsSettings {
  static constexpr unsigned kMinInterval = 1, kMaxInterval = 3600;
  static constexpr uint64_t kMaxSample = 1000000;
  static constexpr uint64_t kMaxDriftCalls = 1000000000;
  static constexpr uint64_t kMaxStallSeconds = 86400;
  /// NCCL's network progress events asked for (NCCL_PILOT_METRICS_PROXY).
  enum class Proxy : uint8_t { Off, Ops, Steps };

  bool enabled = false;
  /// Where the textfile and the summary go; empty with `enabled` only when a port is set.
  std::string dir;
  unsigned intervalSeconds = 30;
  uint64_t sample = 1;    ///< measure collectives whose sequence number is a multiple of this
  uint64_t minBytes = 0;  ///< skip collectives moving fewer bytes per rank
  int port = 0;           ///< 0 = no HTTP endpoint
  std::string bind = "127.0.0.1";
  double driftThreshold = 0.2;  ///< warn when live bus bandwidth < (1 - this) x calibrated
  uint64_t driftMinCalls = 100;
  std::string slurmJobId;  ///< for Inspector's slurm_job_id label ("unknown" when unset)
  /// Seconds without a completion, while something is in flight, before a communicator counts
  /// as stalled. Five minutes: a step that waits on a slow rank (a checkpoint, an evaluation,
  /// a data loader) for a minute or two is not a hang, and half of PyTorch's 10-minute NCCL
  /// watchdog leaves the verdict on disk well before the watchdog tears the job down.
  uint64_t stallSeconds = 300;
  Proxy proxy = Proxy::Off;
};

/// A malformed or out-of-range value keeps the default and adds one line naming the variable
/// to `warnings`. NCCL_PILOT_METRICS=0 keeps everything off even with a directory set.
/// NCCL_PILOT_METRICS=1 with neither directory nor port writes to ./nccl-pilot-metrics.
MetricsSettings metricsSettingsFromEnv(const EnvLookup& env, std::vector<std::string>* warnings);

}  // namespace pilot::metrics
