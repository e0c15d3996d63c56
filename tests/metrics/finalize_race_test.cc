// Finalize racing the proxies. Application threads open communicators through a MetricsRuntime
// (which lets go of a communicator's tasks in flight at its finalize, as it does in the
// library), launch collectives and groups of Send/Recv, and finalize each communicator while its
// tasks wait in a queue; proxy threads report the kernels before, during and after that
// finalize. Which way each race goes cannot be known, but what the library counts must add up:
// every task seen is measured or skipped for exactly one reason, the pool and the group table
// are empty at the end, no communicator keeps a reference it should not (the ones the test does
// not hold are freed: LeakSanitizer in the asan preset), and events after a finalize are stale.
// TSan (tsan preset) watches the races themselves.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "event_helpers.h"
#include "pilot/metrics/runtime.h"
#include "test_support.h"

namespace pilot::metrics {
namespace {

struct Work {
  void* task;
  unsigned channels;
};

class Queue {
 public:
  void push(Work w) {
    std::lock_guard<std::mutex> lock(mutex_);
    items_.push_back(w);
    ready_.notify_one();
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    ready_.notify_all();
  }
  bool pop(Work* w) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return done_ || !items_.empty(); });
    if (items_.empty()) return false;
    *w = items_.front();
    items_.pop_front();
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Work> items_;
  bool done_ = false;
};

constexpr int kRanks = 4;

TEST(ProfilerUnderLoad, FinalizeRacingTheProxiesGivesEverythingBack) {
  test::TempDir dir;
  MetricsRuntime runtime(test::mapEnv({{setting::kDir, dir.path()}, {setting::kInterval, "1"}}));
  EventPath& path = EventPath::process();
  ASSERT_EQ(path.slotsInUse(), 0u);
  const uint64_t staleBefore = path.orphans(Orphan::Stale);
  Queue queue;
  std::mutex observedMutex;
  std::vector<CommMonitor*> observed;
  std::atomic<uint64_t> comms{0};

  auto app = [&](unsigned index) {
    std::mt19937_64 rng(1234 + index);
    for (int lifetime = 0; lifetime < 60; ++lifetime) {
      CommIdentity id;
      id.commId = 0xf1000 + comms.fetch_add(1);
      id.name = "race";
      id.nRanks = kRanks;
      id.rank = static_cast<int>(index % kRanks);
      CommMonitor* comm = runtime.open(id, nullptr);
      ASSERT_NE(comm, nullptr);
      if (rng() % 2 == 0) {
        comm->retain();  // read at the end; the others are freed by whoever lets go last
        std::lock_guard<std::mutex> lock(observedMutex);
        observed.push_back(comm);
      }
      for (int launch = 0; launch < 12; ++launch) {
        if (rng() % 3 != 0) {
          const unsigned channels = 1 + static_cast<unsigned>(rng() % 4);
          void* task = events::startAllReduce(path, *comm, channels, static_cast<uint64_t>(launch),
                                              1 << 14, "LL");
          if (rng() % 4 != 0) path.stop(task);  // else the host's stop is lost too
          if (task != nullptr) queue.push({task, channels});
          continue;
        }
        // [v5+] a user group over two plans exchanging with every other rank.
        void* user = path.startGroupApi(*comm);
        for (int plan = 0; plan < 2; ++plan) {
          void* group = path.startGroup(*comm);
          for (int peer = 0; peer < kRanks; ++peer) {
            if (peer == id.rank || peer % 2 != plan) continue;
            for (const char* func : {"Send", "Recv"}) {
              void* task = events::startSendRecv(path, *comm, func, peer, group,
                                                 EventPath::startP2pApi(user), 4096, 2);
              path.stop(task);
              if (task != nullptr) queue.push({task, 2});
            }
          }
          path.stop(group);
        }
        path.stop(user);
      }
      if (rng() % 2 == 0) std::this_thread::yield();
      runtime.close(comm);  // its tasks may be anywhere between the queue and done
    }
  };

  auto proxy = [&](unsigned index) {
    std::mt19937_64 rng(99 + index);
    Work w;
    uint64_t clock = 1'000'000;
    while (queue.pop(&w)) {
      for (unsigned ch = 0; ch < w.channels; ++ch) {
        void* k = path.startKernelChannel(w.task, ch, clock);
        if (rng() % 8 == 0) std::this_thread::yield();
        path.recordKernelChannelStop(k, clock + 1'000 + rng() % 5'000);
        path.stop(k);
      }
      clock += 10'000;
    }
  };

  std::vector<std::thread> proxies, apps;
  for (unsigned i = 0; i < 2; ++i) proxies.emplace_back(proxy, i);
  for (unsigned i = 0; i < 3; ++i) apps.emplace_back(app, i);
  for (std::thread& t : apps) t.join();
  queue.finish();
  for (std::thread& t : proxies) t.join();
  runtime.exportNow();

  EXPECT_EQ(path.slotsInUse(), 0u);
  EXPECT_EQ(path.groupsInUse(), 0u);
  uint64_t abandoned = 0, measured = 0;
  for (CommMonitor* m : observed) {
    for (TaskKind kind : {TaskKind::Collective, TaskKind::P2p}) {
      uint64_t accounted = m->measured(kind);
      for (int s = 0; s < static_cast<int>(Skip::Count); ++s) {
        if (static_cast<Skip>(s) != Skip::IgnoredKernel) {
          accounted += m->skipped(static_cast<Skip>(s), kind);
        }
      }
      EXPECT_EQ(accounted, m->seen(kind));
      abandoned += m->skipped(Skip::Abandoned, kind);
      measured += m->measured(kind);
    }
    EXPECT_EQ(m->references(), 1) << "only the test's own";
    m->release();
  }
  // What the scenario is about happened (the figures vary from run to run).
  EXPECT_GT(abandoned, 0u) << "no finalize found a task in flight";
  EXPECT_GT(measured, 0u);
  EXPECT_GT(path.orphans(Orphan::Stale), staleBefore) << "no event came after its finalize";
  // Every communicator is in the summary's records: the same name and shape, one per rank.
  uint64_t folded = 0;
  for (const CommReport& r : runtime.finishedRecords()) folded += r.folded;
  EXPECT_EQ(folded, comms.load());
}

}  // namespace
}  // namespace pilot::metrics
