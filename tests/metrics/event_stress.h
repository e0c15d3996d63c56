// The profiler under load: NCCL's profiler events for many communicators from many threads at
// once, on the metrics layer as plugin/profiler/exports.cc drives it (EventPath::process(), the
// CommMonitors a MetricsRuntime opens and closes, its exporter). Application threads open
// communicators, start operations and stop them (at once, or later on a proxy thread), and
// finalize each communicator while its operations are still in flight; proxy threads take the
// operations of every communicator from one queue and report their kernel channels in any order,
// spread over several threads, before or after the operation's own stop; a renderer exports
// meanwhile. On top of NCCL's events they send what NCCL should not: channels the operation
// does not have, second starts and stops, stops without a GPU time, handles of operations that
// completed (of communicators that may be gone), pointer-like garbage, and late duplicates that
// race the operation's completion (sent again by the proxy, or by one more thread that never
// synchronizes with the others, so that TSan sees its accesses unordered with the next use of
// the slot).
//
// Every thread keeps a ledger of what it did and what the library must have counted for it, so
// the test (event_path_stress_test.cc) checks the library's counters exactly once all threads
// joined; where the outcome depends on the interleaving (a late duplicate lands before or after
// the completion), the ledger bounds it.
//
// The metrics layer rather than the built module's ncclProfiler_v*: the runtime reports a
// communicator up to its finalize (the last export it is in), so what completes after it, the
// case here, can only be read inside. The exported entries are stateless adapters onto this
// layer; tests/profiler drives them from several threads under TSan too.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <tuple>
#include <vector>

#include "pilot/metrics/comm_monitor.h"
#include "pilot/metrics/event_path.h"
#include "pilot/metrics/runtime.h"

namespace pilot::metrics::stress {

using Rng = std::mt19937_64;

inline unsigned below(Rng& rng, uint64_t n) {
  return static_cast<unsigned>(rng() % n);
}
inline bool oneIn(Rng& rng, uint64_t n) {
  return rng() % n == 0;
}

/// A measured operation's aggregate key as the test knows it (a power-of-two size each).
struct OpKey {
  Operation op = Operation::AllReduce;
  uint64_t bytes = 0;
  uint8_t algorithm = 0, protocol = 0, channels = 0;
  bool operator<(const OpKey& o) const {
    return std::tie(op, bytes, algorithm, protocol, channels) <
           std::tie(o.op, o.bytes, o.algorithm, o.protocol, o.channels);
  }
};

/// One operation as its start event left it.
struct Started {
  void* handle = nullptr;
  /// What the description makes the library count instead of measuring it; none with a null
  /// handle means the pool was full (NoSlot).
  std::optional<Skip> skip;
  unsigned channels = 0;  ///< kernel channels NCCL reports for it (its handle as their parent)
  OpKey key;
};

/// One kind of NCCL operation whose kernel channels report as KernelCh children of its start
/// event: collectives now; P2P (ncclProfileP2p) is a second kind of the same shape. The stop of
/// the operation and its channels' events are the same for every kind.
class OperationKind {
 public:
  virtual ~OperationKind() = default;
  /// Starts one operation on `comm` as NCCL's application thread does, with a description drawn
  /// from `rng` (a defective one now and then).
  virtual Started start(EventPath& path, CommMonitor& comm, Rng& rng) const = 0;
  /// The aggregate key the library files `key` under.
  virtual KeyFields fieldsOf(const OpKey& key) const = 0;
};

/// Collectives (ncclProfileColl; stress_collectives.cc): 24 valid descriptions with a key each,
/// and descriptions with one defect each. Needs the runtime's settings
/// NCCL_PILOT_METRICS_SAMPLE=kSample and NCCL_PILOT_METRICS_MIN_BYTES=kMinBytes.
class Collectives final : public OperationKind {
 public:
  static constexpr uint64_t kSample = 4, kMinBytes = 64;
  Started start(EventPath& path, CommMonitor& comm, Rng& rng) const override;
  KeyFields fieldsOf(const OpKey& key) const override;
};

struct KeyLedger {
  uint64_t calls = 0, timeNs = 0, bytes = 0, minNs = UINT64_MAX, maxNs = 0;
  void add(uint64_t ns, uint64_t messageBytes);
  void merge(const KeyLedger& o);
};

struct CommLedger {
  uint64_t started = 0, measured = 0;
  /// Per skip reason; IgnoredKernel holds those fed while the operation was surely in flight.
  uint64_t skipped[static_cast<int>(Skip::Count)] = {};
  /// Second starts of a channel racing the operation's completion: each counts once, as
  /// IgnoredKernel (in flight) or Stale (completed).
  uint64_t lateStarts = 0;
  std::map<OpKey, KeyLedger> keys;
  void merge(const CommLedger& o);
};

struct Ledger {
  std::map<uint32_t, CommLedger> comms;  ///< by the test's communicator number
  uint64_t foreignFed = 0;  ///< pointer-like garbage given to start, record or stop: Foreign each
  uint64_t staleFed = 0;    ///< handles of operations known to have completed: Stale each
  uint64_t lateOther = 0;   ///< stops and stop states racing the completion: Stale or nothing
  uint64_t inFlightAtClose = 0;  ///< operations unfinished when their communicator was closed
  uint64_t events = 0;           ///< calls into the event path
  void merge(const Ledger& o);
};

struct Options {
  unsigned appThreads = 3, proxyThreads = 3;
  /// Per application thread: 1 or 2 communicators opened, used and finalized, this many times.
  unsigned lifetimes = 4;
  unsigned opsPerLifetime = 500;  ///< operations started in one lifetime (over its comms)
  size_t queueLimit = 256;        ///< operations waiting for a proxy before the host waits
  uint64_t seed = 1;
};

/// A communicator the test keeps a reference on (CommMonitor::retain) to read it at the end.
struct ObservedComm {
  uint32_t number = 0;
  CommMonitor* monitor = nullptr;
};

struct Outcome {
  Ledger ledger;
  std::vector<ObservedComm> observed;  ///< the caller releases them
  uint32_t comms = 0;                  ///< communicators opened
  uint64_t renders = 0;                ///< exports by the renderer thread
  double seconds = 0;
};

/// Runs the scenario on `runtime` (settings as Collectives needs, a metrics directory, a short
/// interval); every thread has joined and every operation completed when it returns.
Outcome run(MetricsRuntime& runtime, const Options& options,
            const std::vector<const OperationKind*>& kinds);

}  // namespace pilot::metrics::stress
