// `nccl-pilot hang --prometheus URL [--job NAME]`: the verdict from the series every rank
// exports (docs/monitoring.md, "The series"), read through Prometheus's HTTP API instead of
// gathering every rank's state file: on the largest jobs gathering 300,000 files onto one
// host is the cost, and those sites already scrape the ranks. Each rank's series become the
// state it would have written (per kind its launches and completions, its oldest operation in
// flight with its size, peer and started channels, its wait, its threshold, its pid), as of
// its last scrape, and are judged exactly as files are. A rank whose target is down has no
// series (Prometheus marks them stale): it is missing. What only the files carry is not in
// the verdict: Send/Recv counts per peer, the export window (no straggler), how long ago a
// rank's last operation ran.
#pragma once

#include <string>

#include "hang/state_reader.h"
#include "pilot/core/result.h"

namespace pilot::cli::hang {

struct PrometheusRead {
  Inputs inputs;
  int64_t newestMs = 0;  ///< the newest sample's time: the moment judged
};

/// The ranks' state from Prometheus at `url` (its base, e.g. http://prom:9090); `job`: only
/// the series of that Prometheus job label ("" for all).
Expected<PrometheusRead> readPrometheus(const std::string& url, const std::string& job);

}  // namespace pilot::cli::hang
