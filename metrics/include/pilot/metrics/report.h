// What one export writes: every communicator's keys with their totals since the communicator
// was created and since the previous export (NCCL Inspector's metrics are per interval, ours
// are cumulative), and how the event path fared. Rendered as a Prometheus textfile
// (prometheus.h) and as JSON lines (summary.h); built by the runtime (runtime.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pilot/metrics/comm_monitor.h"
#include "pilot/metrics/event_path.h"

namespace pilot::metrics {

struct KeyReport {
  KeyFields fields;
  bool other = false;    ///< the shared key past CommMonitor::kMaxKeys
  std::string decision;  ///< "rule 2 (line 7)" or "NCCL"
  std::string band;      ///< the rule's size range, "" for NCCL
  KeyTotals total;       ///< since the communicator was created
  KeyTotals interval;    ///< since the previous export
};

/// Events of one kind (collectives, or Send/Recv operations): seen, measured, skipped by reason.
struct TaskCounts {
  uint64_t seen = 0, measured = 0;
  uint64_t skipped[static_cast<int>(Skip::Count)] = {};
};

struct CommReport {
  CommIdentity identity;
  bool finalized = false;
  TaskCounts collectives, p2p;
  uint64_t groups[static_cast<int>(GroupOutcome::Count)] = {};  ///< groups holding Send/Recv
  unsigned peersSentTo = 0, peersReceivedFrom = 0;
  std::vector<KeyReport> keys;  ///< collectives, Send/Recv (fields.op) and grouped all-to-alls
  std::vector<CallSamples::View> samples;    ///< since the communicator was created
  std::vector<std::string> sampleDecisions;  ///< per sample: "rule 2 (line 7)" or "NCCL"
  uint64_t samplesOverflow = 0;              ///< calls past CallSamples::kMaxKeys keys
  std::string tableSha256;                   ///< the table the decisions came from, "" = none
};

struct ProcessReport {
  std::string node;        ///< host name
  std::string slurmJobId;  ///< "unknown" when unset
  std::string version;     ///< nccl-pilot's
  long pid = 0;
  uint64_t orphans[static_cast<int>(Orphan::Count)] = {};
  uint32_t slotsInUse = 0, slots = 0;
  uint32_t groupsInUse = 0;
  std::vector<CommReport> comms;
};

/// Bus bandwidth in GB/s of totals (sum of bus bytes over sum of time); 0 without time.
double busGbs(const KeyTotals& t);

/// A communicator id as both exports print it: "0x" and lowercase hex digits.
std::string commIdText(uint64_t commId);

}  // namespace pilot::metrics
