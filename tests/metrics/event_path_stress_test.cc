// The profiler under load (event_stress.h): once every thread joined and every operation
// completed, the library's counters are what the threads' ledgers say, exactly where the order
// of events cannot change them and within the ledger's bounds where it can; every slot is back
// in the pool. TSan (tsan preset) watches for races, ASan and LeakSanitizer (asan preset) for
// use after free and communicators never freed. PILOT_STRESS_ROUNDS=N runs the scenario N times
// (default 1, about 10 s under TSan on 2 cores), each round checked; PILOT_STRESS_SEED repeats a
// run's draws.
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

/// The communicator's keys hold exactly the calls the ledger timed, each with its GPU time.
void expectKeys(const CommMonitor& m, const stress::CommLedger& e,
                const stress::OperationKind& kind) {
  std::map<uint64_t, KeyTotals> got;
  for (const CommMonitor::KeyView& v : m.keys()) {
    EXPECT_FALSE(v.other) << v.totals.calls << " calls share the key past the cap";
    got[v.fields.pack()] = v.totals;
  }
  for (const auto& [key, k] : e.keys) {
    auto it = got.find(kind.fieldsOf(key).pack());
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
    if (k.calls == 0) continue;
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

/// Every check of one round, once its threads joined; `before` is the pool's orphan counts
/// before it.
void expectCountersAddUp(const stress::Outcome& out, const uint64_t before[],
                         const stress::OperationKind& kind) {
  const EventPath& path = EventPath::process();
  const stress::Ledger& l = out.ledger;
  // Every operation completed, so every slot is back in the pool, whatever order the events
  // came in and though every communicator was finalized with operations in flight.
  EXPECT_EQ(path.slotsInUse(), 0u);
  // Pointer-like garbage is foreign, every time, on every entry.
  EXPECT_EQ(path.orphans(Orphan::Foreign) - before[static_cast<int>(Orphan::Foreign)],
            l.foreignFed);

  uint64_t lateStarts = 0, noSlot = 0;
  for (const auto& [number, c] : l.comms) {
    lateStarts += c.lateStarts;
    noSlot += c.skipped[static_cast<int>(Skip::NoSlot)];
  }
  uint64_t lateStartsObserved = 0, lateStartsIgnored = 0;
  for (const stress::ObservedComm& o : out.observed) {
    SCOPED_TRACE("communicator " + std::to_string(o.number));
    const auto found = l.comms.find(o.number);
    const stress::CommLedger e = found != l.comms.end() ? found->second : stress::CommLedger{};
    const CommMonitor& m = *o.monitor;
    EXPECT_EQ(m.seen(), e.started);
    EXPECT_EQ(m.measured(), e.measured);
    // The counters alone add up: every operation started is measured or skipped for one reason.
    uint64_t accounted = m.measured();
    for (int s = 0; s < static_cast<int>(Skip::Count); ++s) {
      if (static_cast<Skip>(s) == Skip::IgnoredKernel) continue;  // kernel events, not operations
      EXPECT_EQ(m.skipped(static_cast<Skip>(s)), e.skipped[s]) << skipName(static_cast<Skip>(s));
      accounted += m.skipped(static_cast<Skip>(s));
    }
    EXPECT_EQ(accounted, m.seen());
    // Kernel events ignored: every one sent while its operation was surely in flight, and
    // those of the racing second starts that found it still in flight.
    const uint64_t ignored = m.skipped(Skip::IgnoredKernel);
    const uint64_t exact = e.skipped[static_cast<int>(Skip::IgnoredKernel)];
    EXPECT_GE(ignored, exact);
    EXPECT_LE(ignored, exact + e.lateStarts);
    lateStartsObserved += e.lateStarts;
    lateStartsIgnored += ignored >= exact ? ignored - exact : 0;
    expectKeys(m, e, kind);
    expectSamples(m, e);
  }
  // Stale: every handle of an operation known to have completed, every racing second start on
  // an observed communicator that did not find its operation in flight (each counts once, as
  // ignored or stale); the racing events on the other communicators and the racing stops and
  // stop states may each add one, or nothing.
  const uint64_t stale = path.orphans(Orphan::Stale) - before[static_cast<int>(Orphan::Stale)];
  const int64_t unexplained = static_cast<int64_t>(stale + lateStartsIgnored) -
                              static_cast<int64_t>(l.staleFed + lateStartsObserved);
  EXPECT_GE(unexplained, 0) << stale << " stale";
  EXPECT_LE(unexplained, static_cast<int64_t>(lateStarts - lateStartsObserved + l.lateOther))
      << stale << " stale";

  // What the scenario is about happened (the figures vary from run to run).
  EXPECT_GT(l.inFlightAtClose, 0u) << "no communicator was finalized with operations in flight";
  EXPECT_GT(noSlot, 0u) << "the pool never ran out of slots";
  EXPECT_GT(lateStarts + l.lateOther, 0u);
  EXPECT_GT(l.staleFed, 0u);
  EXPECT_GT(out.renders, 0u);
  EXPECT_FALSE(out.observed.empty());
}

void printFigures(unsigned round, const stress::Outcome& out, unsigned threads) {
  const stress::Ledger& l = out.ledger;
  uint64_t started = 0, measured = 0, lateStarts = 0;
  for (const auto& [number, c] : l.comms) {
    started += c.started;
    measured += c.measured;
    lateStarts += c.lateStarts;
  }
  std::printf(
      "stress round %u: %u communicators (%zu read back), %llu operations (%llu measured), %llu "
      "in flight at their finalize; %llu garbage, %llu stale, %llu racing late events; %llu "
      "exports; %llu events in %.2f s: %.0f events/s per thread (%u threads)\n",
      round, out.comms, out.observed.size(), static_cast<unsigned long long>(started),
      static_cast<unsigned long long>(measured), static_cast<unsigned long long>(l.inFlightAtClose),
      static_cast<unsigned long long>(l.foreignFed), static_cast<unsigned long long>(l.staleFed),
      static_cast<unsigned long long>(lateStarts + l.lateOther),
      static_cast<unsigned long long>(out.renders), static_cast<unsigned long long>(l.events),
      out.seconds, static_cast<double>(l.events) / out.seconds / threads, threads);
}

TEST(ProfilerUnderLoad, CountersAddUpWhateverTheOrderOfEvents) {
  const unsigned rounds = roundsFromEnv();
  const uint64_t seed = seedFromEnv();
  std::printf(
      "stress: %u round(s), seed %llu (PILOT_STRESS_SEED repeats the draws, not the "
      "interleavings)\n",
      rounds, static_cast<unsigned long long>(seed));
  stress::Collectives collectives;
  for (unsigned round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // A process's communicators over time: one runtime per round (its summary keeps every
    // finalized communicator, so a round's exports stay as large as one round makes them), one
    // pool for them all.
    test::TempDir dir;
    MetricsRuntime runtime(
        test::mapEnv({{setting::kDir, dir.path()},
                      {setting::kInterval, "1"},
                      {setting::kSample, std::to_string(stress::Collectives::kSample)},
                      {setting::kMinBytes, std::to_string(stress::Collectives::kMinBytes)}}));
    const EventPath& path = EventPath::process();
    ASSERT_EQ(path.slotsInUse(), 0u);
    uint64_t before[static_cast<int>(Orphan::Count)];
    for (int o = 0; o < static_cast<int>(Orphan::Count); ++o) {
      before[o] = path.orphans(static_cast<Orphan>(o));
    }
    stress::Options options;
    options.seed = seed + round;
    const stress::Outcome out = stress::run(runtime, options, {&collectives});
    expectCountersAddUp(out, before, collectives);
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
