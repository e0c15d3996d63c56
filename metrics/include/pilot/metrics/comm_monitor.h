// One communicator as the profiler sees it: who it is, the table compiled for its shape (to
// credit NCCL's decisions to rules, and their calibrated times), and fixed tables of aggregates
// per (operation, size bucket, algorithm/protocol, channels, decision), collectives and Send/Recv
// alike; for point-to-point traffic also which peers it reached (a bit per rank, so the count
// is exact without a label per peer). Built at profiler init; the event path (event_path.h)
// only reads the immutable parts and adds to atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pilot/core/log.h"
#include "pilot/metrics/aggregate.h"
#include "pilot/metrics/call_samples.h"
#include "pilot/metrics/expectation.h"
#include "pilot/metrics/in_flight.h"
#include "pilot/metrics/operation.h"
#include "pilot/metrics/settings.h"
#include "pilot/tuner/tuner_runtime.h"

namespace pilot::metrics {

struct CommIdentity {
  uint64_t commId = 0;
  std::string name;  ///< NCCL's commName, made printable; "" when NCCL gave none
  int nNodes = 1;
  int nRanks = 1;
  int rank = 0;
  int abiVersion = 5;  ///< the profiler ABI NCCL loaded
  long pid = 0;        ///< the process that created it (a ProxyOp of another one is PXN's)
  std::string gpu;     ///< "GPU<n>" from the CUDA driver, or "unknown"
  /// The fabric and NCCL version the table's fabric=/nccl= keys are matched against, read as
  /// the tuner reads them (plugin/tuner/process_facts), so both compile the same rules.
  tuner::ProcessFacts facts;
};

/// The fields an aggregation key packs (decision: index into the compiled table's rules, or
/// kNcclDecided).
struct KeyFields {
  static constexpr uint16_t kNcclDecided = 0xffff;
  Operation op = Operation::AllReduce;
  uint8_t bucket = 0;
  uint8_t algorithm = kUnknownAlgorithm;
  uint8_t protocol = kUnknownProtocol;
  uint8_t channels = 0;
  uint16_t decision = kNcclDecided;

  uint64_t pack() const;
  static KeyFields unpack(uint64_t key);
};

/// Why a collective, a Send/Recv or a kernel event was not measured
/// (nccl_pilot_profiler_events_total, nccl_pilot_profiler_p2p_events_total).
enum class Skip : uint8_t {
  SampledOut,     ///< sequence number not a multiple of NCCL_PILOT_METRICS_SAMPLE
  BelowMinBytes,  ///< NCCL_PILOT_METRICS_MIN_BYTES
  Unknown,        ///< an operation or datatype NCCL named that we do not measure
  NoChannels,     ///< 0 or more than 64 kernel channels: nothing to time
  NoSlot,         ///< every in-flight slot was taken
  Untimed,        ///< a channel stopped without a GPU stop time
  IgnoredKernel,  ///< a kernel event past the channels NCCL announced, or for one twice
  /// In flight when its communicator was finalized: NCCL stops its proxy before the profiler's
  /// finalize (src/init.cc commFree), so what has not reported then never will (an abort).
  Abandoned,
  Count,
};
const char* skipName(Skip s);

/// The two kinds of NCCL task events the profiler measures; each has its own counters.
enum class TaskKind : uint8_t { Collective, P2p };

/// What became of a group (NCCL's Group event: one kernel plan) that held Send/Recv operations.
enum class GroupOutcome : uint8_t {
  AlltoAll,   ///< it sent to and received from every other rank: measured as one AlltoAll
  Partial,    ///< it did not (or one of its operations was not measured)
  Untracked,  ///< no group entry was free, or its events came out of NCCL's order
  Count,
};
const char* groupOutcomeName(GroupOutcome o);
class CommMonitor {
 public:
  static constexpr unsigned kMaxKeys = 128;  ///< distinct keys; more share "other"
  static constexpr unsigned kOtherKey = kMaxKeys;

  CommMonitor(CommIdentity identity, const MetricsSettings& settings,
              tuner::TunerRuntime::Compiled table);

  const CommIdentity& identity() const { return identity_; }
  const MetricsSettings& settings() const { return settings_; }

  // ---- the event path (allocation-free, lock-free) ----
  /// The rule that made NCCL run this (index into the compiled table) or kNcclDecided.
  uint16_t decide(Operation op, uint64_t messageBytes, uint8_t algorithm, uint8_t protocol,
                  int channels) const;
  /// The calibrated time of `decision` for this operation, 0 when the rule has none.
  double expectedNs(uint16_t decision, Operation op, uint64_t messageBytes) const;
  /// The aggregate index of `key`, inserting it; kOtherKey once kMaxKeys are taken.
  unsigned keyIndex(uint64_t key);
  KeyAggregate& aggregate(unsigned index) { return aggregates_[index]; }
  /// Per-call times by exact size and configuration, for fitting (call_samples.h).
  CallSamples& samples() { return samples_; }
  const CallSamples& samples() const { return samples_; }
  /// What it launched and still waits for (in_flight.h): every operation NCCL names, measured
  /// or not (sampled out, below the minimum size).
  InFlightLog& inFlight() { return inFlight_; }
  const InFlightLog& inFlight() const { return inFlight_; }
  void count(Skip s, TaskKind k = TaskKind::Collective) {
    counters(k).skips[static_cast<int>(s)].fetch_add(1, std::memory_order_relaxed);
  }
  void countSeen(TaskKind k = TaskKind::Collective) {
    counters(k).seen.fetch_add(1, std::memory_order_relaxed);
  }
  void countMeasured(TaskKind k = TaskKind::Collective) {
    counters(k).measured.fetch_add(1, std::memory_order_relaxed);
  }
  void countGroup(GroupOutcome o) {
    groups_[static_cast<int>(o)].fetch_add(1, std::memory_order_relaxed);
  }
  /// Notes that this rank sent to (Send) or received from (Recv) `peer`; ignores itself and
  /// ranks outside the communicator.
  void notePeer(Operation op, int peer);
  /// A peer's term in the multiset hash by which a group's peers are compared with every other
  /// rank (event_path.cc); peerHashOfOthers() is its sum over every rank but this one.
  static uint64_t peerHash(int peer);
  uint64_t peerHashOfOthers() const { return peerHashOfOthers_; }

  /// Shared ownership between the communicator (until finalize) and its in-flight slots and
  /// group entries: the monitor is deleted by whoever lets go last.
  void retain() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release();
  /// References held now (the communicator's, its in-flight tasks' and groups').
  int64_t references() const { return refs_.load(std::memory_order_acquire); }

  // ---- for the exporter ----
  struct KeyView {
    KeyFields fields;
    bool other = false;
    unsigned index = 0;  ///< the aggregate's index (kOtherKey for "other")
    KeyTotals totals;
  };
  /// Every key seen so far with its totals, by aggregate index (the slot of a key never moves).
  std::vector<KeyView> keys() const;
  uint64_t seen(TaskKind k = TaskKind::Collective) const {
    return counters(k).seen.load(std::memory_order_relaxed);
  }
  uint64_t measured(TaskKind k = TaskKind::Collective) const {
    return counters(k).measured.load(std::memory_order_relaxed);
  }
  uint64_t skipped(Skip s, TaskKind k = TaskKind::Collective) const {
    return counters(k).skips[static_cast<int>(s)].load(std::memory_order_relaxed);
  }
  uint64_t groups(GroupOutcome o) const {
    return groups_[static_cast<int>(o)].load(std::memory_order_relaxed);
  }
  /// Distinct ranks this rank sent to (Send) or received from (Recv).
  unsigned peers(Operation op) const;
  /// "rule 3 (line 12)" for a compiled rule index, "NCCL" for kNcclDecided.
  std::string decisionLabel(uint16_t decision) const;
  /// The size range of the decision's rule ("1M..4M"), for drift warnings; "" for NCCL.
  std::string decisionBand(uint16_t decision) const;
  size_t ruleCount() const { return table_.compiled ? table_.compiled->ruleCount() : 0; }
  /// The loaded table's SHA-256, "" without one.
  std::string tableSha256() const { return table_.table ? table_.table->sha256 : ""; }

 private:
  ~CommMonitor() = default;  // release() deletes

  struct Counters {
    std::atomic<uint64_t> seen{0}, measured{0};
    std::atomic<uint64_t> skips[static_cast<int>(Skip::Count)] = {};
  };
  Counters& counters(TaskKind k) { return counters_[static_cast<int>(k)]; }
  const Counters& counters(TaskKind k) const { return counters_[static_cast<int>(k)]; }

  CommIdentity identity_;
  MetricsSettings settings_;
  tuner::TunerRuntime::Compiled table_;
  std::vector<ExpectationCurve> curves_;  // per compiled rule
  std::vector<int> ordinals_;             // 1-based position of each compiled rule in the file

  static constexpr unsigned kSlots = 2 * kMaxKeys;
  std::atomic<uint64_t> slots_[kSlots] = {};  // open addressing: (key << 8) | (index + 1)
  std::atomic<unsigned> nextIndex_{0};
  KeyAggregate aggregates_[kMaxKeys + 1];
  CallSamples samples_;
  InFlightLog inFlight_;
  Counters counters_[2];
  std::atomic<uint64_t> groups_[static_cast<int>(GroupOutcome::Count)] = {};
  // A bit per rank of the communicator: sent to, received from.
  std::unique_ptr<std::atomic<uint64_t>[]> sentTo_, receivedFrom_;
  size_t peerWords_ = 0;
  uint64_t peerHashOfOthers_ = 0;
  std::atomic<int64_t> refs_{1};
};

}  // namespace pilot::metrics
