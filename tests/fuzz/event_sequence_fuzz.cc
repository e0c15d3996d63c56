// libFuzzer target: arbitrary sequences of NCCL profiler events on the metrics layer's event
// path: collectives started with any channel count, kernel channel starts with live, stopped,
// stale or garbage parents, stop states and stops in any order, twice or never. For every input
// nothing crashes (ASan/UBSan), and once every event of every collective has arrived (the input
// is completed in NCCL's order at the end) no slot stays in use and every collective whose
// channels all had a GPU time is measured exactly once.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "pilot/metrics/event_path.h"

using namespace pilot::metrics;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "event_sequence_fuzz: %s\n", what.c_str());
  std::abort();
}

struct Coll {
  void* handle = nullptr;
  unsigned channels = 0;
  bool collStopped = false;
  std::vector<void*> kernel;        // per channel, null until started
  std::vector<bool> kernelStopped;  // per channel
  std::vector<bool> timed;          // per channel: a usable stop time recorded
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static EventPath* path = [] {
    auto* p = new EventPath;  // one pool for the process, as in the plugin
    p->reserve(64);
    return p;
  }();
  MetricsSettings settings;
  settings.enabled = true;
  CommIdentity id;
  id.nRanks = 8;
  // The monitor outlives this input only while slots hold it; the test's own reference goes at
  // the end.
  auto* comm = new CommMonitor(id, settings, {});
  const uint32_t inUseBefore = path->slotsInUse();
  const uint64_t measuredBefore = comm->measured();
  std::vector<Coll> colls;
  uint64_t clock = 1000;
  size_t i = 0;
  auto next = [&]() -> uint8_t { return i < size ? data[i++] : 0; };
  while (i < size) {
    const uint8_t op = next();
    const uint8_t arg = next();
    Coll* c = colls.empty() ? nullptr : &colls[arg % colls.size()];
    switch (op % 6) {
      case 0: {  // start a collective
        Coll n;
        n.channels = 1 + arg % 8;
        CollEvent e;
        e.func = "AllReduce";
        e.count = 1 + arg;
        e.datatype = "ncclFloat32";
        e.nChannels = n.channels;
        e.algo = "RING";
        e.proto = "SIMPLE";
        n.handle = path->startCollective(*comm, e);
        if (n.handle == nullptr) break;  // pool full
        n.kernel.assign(n.channels, nullptr);
        n.kernelStopped.assign(n.channels, false);
        n.timed.assign(n.channels, false);
        colls.push_back(n);
        break;
      }
      case 1:  // stop a collective's Coll event (maybe twice: the second is ignored)
        if (c) {
          path->stop(c->handle);
          c->collStopped = true;
        }
        break;
      case 2:  // start a channel (maybe one it does not have, maybe again)
        if (c) {
          const unsigned ch = (arg >> 3) % 10;
          void* k = path->startKernelChannel(c->handle, ch, clock);
          if (ch < c->channels && c->kernel[ch] == nullptr) {
            if (k == nullptr) die("a first start of a live channel got no handle");
            c->kernel[ch] = k;
          }
        }
        break;
      case 3:  // its stop state, with a time before or after the start
        if (c) {
          const unsigned ch = (arg >> 3) % c->channels;
          if (c->kernel[ch] && !c->kernelStopped[ch]) {
            const bool late = (arg & 1) != 0;
            path->recordKernelChannelStop(c->kernel[ch], late ? clock + 500 : 1);
            c->timed[ch] = c->timed[ch] || late;
          }
        }
        break;
      case 4:  // a channel's stop
        if (c) {
          const unsigned ch = (arg >> 3) % c->channels;
          if (c->kernel[ch] && !c->kernelStopped[ch]) {
            path->stop(c->kernel[ch]);
            c->kernelStopped[ch] = true;
          }
        }
        break;
      default: {  // garbage handles of every kind
        uintptr_t junk = 0;
        for (int b = 0; b < 8; ++b) junk = junk << 8 | next();
        // A value with our handles' top byte would be one of our handles (NCCL hands back
        // only what we gave it); stale ones come from completed collectives above.
        if ((junk >> 56) == 0xB7) junk ^= uintptr_t{1} << 63;
        void* h = reinterpret_cast<void*>(junk);
        path->startKernelChannel(h, arg % 70, clock);
        path->recordKernelChannelStop(h, clock);
        path->stop(h);
      }
    }
    clock += 1000;
  }
  // The rest of NCCL's events, in its order, so every collective completes.
  uint64_t timedColls = 0;
  for (Coll& c : colls) {
    bool allTimed = true;
    for (unsigned ch = 0; ch < c.channels; ++ch) {
      if (c.kernel[ch] == nullptr) {
        c.kernel[ch] = path->startKernelChannel(c.handle, ch, clock);
        if (c.kernel[ch] == nullptr) die("a live collective refused its channel");
        path->recordKernelChannelStop(c.kernel[ch], clock + 700);
        c.timed[ch] = true;
      }
      if (!c.kernelStopped[ch]) {
        path->stop(c.kernel[ch]);
        c.kernelStopped[ch] = true;
      }
      allTimed = allTimed && c.timed[ch];
    }
    if (!c.collStopped) path->stop(c.handle);
    timedColls += allTimed ? 1 : 0;
  }
  if (path->slotsInUse() != inUseBefore) die("a completed collective kept its slot");
  if (comm->measured() - measuredBefore != timedColls) {
    die("measured " + std::to_string(comm->measured() - measuredBefore) + " of " +
        std::to_string(timedColls) + " collectives with a GPU time on every channel");
  }
  comm->release();
  return 0;
}
