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
constexpr const char* kSlurmJobId = "SLURM_JOB_ID";
}  // namespace setting

struct MetricsSettings {
  static constexpr unsigned kMinInterval = 1, kMaxInterval = 3600;
  static constexpr uint64_t kMaxSample = 1000000;
  static constexpr uint64_t kMaxDriftCalls = 1000000000;

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
};

/// A malformed or out-of-range value keeps the default and adds one line naming the variable
/// to `warnings`. NCCL_PILOT_METRICS=0 keeps everything off even with a directory set.
/// NCCL_PILOT_METRICS=1 with neither directory nor port writes to ./nccl-pilot-metrics.
MetricsSettings metricsSettingsFromEnv(const EnvLookup& env, std::vector<std::string>* warnings);

}  // namespace pilot::metrics
