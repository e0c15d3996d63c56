// The profiler under load: NCCL's profiler events for many communicators from many threads at
// once, on the metrics layer as plugin/profiler/exports.cc drives it (EventPath::process(), the
// CommMonitors a MetricsRuntime opens and closes, its exporter). Application threads open
// communicators, launch kernel plans (a collective, or a group of Send/Recv operations), stop
// their tasks (at once, after the proxies have them, or later on a proxy thread), and finalize
// each communicator while its tasks and groups are still in flight; proxy threads take the tasks
// of every communicator from one queue and report their kernel channels (by NCCL's channel ids)
// in any order, spread over several threads, before or after the task's own stop; a renderer
// exports meanwhile. On top of NCCL's events they send what NCCL should not: channels the task
// does not have, second starts and stops, stops without a GPU time, handles of tasks that
// completed (of communicators that may be gone), group handles stopped twice, on another thread
// or given as a kernel channel's parent, pointer-like garbage, and late duplicates that race the
// task's completion (sent again by the proxy, or by one more thread that never synchronizes with
// the others, so that TSan sees its accesses unordered with the next use of the slot).
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
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
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

/// The runtime's settings every kind's descriptions assume: NCCL_PILOT_METRICS_SAMPLE and
/// NCCL_PILOT_METRICS_MIN_BYTES.
constexpr uint64_t kSample = 4, kMinBytes = 64;

/// A measured operation's aggregate key as the test knows it.
struct OpKey {
  Operation op = Operation::AllReduce;
  uint64_t bytes = 0;
  uint8_t algorithm = 0, protocol = 0, channels = 0;
  bool operator<(const OpKey& o) const {
    return std::tie(op, bytes, algorithm, protocol, channels) <
           std::tie(o.op, o.bytes, o.algorithm, o.protocol, o.channels);
  }
};
/// The aggregate key the library files `key` under (keys of one size bucket share it).
KeyFields fieldsOf(const OpKey& key);

/// A kernel channel as the GPU ran it: NCCL's channel id, its GPU times, and whether the proxy
/// sends a KernelChStop state before the stop.
struct ChannelPlan {
  unsigned id = 0;
  uint64_t start = 0, stop = 0;
  bool record = true;
};

/// One task (a collective, a Send, a Recv) as its start event left it.
struct Started {
  void* handle = nullptr;
  /// What the description makes the library count instead of measuring it; none with a null
  /// handle means the pool was full (NoSlot).
  std::optional<Skip> skip;
  TaskKind kind = TaskKind::Collective;
  OpKey key;
  /// The kernel channels NCCL reports for it (its handle as their parent; null when it was not
  /// measured), from planChannels().
  std::vector<ChannelPlan> channels;
  bool timed = true;         ///< every channel has a usable GPU stop time
  bool stopped = false;      ///< the host sent its stop before handing it to the proxies
  bool stopPending = false;  ///< the host sends its stop after that (Launch::afterHandOver)
  bool inGroup = false;      ///< it joined a group entry (its reference holds the group)
};

/// GPU times for kernel channels with NCCL's `ids`; one task in eight has a channel without a
/// usable stop time (no KernelChStop state, or one no later than the start): `timed` false.
void planChannels(const std::vector<unsigned>& ids, Rng& rng, Started* task);

/// The longest channel of a timed task: what the library adds to its key.
uint64_t longestChannel(const Started& task);

/// What one launch (a kernel plan) did on the host.
struct Launch {
  std::vector<Started> tasks;
  uint64_t events = 0;  ///< calls into the event path
  /// The host events left until the proxies have the tasks (their stops race the kernel
  /// channels then): the stops of the tasks marked stopPending, the group's; returns how many
  /// calls it made.
  std::function<uint64_t(EventPath&)> afterHandOver;
  std::vector<void*> groups;       ///< group handles it opened, for other threads' mischief
  void* strayGroupStop = nullptr;  ///< a group whose stop the host lost: a proxy sends it
};

struct KeyLedger {
  uint64_t calls = 0, timeNs = 0, bytes = 0, minNs = UINT64_MAX, maxNs = 0;
  void add(uint64_t ns, uint64_t messageBytes);
  void merge(const KeyLedger& o);
};

/// One task kind's counters (TaskKind).
struct TaskLedger {
  uint64_t started = 0, measured = 0;
  /// Per skip reason; IgnoredKernel holds those fed while the task was surely in flight.
  uint64_t skipped[static_cast<int>(Skip::Count)] = {};
  /// Second starts of a channel racing the task's completion: each counts once, as
  /// IgnoredKernel (in flight) or Stale (completed).
  uint64_t lateStarts = 0;
  void merge(const TaskLedger& o);
};

struct CommLedger {
  TaskLedger tasks[2];  ///< by TaskKind
  std::map<OpKey, KeyLedger> keys;
  /// Groups a Send/Recv joined (reached the group table with the open group as its parent),
  /// those that found no free entry (Untracked), and those the library must time as one
  /// AlltoAll; the rest are Partial.
  uint64_t groupsJoined = 0, groupsUntracked = 0, alltoalls = 0;
  std::set<int> sentTo, receivedFrom;  ///< peers in the communicator, itself excluded
  TaskLedger& of(TaskKind k) { return tasks[static_cast<int>(k)]; }
  const TaskLedger& of(TaskKind k) const { return tasks[static_cast<int>(k)]; }
  void merge(const CommLedger& o);
};

/// One kind of NCCL task whose kernel channels report as KernelCh children of its start event.
/// The stop of the task and its channels' events are the same for every kind.
class OperationKind {
 public:
  virtual ~OperationKind() = default;
  /// Launches one kernel plan on `comm` as NCCL's application thread does, with descriptions
  /// drawn from `rng` (a defective one now and then); what only the kind knows (its groups)
  /// goes to `ledger`, its tasks to the harness. `flood`: the host holds every task until the
  /// pool runs dry, so the kind keeps its tasks' stops on the host and its plans small.
  virtual Launch start(EventPath& path, CommMonitor& comm, Rng& rng, CommLedger& ledger,
                       bool flood) const = 0;
  /// The host is about to finalize `comm` and the other communicators of a lifetime; `last`:
  /// the thread's last lifetime. Returns the calls it made into the event path.
  virtual uint64_t beforeFinalize(EventPath&, CommMonitor&, Rng&, bool /*last*/) const { return 0; }
};

/// Collectives (ncclProfileColl; stress_collectives.cc): 24 valid descriptions with a key each,
/// and descriptions with one defect each, on channels 0 .. n - 1; three in four stopped at once,
/// the others by a proxy.
class Collectives final : public OperationKind {
 public:
  Launch start(EventPath& path, CommMonitor& comm, Rng& rng, CommLedger& ledger,
               bool flood) const override;
};

/// Send and Recv (ncclProfileP2p; stress_p2p.cc) in NCCL's groups: all-to-all exchanges, partial
/// groups, operations outside a group, with NCCL's spread channel ids, groups sampled whole,
/// group handles stopped twice, lost to another thread or given as a stale parent.
class PointToPoint final : public OperationKind {
 public:
  Launch start(EventPath& path, CommMonitor& comm, Rng& rng, CommLedger& ledger,
               bool flood) const override;
  uint64_t beforeFinalize(EventPath& path, CommMonitor& comm, Rng& rng, bool last) const override;
};

struct Ledger {
  std::map<uint32_t, CommLedger> comms;  ///< by the test's communicator number
  uint64_t foreignFed = 0;  ///< pointer-like garbage given to start, record or stop: Foreign each
  uint64_t staleFed = 0;    ///< handles of tasks known to have completed: Stale each
  uint64_t lateOther = 0;   ///< stops and stop states racing the completion: Stale or nothing
  uint64_t inFlightAtClose = 0;  ///< tasks unfinished when their communicator was closed
  /// Send/Recv among them, and the groups their entries held.
  uint64_t p2pInFlightAtClose = 0, groupsInFlightAtClose = 0;
  uint64_t beforeHostStop = 0;  ///< kernel channels started before the host stopped their task
  uint64_t events = 0;          ///< calls into the event path
  void merge(const Ledger& o);
};

struct Options {
  unsigned appThreads = 3, proxyThreads = 3;
  /// Per application thread: 1 or 2 communicators opened, used and finalized, this many times.
  unsigned lifetimes = 4;
  unsigned opsPerLifetime = 500;  ///< tasks started in one lifetime (over its comms)
  size_t queueLimit = 256;        ///< tasks waiting for a proxy before the host waits
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

/// Runs the scenario on `runtime` (settings kSample and kMinBytes, a metrics directory, a short
/// interval), each launch of a kind drawn from `kinds`; every thread has joined and every task
/// completed when it returns.
Outcome run(MetricsRuntime& runtime, const Options& options,
            const std::vector<const OperationKind*>& kinds);

}  // namespace pilot::metrics::stress
