// The profiler under load (event_stress.h), collectives and Send/Recv in groups on the same
// communicators: once every thread joined and every task completed, the library's counters are
// what the threads' ledgers say, exactly where the order of events cannot change them and within
// the ledger's bounds where it can; every slot and every group entry is back in the pool. TSan
// (tsan preset) watches for races, ASan and LeakSanitizer (asan preset) for use after free and
// communicators never freed. PILOT_STRESS_ROUNDS=N runs the scenario N times (default 1: about a
// second in release, 7 to 20 s under TSan on 2 busy cores, most of it rendering the exports),
// each round checked; PILOT_STRESS_SEED repeats a run's draws.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "event_stress.h"
#include "test_support.h"

namespace pilot::metrics {
namespace {

unsigned roundsFromEnv() {
  const char* v = std::getenv("PILOT_STRESS_ROUNDS");
  return v != nullptr ? static_cast<unsigned>(std::max(1L, std::strtol(v, nullptr, 10))) : 1;
}

uint64_t seedFromEnv() {
  const char* v = std::getenv("PILOT_STRESS_SEED");
  return v != nullptr
             ? std::strtoull(v, nullptr, 10)
             : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

/// The communicator's keys hold exactly the calls the ledger timed, each with its GPU time
/// (collectives and Send/Recv by their own time, grouped all-to-alls by their span).
void expectKeys(const CommMonitor& m, const stress::CommLedger& e) {
  std::map<uint64_t, KeyTotals> got;
  for (const CommMonitor::KeyView& v : m.keys()) {
    EXPECT_FALSE(v.other) << v.totals.calls << " calls share the key past the cap";
    got[v.fields.pack()] = v.totals;
  }
  std::map<uint64_t, std::pair<stress::OpKey, stress::KeyLedger>> want;  // by the library's key
  for (const auto& [key, k] : e.keys) {
    auto& [example, sum] = want[stress::fieldsOf(key).pack()];
    example = key;
    sum.merge(k);
  }
  for (const auto& [packed, expected] : want) {
    const auto& [key, k] = expected;
    auto it = got.find(packed);
    if (it == got.end()) {
      ADD_FAILURE() << "no key for " << operationName(key.op) << " of " << key.bytes << " bytes";
      continue;
    }
    const KeyTotals& t = it->second;
    EXPECT_EQ(t.calls, k.calls);
    EXPECT_EQ(t.timeNs, k.timeNs);
    EXPECT_EQ(t.messageBytes, k.bytes);
    EXPECT_EQ(t.minNs, k.minNs);
    EXPECT_EQ(t.maxNs, k.maxNs);
    EXPECT_EQ(t.busCalls, k.calls);
    uint64_t binned = 0;
    for (uint64_t b : t.bins) binned += b;
    EXPECT_EQ(binned, k.calls);
    got.erase(it);
  }
  // Keys of operations that ended untimed are inserted at their start and hold no call.
  for (const auto& [packed, t] : got) EXPECT_EQ(t.calls, 0u) << "key " << packed;
}

/// The calibration samples hold the same calls by exact size.
void expectSamples(const CommMonitor& m, const stress::CommLedger& e) {
  std::map<stress::OpKey, CallSamples::View> got;
  for (CallSamples::View& v : m.samples().snapshot()) {
    const stress::OpKey key{v.key.op, v.key.messageBytes, v.key.algorithm, v.key.protocol,
                            v.key.channels};
    got[key] = std::move(v);
  }
  EXPECT_EQ(m.samples().overflow(), 0u);
  for (const auto& [key, k] : e.keys) {
    // Collectives only: Send/Recv and grouped all-to-alls are not calibrated per call.
    if (k.calls == 0 || isPointToPoint(key.op) || key.algorithm == kGroupedP2pAlgorithm) continue;
    auto it = got.find(key);
    if (it == got.end()) {
      ADD_FAILURE() << "no samples for " << operationName(key.op) << " of " << key.bytes;
      continue;
    }
    EXPECT_EQ(it->second.calls, k.calls);
    EXPECT_EQ(it->second.sumNs, k.timeNs);
    EXPECT_EQ(it->second.minNs, k.minNs);
    EXPECT_EQ(it->second.maxNs, k.maxNs);
    got.erase(it);
  }
  EXPECT_TRUE(got.empty()) << got.size() << " sample keys nothing measured";
}

/// One kind's counters on one communicator: every task started is measured or skipped for one
/// reason, as the ledger says; kernel events ignored are those sent while the task was surely
/// in flight, and those of the racing second starts that found it still in flight.
/// Returns the racing second starts counted as ignored.
uint64_t expectTaskCounters(const CommMonitor& m, const stress::TaskLedger& e, TaskKind kind) {
  SCOPED_TRACE(kind == TaskKind::P2p ? "Send/Recv" : "collectives");
  EXPECT_EQ(m.seen(kind), e.started);
  EXPECT_EQ(m.measured(kind), e.measured);
  uint64_t accounted = m.measured(kind);
  for (int s = 0; s < static_cast<int>(Skip::Count); ++s) {
    if (static_cast<Skip>(s) == Skip::IgnoredKernel) continue;  // kernel events, not tasks
    EXPECT_EQ(m.skipped(static_cast<Skip>(s), kind), e.skipped[s])
        << skipName(static_cast<Skip>(s));
    accounted += m.skipped(static_cast<Skip>(s), kind);
  }
  EXPECT_EQ(accounted, m.seen(kind));
  const uint64_t ignored = m.skipped(Skip::IgnoredKernel, kind);
  const uint64_t exact = e.skipped[static_cast<int>(Skip::IgnoredKernel)];
  EXPECT_GE(ignored, exact);
  EXPECT_LE(ignored, exact + e.lateStarts);
  return ignored >= exact ? ignored - exact : 0;
}

/// Every group a Send/Recv joined has one outcome: Untracked when it found no entry (the host
/// saw the count move), else AlltoAll exactly when the ledger knows it a full exchange with
/// every member measured, else Partial. The peers are the ranks in the communicator that the
/// Send/Recv the library parsed named.
void expectGroups(const CommMonitor& m, const stress::CommLedger& e) {
  EXPECT_EQ(m.groups(GroupOutcome::AlltoAll), e.alltoalls);
  EXPECT_EQ(m.groups(GroupOutcome::Untracked), e.groupsUntracked);
  EXPECT_EQ(m.groups(GroupOutcome::Partial), e.groupsJoined - e.alltoalls - e.groupsUntracked);
  uint64_t outcomes = 0;
  for (int o = 0; o < static_cast<int>(GroupOutcome::Count); ++o) {
    outcomes += m.groups(static_cast<GroupOutcome>(o));
  }
  EXPECT_EQ(outcomes, e.groupsJoined);
  EXPECT_EQ(m.peers(Operation::Send), e.sentTo.size());
  EXPECT_EQ(m.peers(Operation::Recv), e.receivedFrom.size());
}

/// Every check of one round, once its threads joined; `before` is the pool's orphan counts
/// before it.
void expectCountersAddUp(const stress::Outcome& out, const uint64_t before[]) {
  const EventPath& path = EventPath::process();
  const stress::Ledger& l = out.ledger;
  // Every task completed, so every slot is back in the pool and every group entry free,
  // whatever order the events came in and though every communicator was finalized with tasks
  // and groups in flight.
  EXPECT_EQ(path.slotsInUse(), 0u);
  EXPECT_EQ(path.groupsInUse(), 0u);
  // Pointer-like garbage, and group handles given as a parent or a channel's, are foreign,
  // every time, on every entry.
  EXPECT_EQ(path.orphans(Orphan::Foreign) - before[static_cast<int>(Orphan::Foreign)],
            l.foreignFed);

  uint64_t lateStarts = 0, noSlot = 0, untracked = 0, alltoalls = 0, partial = 0;
  for (const auto& [number, c] : l.comms) {
    for (const stress::TaskLedger& t : c.tasks) {
      lateStarts += t.lateStarts;
      noSlot += t.skipped[static_cast<int>(Skip::NoSlot)];
    }
    untracked += c.groupsUntracked;
    alltoalls += c.alltoalls;
    partial += c.groupsJoined - c.alltoalls - c.groupsUntracked;
  }
  uint64_t lateStartsObserved = 0, lateStartsIgnored = 0;
  for (const stress::ObservedComm& o : out.observed) {
    SCOPED_TRACE("communicator " + std::to_string(o.number));
    const auto found = l.comms.find(o.number);
    const stress::CommLedger e = found != l.comms.end() ? found->second : stress::CommLedger{};
    const CommMonitor& m = *o.monitor;
    for (TaskKind kind : {TaskKind::Collective, TaskKind::P2p}) {
      lateStartsIgnored += expectTaskCounters(m, e.of(kind), kind);
      lateStartsObserved += e.of(kind).lateStarts;
    }
    expectGroups(m, e);
    expectKeys(m, e);
    expectSamples(m, e);
  }
  // Stale: every handle of a task known to have completed, every racing second start on an
  // observed communicator that did not find its task in flight (each counts once, as ignored
  // or stale); the racing events on the other communicators and the racing stops and stop
  // states may each add one, or nothing.
  const uint64_t stale = path.orphans(Orphan::Stale) - before[static_cast<int>(Orphan::Stale)];
  const int64_t unexplained = static_cast<int64_t>(stale + lateStartsIgnored) -
                              static_cast<int64_t>(l.staleFed + lateStartsObserved);
  EXPECT_GE(unexplained, 0) << stale << " stale";
  EXPECT_LE(unexplained, static_cast<int64_t>(lateStarts - lateStartsObserved + l.lateOther))
      << stale << " stale";

  // What the scenario is about happened (the figures vary from run to run).
  EXPECT_GT(l.inFlightAtClose, 0u) << "no communicator was finalized with tasks in flight";
  EXPECT_GT(l.p2pInFlightAtClose, 0u) << "nor with Send/Recv in flight";
  EXPECT_GT(l.groupsInFlightAtClose, 0u) << "nor with groups in flight";
  EXPECT_GT(l.beforeHostStop, 0u) << "no kernel channel came before its task's stop on the host";
  EXPECT_GT(noSlot, 0u) << "the pool never ran out of slots";
  EXPECT_GT(untracked, 0u) << "the group table never ran out of entries";
  EXPECT_GT(alltoalls, 0u) << "no group was one AlltoAll";
  EXPECT_GT(partial, 0u) << "no group was partial";
  EXPECT_GT(lateStarts + l.lateOther, 0u);
  EXPECT_GT(l.staleFed, 0u);
  EXPECT_GT(out.renders, 0u);
  EXPECT_FALSE(out.observed.empty());
}

void printFigures(unsigned round, const stress::Outcome& out, unsigned threads) {
  const stress::Ledger& l = out.ledger;
  uint64_t started[2] = {}, measured[2] = {}, lateStarts = 0, groups = 0, alltoalls = 0,
           untracked = 0;
  for (const auto& [number, c] : l.comms) {
    for (int k = 0; k < 2; ++k) {
      started[k] += c.tasks[k].started;
      measured[k] += c.tasks[k].measured;
      lateStarts += c.tasks[k].lateStarts;
    }
    groups += c.groupsJoined;
    alltoalls += c.alltoalls;
    untracked += c.groupsUntracked;
  }
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf(
      "stress round %u: %u communicators (%zu read back), %llu collectives (%llu measured), %llu "
      "Send/Recv (%llu measured) in %llu groups (%llu AlltoAll, %llu untracked), %llu kernel "
      "channels before the host's stop; %llu tasks "
      "(%llu Send/Recv, %llu groups) in flight at their finalize; %llu garbage, %llu stale, %llu "
      "racing late events; %llu exports; %llu events in %.2f s: %.0f events/s per thread (%u "
      "threads)\n",
      round, out.comms, out.observed.size(), u(started[0]), u(measured[0]), u(started[1]),
      u(measured[1]), u(groups), u(alltoalls), u(untracked), u(l.beforeHostStop),
      u(l.inFlightAtClose), u(l.p2pInFlightAtClose), u(l.groupsInFlightAtClose), u(l.foreignFed),
      u(l.staleFed), u(lateStarts + l.lateOther), u(out.renders), u(l.events), out.seconds,
      static_cast<double>(l.events) / out.seconds / threads, threads);
}

TEST(ProfilerUnderLoad, CountersAddUpWhateverTheOrderOfEvents) {
  const unsigned rounds = roundsFromEnv();
  const uint64_t seed = seedFromEnv();
  std::printf(
      "stress: %u round(s), seed %llu (PILOT_STRESS_SEED repeats the draws, not the "
      "interleavings)\n",
      rounds, static_cast<unsigned long long>(seed));
  const stress::Collectives collectives;
  const stress::PointToPoint p2p;
  for (unsigned round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // A process's communicators over time: one runtime per round, one pool for them all. The
    // runtime keeps a finalized communicator's tasks in flight until their events come (NCCL
    // sends none after the finalize; the default lets go of them): the ledgers then know every
    // count exactly. Letting go at the finalize is the next test's.
    test::TempDir dir;
    MetricsRuntime runtime(test::mapEnv({{setting::kDir, dir.path()},
                                         {setting::kInterval, "1"},
                                         {setting::kSample, std::to_string(stress::kSample)},
                                         {setting::kMinBytes, std::to_string(stress::kMinBytes)}}),
                           /*abandonAtFinalize=*/false);
    const EventPath& path = EventPath::process();
    ASSERT_EQ(path.slotsInUse(), 0u);
    ASSERT_EQ(path.groupsInUse(), 0u);
    uint64_t before[static_cast<int>(Orphan::Count)];
    for (int o = 0; o < static_cast<int>(Orphan::Count); ++o) {
      before[o] = path.orphans(static_cast<Orphan>(o));
    }
    stress::Options options;
    options.seed = seed + round;
    const stress::Outcome out = stress::run(runtime, options, {&collectives, &p2p});
    expectCountersAddUp(out, before);
    printFigures(round, out, options.appThreads + options.proxyThreads);
    for (const stress::ObservedComm& o : out.observed) o.monitor->release();
    // The runtime's two files (written beside their names, renamed over) go with the folder.
    for (const std::string& file : {runtime.textfilePath(), runtime.summaryPath()}) {
      dir.file(file.substr(dir.path().size() + 1));
    }
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace pilot::metrics
