// The JSON-lines summary beside the textfile (nccl_pilot_<host>_<pid>.jsonl), rewritten with
// every export and last at finalize, read by `nccl-pilot monitor`. One object per line:
//   {"kind":"process", "node", "pid", "version", "slurm_job_id", "slots", "orphans":{"foreign",
//    "stale", "group_left_open"}, "groups_in_use", "communicators":{"live", "finished",
//    "records", "dropped", "dropped_calls"}}   (finished_comms.h)
//   {"kind":"provenance", ...}   what the process runs (provenance/record.h), once published
//   {"kind":"communicator", "comm", "comm_name", "rank", "nranks", "n_nodes", "gpu", "node",
//    "pid", "abi", "finalized", ["folded", "first_comm", "last_comm"] (a record of finished
//    communicators of one name and shape: how many, the first and last finalized; "comm" is then
//    theirs while it holds one, else an id every rank derives from the name and shape),
//    "seen", "measured", "skipped":{outcome: count} (collectives),
//    "calibration_overflow", "p2p":{"seen", "measured", "skipped":{outcome: count},
//    "peers":{"Send", "Recv"} (distinct ranks), "groups":{"alltoall", "partial", "untracked"}}}
//   {"kind":"collective", "comm", "rank", "nranks", "n_nodes", "node", "collective",
//    "message_size", "size_bucket_bytes", "algo", "proto", "channels", "decision", "band",
//    "calls", "bytes", "time_us":{"sum","min","max","p50","p99"}, "bus_gbs",
//    "bus_gbs_geomean", "expected_us" (mean, when calibrated), "drift_ratio",
//    "bins":[[bin, count], ...]}   (histogram.h's half-octave bins, non-empty ones; an
//    all-to-all NCCL ran as a group of Send/Recv has "algo":"P2P", "proto":"unknown")
//   {"kind":"p2p", ... as "collective" but "p2p_operation" ("Send", "Recv") for "collective"
//    and no "algo", "proto", "decision", "band"}
//   {"kind":"calibration", "comm", "comm_name", "rank", "nranks", "n_nodes", "node", "pid",
//    "nccl" ("2.28.9" or "unknown"), "fabric", "table_sha256" ("" = none), "collective",
//    "bytes" (NCCL's nBytes: the tuner's size axis), "message_bytes", "algo", "proto",
//    "channels", "decision" (the rule whose choice this is, as for collectives, or "NCCL"),
//    "calls", "time_us":{"sum","mean","median","p10","p90","min","max"},
//    "bin_ratio":1.02, "bins":[[k, count], ...]}   (call_samples.h: exact sizes, 2% bins;
//    bin k holds kernel times t in ns with 1.02^k <= t < 1.02^(k+1); the communicator line's
//    "calibration_overflow" counts calls past its keys)
// The "other" key has "collective":"other" and no size, algorithm or protocol fields.
#pragma once

#include <string>

#include "pilot/core/text.h"
#include "pilot/metrics/report.h"

namespace pilot::metrics {

/// The process line and every communicator's lines.
std::string renderSummary(const ProcessReport& report);
/// One communicator's lines: its "communicator" line, its keys', its calibration lines.
void appendCommunicator(std::string* out, const ProcessReport& process, const CommReport& c);

using text::jsonString;  // core/text.h

}  // namespace pilot::metrics
