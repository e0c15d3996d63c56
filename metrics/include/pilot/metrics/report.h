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
#include "pilot/metrics/in_flight.h"

namespace pilot::metrics {

struct KeyReport {
  KeyFields fields;
  bool other = false;    ///< the shared key past CommMonitor::kMaxKeys
  std::string decision;  ///< "rule 2 (line 7)" or "NCCL"
  std::string band;      ///< the rule's size range, "" for NCCL
  KeyTotals total;       ///< since the communicator was created
  KeyTotals interval;    ///< since the previous export
  unsigned index = 0;    ///< the aggregate's index in its communicator (CommMonitor::KeyView)
};

/// One (collective, size bucket) of the last export window, for the late arriver: the rank
/// whose kernels are shortest arrived last (the others waited inside theirs).
struct WindowKey {
  Operation op = Operation::AllReduce;
  uint64_t bytes = 0;  ///< the size bucket's lower bound
  uint64_t calls = 0;
  double meanUs = 0;
};

/// A live communicator's state now: what it launched, what it waits for, for how long
/// (state_file.h, and the nccl_pilot_comm_* series).
struct LiveState {
  InFlightView view;
  uint64_t nowNs = 0;   ///< monotonic, when `view` was taken
  double waitingS = 0;  ///< since the last completion or the oldest's launch (the later)
  bool stalled = false;
  double windowS = 0;  ///< the last export window's length, 0 before the first
  std::vector<WindowKey> window;
  /// The oldest operation's ProxyOps still open (NCCL_PILOT_METRICS_PROXY); `proxyEvents`:
  /// they were asked for (else the list says nothing).
  bool proxyEvents = false;
  std::vector<ProxyOpView> proxy;
};

/// Events of one kind (collectives, or Send/Recv operations): seen, measured, skipped by reason.
struct TaskCounts {
  uint64_t seen = 0, measured = 0;
  uint64_t skipped[static_cast<int>(Skip::Count)] = {};
};

struct CommReport {
  /// For a record of finished communicators folded together (finished_comms.h), identity.commId
  /// is the record's id: the communicator's own while it holds one, else one every rank
  /// derives alike from the name and shape.
  CommIdentity identity;
  bool finalized = false;
  uint64_t folded = 0;  ///< finalized communicators this record holds; 0: a live one
  uint64_t firstCommId = 0, lastCommId = 0;  ///< of the folded ones, in finalize order
  TaskCounts collectives, p2p;
  uint64_t groups[static_cast<int>(GroupOutcome::Count)] = {};  ///< groups holding Send/Recv
  unsigned peersSentTo = 0, peersReceivedFrom = 0;
  std::vector<KeyReport> keys;  ///< collectives, Send/Recv (fields.op) and grouped all-to-alls
  std::vector<CallSamples::View> samples;    ///< since the communicator was created
  std::vector<std::string> sampleDecisions;  ///< per sample: "rule 2 (line 7)" or "NCCL"
  uint64_t samplesOverflow = 0;              ///< calls past CallSamples::kMaxKeys keys
  std::string tableSha256;                   ///< the table the decisions came from, "" = none
  bool hasLive = false;                      ///< a live one: `live` is set
  LiveState live;
};

/// The process's communicators over its life (the textfile holds the live ones).
struct CommCounts {
  uint64_t live = 0;      ///< measured now
  uint64_t finished = 0;  ///< finalized since the process started
  uint64_t records = 0;   ///< records of finished ones the summary keeps (finished_comms.h)
  /// Finished ones whose record made way for newer ones, and their measured calls.
  uint64_t dropped = 0, droppedCalls = 0;
};

struct ProcessReport {
  std::string node;        ///< host name
  std::string slurmJobId;  ///< "unknown" when unset
  std::string version;     ///< nccl-pilot's
  long pid = 0;
  uint64_t orphans[static_cast<int>(Orphan::Count)] = {};
  uint32_t slotsInUse = 0, slots = 0;
  uint32_t groupsInUse = 0;
  CommCounts communicators;
  uint64_t stallSeconds = 0;  ///< NCCL_PILOT_STALL_S
  std::vector<CommReport> comms;
  /// What this process runs (provenance/record.h), as its JSON line and its series; empty until
  /// the plugin published it.
  std::string recordJson, recordSeries;
};

/// Bus bandwidth in GB/s of totals (sum of bus bytes over sum of time); 0 without time.
double busGbs(const KeyTotals& t);

/// A communicator id as both exports print it: "0x" and lowercase hex digits.
std::string commIdText(uint64_t commId);

}  // namespace pilot::metrics
