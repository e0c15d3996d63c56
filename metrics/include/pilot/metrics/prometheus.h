// The Prometheus text exposition (format 0.0.4) of a report, as node_exporter's textfile
// collector reads it: no timestamps, each family once with HELP and TYPE.
//
// NCCL Inspector's series, with its names and labels so its Grafana dashboards work unchanged
// (plugins/profiler/inspector/inspector_prom.cc), computed the way it does over the collectives
// completed since the previous export:
//   nccl_bus_bandwidth_gbs                   geometric mean of per-collective bus bandwidth
//   nccl_collective_exec_time_microseconds   arithmetic mean of per-collective kernel time
//   labels version, slurm_job_id, node, gpu, comm_name, n_nodes, nranks, collective,
//          message_size, algo_proto
// and ours, cumulative since each communicator was created, in base units, with the
// communicator id, rank, channel count and the decision's source:
//   nccl_pilot_collective_calls_total, nccl_pilot_collective_time_seconds (histogram),
//   nccl_pilot_collective_bytes_total, nccl_pilot_bus_bandwidth_bytes_per_second,
//   nccl_pilot_expected_time_seconds, nccl_pilot_drift_ratio,
//   nccl_pilot_profiler_events_total, nccl_pilot_profiler_orphan_events_total,
//   nccl_pilot_profiler_slots, nccl_pilot_profiler_slots_in_use, nccl_pilot_build_info.
#pragma once

#include <string>

#include "pilot/core/text.h"

#include "pilot/metrics/report.h"

namespace pilot::metrics {

std::string renderTextfile(const ProcessReport& report);

using text::escapeLabelValue;  // core/text.h

}  // namespace pilot::metrics
