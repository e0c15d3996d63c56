// A stalled communicator through the built module (ABI v5), as NCCL would drive it: the one
// WARN line a stalled operation gets (NCCL_PILOT_STALL_S) and the "stall over" line when it
// completes, none for a communicator idle with nothing in flight, and the live state file
// (metrics/state_file.h) rewritten every second while an operation is in flight, whatever
// NCCL_PILOT_METRICS_INTERVAL_S says. Each scenario runs in a forked child (the library reads its
// settings once per process).
#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "host_test_support.h"

namespace fakeprof {
namespace {

using Clock = std::chrono::steady_clock;
using testsupport::runInChild;

constexpr uint64_t kStallClock = 1'700'000'000'000'000'000ull;
constexpr uint64_t kCommId = 0x5a11;

Collective allReduce(uint64_t seq, int channels) {
  Collective c;
  c.count = 4096;
  c.seqNumber = seq;
  c.channels = channelsTaking(channels, 50'000, kStallClock + seq * 1'000'000);
  return c;
}

/// The logged lines that start with `prefix`.
std::vector<std::string> linesStarting(const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& l : loggedLines()) {
    if (l.compare(0, prefix.size(), prefix) == 0) out.push_back(l);
  }
  return out;
}

const std::string kStallWarn = "WARN PROFILER/Pilot: stall:";
const std::string kStallOver = "INFO PROFILER/Pilot: stall over:";

/// Waits until `prefix` was logged `count` times or `limit` passed; the time it took.
double waitForLines(const std::string& prefix, size_t count, double limit) {
  const auto start = Clock::now();
  for (;;) {
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    if (linesStarting(prefix).size() >= count || took >= limit) return took;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// An AllReduce that is launched and whose kernel channels start, some never stopping: the
/// handles of the channels left open.
struct InFlight {
  Collective coll;
  std::vector<void*> open;
};

InFlight launchStuck(Comm& comm, uint64_t seq, int channels, int stopping) {
  InFlight f{allReduce(seq, channels), {}};
  void* h = comm.enqueue(f.coll);
  std::thread proxy([&] {
    for (int ch = 0; ch < channels; ++ch) {
      if (ch < stopping) {
        comm.kernelChannel(h, ch, f.coll.channels[static_cast<size_t>(ch)]);
      } else {
        f.open.push_back(comm.startRaw(ncclProfileKernelCh, h, ch,
                                       f.coll.channels[static_cast<size_t>(ch)].startNs));
      }
    }
  });
  proxy.join();
  return f;
}

void complete(Comm& comm, InFlight& f) {
  std::thread proxy([&] {
    const size_t first = f.coll.channels.size() - f.open.size();
    for (size_t i = 0; i < f.open.size(); ++i) {
      comm.recordRaw(f.open[i], ncclProfilerKernelChStop, f.coll.channels[first + i].stopNs);
      comm.stopRaw(f.open[i]);
    }
  });
  proxy.join();
  f.open.clear();
}

/// AllReduces #first .. #first + calls - 1, each completing at once.
void runCompleted(Comm& comm, uint64_t calls, uint64_t first = 0) {
  for (uint64_t seq = first; seq < first + calls; ++seq) {
    const Collective c = allReduce(seq, 2);
    void* h = comm.enqueue(c);
    std::thread proxy([&] { comm.kernels(h, c); });
    proxy.join();
  }
}

/// The number after "key": in the state file's text; -1 when absent.
long long numberAfter(const std::string& text, const std::string& key) {
  const size_t at = text.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return std::strtoll(text.c_str() + at + key.size() + 3, nullptr, 10);
}

/// CLOCK_REALTIME in ms, the state file's clock for written_ms.
long long realtimeMs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

std::string stateFileIn(const std::string& dir) {
  auto files = filesEnding(dir, ".state.json");
  return files.size() == 1 ? readWholeFile(files[0]) : std::string();
}

TEST(ProfilerStall, AStalledOperationWarnsOnceAndSaysWhenItIsOver) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}, {"NCCL_PILOT_STALL_S", "1"}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, kCommId, "stuck", 1, 2, 0);
    runCompleted(comm, 3);
    // AllReduce #3 on two channels: channel 0 runs through, channel 1 starts and never stops.
    InFlight f = launchStuck(comm, 3, 2, 1);
    const double took = waitForLines(kStallWarn, 1, 3.0);
    std::vector<std::string> warnings = linesStarting(kStallWarn);
    ASSERT_EQ(warnings.size(), 1u) << "after " << took << " s";
    EXPECT_LE(took, 3.0);
    const std::string& w = warnings[0];
    EXPECT_NE(w.find("comm 0x5a11 (stuck) rank 0 of 2: AllReduce #3 "), std::string::npos) << w;
    EXPECT_NE(w.find("1 of 2 kernel channels still running"), std::string::npos) << w;
    EXPECT_NE(w.find("Which rank: nccl-pilot hang " + dir), std::string::npos) << w;
    // Still one while it stays stalled (the state is looked at every second meanwhile).
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    EXPECT_EQ(linesStarting(kStallWarn).size(), 1u);
    EXPECT_TRUE(linesStarting(kStallOver).empty());

    complete(comm, f);
    waitForLines(kStallOver, 1, 3.0);
    std::vector<std::string> over = linesStarting(kStallOver);
    ASSERT_EQ(over.size(), 1u);
    EXPECT_NE(over[0].find("comm 0x5a11 rank 0: AllReduce #3 "), std::string::npos) << over[0];
    EXPECT_NE(over[0].find(" completed"), std::string::npos) << over[0];
    // The next operations complete at once: no stall, and nothing more to say.
    runCompleted(comm, 2, 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    comm.finalize();
    EXPECT_EQ(linesStarting(kStallWarn).size(), 1u);
    EXPECT_EQ(linesStarting(kStallOver).size(), 1u);
    removeDir(dir);
  });
}

TEST(ProfilerStall, EachStalledOperationWarnsOnItsOwn) {
  // Two operations stalled one after the other: a WARN and a "stall over" each.
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}, {"NCCL_PILOT_STALL_S", "1"}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, kCommId, "stuck", 1, 2, 1);
    InFlight first = launchStuck(comm, 0, 1, 0);
    waitForLines(kStallWarn, 1, 3.0);
    complete(comm, first);
    waitForLines(kStallOver, 1, 3.0);
    InFlight second = launchStuck(comm, 1, 1, 0);
    waitForLines(kStallWarn, 2, 3.0);
    complete(comm, second);
    waitForLines(kStallOver, 2, 3.0);
    comm.finalize();
    const std::vector<std::string> warnings = linesStarting(kStallWarn);
    ASSERT_EQ(warnings.size(), 2u);
    EXPECT_NE(warnings[0].find("rank 1 of 2: AllReduce #0 "), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("1 of 1 kernel channels still running"), std::string::npos)
        << warnings[0];
    EXPECT_NE(warnings[1].find("rank 1 of 2: AllReduce #1 "), std::string::npos) << warnings[1];
    EXPECT_EQ(linesStarting(kStallOver).size(), 2u);
    removeDir(dir);
  });
}

TEST(ProfilerStall, AnIdleCommunicatorIsNotStalled) {
  // Nothing in flight for three stall thresholds: waiting, not stalled.
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir},
            {"NCCL_PILOT_STALL_S", "1"},
            {"NCCL_PILOT_METRICS_INTERVAL_S", "1"}});
    Module m(PILOT_PROFILER_MODULE);
    Comm used(m, 5, kCommId, "idle", 1, 2, 0);
    Comm unused(m, 5, kCommId + 1, "unused", 1, 2, 0);
    runCompleted(used, 3);
    std::this_thread::sleep_for(std::chrono::seconds(3));
    const std::string state = stateFileIn(dir);
    used.finalize();
    unused.finalize();
    for (const std::string& l : loggedLines()) {
      EXPECT_EQ(l.find("stall"), std::string::npos) << l;
    }
    EXPECT_NE(state.find("\"ops\":{\"AllReduce\":[3,3]}"), std::string::npos) << state;
    EXPECT_EQ(state.find("\"stalled\":true"), std::string::npos) << state;
    removeDir(dir);
  });
}

TEST(ProfilerStall, TheStateFileIsRewrittenEverySecondWhileAnOperationIsInFlight) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir},
            {"NCCL_PILOT_METRICS_INTERVAL_S", "30"},
            {"NCCL_PILOT_STALL_S", "300"}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, kCommId, "busy", 1, 2, 0);
    runCompleted(comm, 2);
    const long long launchMs = realtimeMs();
    InFlight f = launchStuck(comm, 2, 2, 0);
    // Every write's written_ms over 4.5 s, each with what it said.
    struct Write {
      long long writtenMs, nextDueMs;
      std::string text;
    };
    std::vector<Write> writes;
    auto sample = [&](double seconds) {
      const auto until = Clock::now() + std::chrono::duration<double>(seconds);
      while (Clock::now() < until) {
        const std::string text = stateFileIn(dir);
        const long long written = numberAfter(text, "written_ms");
        // The writes since the launch (the file may still be one from before it, taken in the
        // same millisecond: the launch is after it).
        if (written > launchMs && (writes.empty() || written != writes.back().writtenMs)) {
          writes.push_back({written, numberAfter(text, "next_due_ms"), text});
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    };
    sample(4.5);
    ASSERT_GE(writes.size(), 4u) << "writes in 4.5 s with an operation in flight";
    for (size_t i = 0; i < writes.size(); ++i) {
      const Write& w = writes[i];
      EXPECT_NE(w.text.find("\"in_flight\":1"), std::string::npos) << w.text;
      EXPECT_NE(w.text.find("\"oldest\":{\"op\":\"AllReduce\",\"seq\":2,"), std::string::npos)
          << w.text;
      EXPECT_NE(w.text.find("\"started\":[0,1],\"stopped\":[]"), std::string::npos) << w.text;
      EXPECT_EQ(w.nextDueMs - w.writtenMs, 1000) << w.text;
      if (i > 0) {
        EXPECT_GT(w.writtenMs, writes[i - 1].writtenMs);
        // A second between writes, and what it takes the exporter to wake and write.
        EXPECT_LE(w.writtenMs - writes[i - 1].writtenMs, 1500) << "write " << i;
      }
    }
    // Completed: one more write says so, then none for the interval (30 s).
    complete(comm, f);
    const size_t before = writes.size();
    sample(1.5);
    ASSERT_GT(writes.size(), before);
    EXPECT_NE(writes.back().text.find("\"in_flight\":0"), std::string::npos) << writes.back().text;
    EXPECT_EQ(writes.back().nextDueMs - writes.back().writtenMs, 30'000);
    const size_t idle = writes.size();
    sample(2.5);
    EXPECT_EQ(writes.size(), idle) << "writes with nothing in flight";
    comm.finalize();
    removeDir(dir);
  });
}

}  // namespace
}  // namespace fakeprof
