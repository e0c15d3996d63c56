// The state file: per process, what each live communicator launched and waits for, written by
// the exporter at least every second while anything is in flight (else every export interval),
// so that `nccl-pilot hang` can tell, while a job hangs, which rank never launched the operation
// the others wait in, which stopped refreshing (frozen), and which all wait on the network.
// Format (version 1) in docs/monitoring.md, "The state file". One JSON object on one line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pilot/metrics/report.h"

namespace pilot::metrics {

constexpr const char* kStateFormat = "nccl-pilot-state";
constexpr int kStateVersion = 1;
/// At most this many window keys per communicator (the busiest).
constexpr size_t kMaxWindowKeys = 16;

struct StateComm {
  CommIdentity identity;
  LiveState live;
};

struct StateReport {
  std::string node, job, version;
  long pid = 0;
  uint64_t writtenMs = 0, nextDueMs = 0;  ///< CLOCK_REALTIME, unix ms
  uint64_t stallSeconds = 0;
  bool final = false;  ///< the process's last communicator closed: no more writes
  std::vector<StateComm> comms;
};

/// Seconds since the last completion or the oldest's launch, whichever is later; 0 with
/// nothing in flight.
double waitingSeconds(const InFlightView& view, uint64_t nowNs);

/// The window keys of a communicator's last export: per (operation, size bucket) of the
/// collectives measured in it, at most kMaxWindowKeys, the busiest.
std::vector<WindowKey> windowKeys(const std::vector<KeyReport>& keys);

std::string renderState(const StateReport& report);

/// "AllReduce #40 (4 MiB)" or "Send #3 to rank 5 (1 MiB)" for log lines.
std::string describeOperation(const OperationView& op);

}  // namespace pilot::metrics
