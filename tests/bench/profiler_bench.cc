// pilot_profiler_bench: what one collective's events cost a profiler plugin, called through
// ncclProfiler_v5 exactly as NCCL 2.28 sends them for an activation mask of Coll | KernelCh
// (tests/profiler/profiler_host: the API and group parents, the Coll, then per channel the
// kernel start, its stop state and stop), all on one thread. One benchmark per module given:
//   pilot_profiler_bench --module=NAME=PATH... [--channels=N] [Google Benchmark flags]
// Compare modules of the same run (tests/bench/run_profiler_bench.sh alternates runs and prints
// the ratios to the module named "empty": callbacks that do nothing).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "profiler_host.h"

namespace {

struct Loaded {
  std::string name;
  std::unique_ptr<fakeprof::Module> module;
  std::unique_ptr<fakeprof::Comm> comm;
};

void quietLog(ncclDebugLogLevel, unsigned long, const char*, int, const char*, ...) {}

void sequence(benchmark::State& state, Loaded* loaded, int channels) {
  fakeprof::Collective c;
  c.count = 262144;  // a 1 MiB float32 all-reduce
  c.channels = fakeprof::channelsTaking(channels, 120'000, 1'700'000'000'000'000'000ull);
  fakeprof::Comm& comm = *loaded->comm;
  for (auto _ : state) {
    void* h = comm.enqueue(c);
    comm.kernels(h, c);
    ++c.seqNumber;
  }
  state.counters["events"] = static_cast<double>(2 + 3 * channels);
}

constexpr int kP2pRank = 3, kP2pRanks = 8;

void exchange(benchmark::State& state, Loaded* loaded, int channels) {
  std::vector<fakeprof::P2p> ops;
  for (const char* func : {"Send", "Recv"}) {
    for (int peer = 0; peer < kP2pRanks; ++peer) {
      if (peer == kP2pRank) continue;
      fakeprof::P2p p;
      p.func = func;
      p.peer = peer;
      p.count = 1 << 20;
      p.channels = fakeprof::channelsTaking(channels, 49'900, 1'700'000'000'000'000'000ull);
      p.firstChannel = static_cast<int>(ops.size() % 16);
      ops.push_back(p);
    }
  }
  fakeprof::Comm& comm = *loaded->comm;
  for (auto _ : state) {
    const std::vector<void*> handles = comm.enqueueGroup(ops);
    for (size_t i = 0; i < ops.size(); ++i) comm.kernels(handles[i], ops[i]);
  }
  state.counters["operations"] = static_cast<double>(ops.size());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  int channels = 8;
  bool p2p = false;
  for (int i = 1; i < argc; ++i) p2p = p2p || std::string(argv[i]) == "--p2p";
  std::vector<std::unique_ptr<Loaded>> modules;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--channels=", 0) == 0) {
      channels = std::stoi(arg.substr(11));
    } else if (arg == "--p2p") {
    } else if (arg.rfind("--module=", 0) == 0) {
      const std::string spec = arg.substr(9);
      const size_t eq = spec.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "pilot_profiler_bench: --module=NAME=PATH\n");
        return 2;
      }
      auto l = std::make_unique<Loaded>();
      l->name = spec.substr(0, eq);
      l->module = std::make_unique<fakeprof::Module>(spec.substr(eq + 1));
      if (!l->module->ok() || l->module->v5 == nullptr) {
        std::fprintf(stderr, "pilot_profiler_bench: %s: %s\n", spec.c_str(),
                     l->module->ok() ? "no ncclProfiler_v5" : l->module->error().c_str());
        return 1;
      }
      l->comm = std::make_unique<fakeprof::Comm>(*l->module, 5, 0xbe7c4, "bench", 2,
                                                 p2p ? kP2pRanks : 16, kP2pRank, quietLog);
      const int wanted =
          p2p ? ncclProfileP2p | ncclProfileKernelCh : ncclProfileColl | ncclProfileKernelCh;
      if ((l->comm->mask() & wanted) != wanted || l->comm->context() == nullptr) {
        std::fprintf(stderr,
                     "pilot_profiler_bench: %s did not ask for %s and KernelCh events "
                     "(is it enabled by its environment?)\n",
                     l->name.c_str(), p2p ? "P2p" : "Coll");
        return 1;
      }
      modules.push_back(std::move(l));
    } else {
      std::fprintf(stderr, "pilot_profiler_bench: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  if (modules.empty()) {
    std::fprintf(stderr, "usage: pilot_profiler_bench --module=NAME=PATH... [--channels=N]\n");
    return 2;
  }
  for (auto& l : modules) {
    Loaded* raw = l.get();
    if (p2p) {
      benchmark::RegisterBenchmark(
          ("BM_P2p/" + l->name).c_str(),
          [raw, channels](benchmark::State& s) { exchange(s, raw, channels); });
    } else {
      benchmark::RegisterBenchmark(
          ("BM_Sequence/" + l->name).c_str(),
          [raw, channels](benchmark::State& s) { sequence(s, raw, channels); });
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (auto& l : modules) l->comm->finalize();
  return 0;
}
