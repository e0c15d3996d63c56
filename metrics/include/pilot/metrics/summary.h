// The JSON-lines summary beside the textfile (nccl_pilot_<host>_<pid>.jsonl), rewritten with
// every export and last at finalize, read by `nccl-pilot monitor`. One object per line:
//   {"kind":"process", "node", "pid", "version", "slurm_job_id", "slots", "orphans":{...}}
//   {"kind":"communicator", "comm", "comm_name", "rank", "nranks", "n_nodes", "gpu", "node",
//    "pid", "abi", "finalized", "seen", "measured", "skipped":{outcome: count}}
//   {"kind":"collective", "comm", "rank", "nranks", "n_nodes", "node", "collective",
//    "message_size", "size_bucket_bytes", "algo", "proto", "channels", "decision", "band",
//    "calls", "bytes", "time_us":{"sum","min","max","p50","p99"}, "bus_gbs",
//    "bus_gbs_geomean", "expected_us" (mean, when calibrated), "drift_ratio",
//    "bins":[[bin, count], ...]}   (histogram.h's half-octave bins, non-empty ones)
// The "other" key has "collective":"other" and no size, algorithm or protocol fields.
#pragma once

#include <string>

#include "pilot/metrics/report.h"

namespace pilot::metrics {

std::string renderSummary(const ProcessReport& report);

/// A JSON string literal (quotes included) of arbitrary bytes: control characters and bytes
/// outside ASCII are escaped, so the line stays valid whatever NCCL or the user named things.
std::string jsonString(const std::string& value);

}  // namespace pilot::metrics
