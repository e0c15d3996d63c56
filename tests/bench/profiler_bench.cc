// pilot_profiler_bench: what one collective's events cost a profiler plugin, called through
// ncclProfiler_v5 exactly as NCCL 2.28 sends them for an activation mask of Coll | KernelCh
// (tests/profiler/profiler_host: the API and group parents, the Coll, then per channel the
// kernel start, its stop state and stop), all on one thread. One benchmark per module given:
//   pilot_profiler_bench --module=NAME=PATH... [--env-of=NAME:VAR=VALUE...] [--channels=N]
//                        [--p2p | --proxy[=off|ops|steps] [--steps=N]] [Google Benchmark flags]
// --env-of sets VAR to VALUE while module NAME is loaded and its communicator initialized (our
// profiler and the empty one read NCCL_PILOT_METRICS_PROXY there), so that copies of one module
// under other paths run side by side with different settings.
// --proxy: the collective runs over the network (a Ring AllReduce of a rank that sends to and
// receives from another node on every channel): each module also gets the network progress
// events its activation mask asks for, in NCCL's order (src/proxy.cc, src/plugin/profiler.cc,
// src/transport/net.cc of 2.28-2.30): per channel a send ProxyOp to the ring's next rank and a
// receive ProxyOp from its previous one (parent = the Coll's handle, pid = this process), started
// when the proxy appends them, before the kernel starts; then each op's ProxyOpInProgress state
// and, with ProxyStep asked for, per step of the --steps=N (default 8) a ProxyStep (parent = the
// op's handle), its three states (SendGPUWait, SendPeerWait, SendWait, or RecvWait,
// RecvFlushWait, RecvGPUWait; NCCL records them only when the op and the step got a handle) and
// its stop, then the op's stop; the kernel channels stop last. NCCL pipelines up to 8 steps of an
// op; here they follow one another, which changes no callback's work. A module's mask decides:
// NCCL sends ProxyOps for ProxyOp or ProxyStep, ProxySteps for ProxyStep only. With
// --proxy=ops|steps, NCCL_PILOT_METRICS_PROXY takes that value for every module that --env-of
// does not give one.
// Compare modules of the same run (tests/bench/run_profiler_bench.sh alternates runs and prints
// the ratios to the module named "empty": callbacks that do nothing).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "profiler_host.h"

namespace {

struct Loaded {
  std::string name;
  std::unique_ptr<fakeprof::Module> module;
  std::unique_ptr<fakeprof::Comm> comm;
};

void quietLog(ncclDebugLogLevel, unsigned long, const char*, int, const char*, ...) {}

constexpr int kRanks = 16, kRank = 3;
constexpr size_t kTransSize = 1 << 19;  // bytes of one network step, as NCCL reports it

/// Handles and events of one collective's network progress, as NCCL would send them.
struct Network {
  int steps = 0;  ///< ProxySteps per ProxyOp; 0: no network events at all
  std::vector<void*> ops, kernels;
  int opHandles = 0, stepHandles = 0, events = 0;
};

constexpr ncclProfilerEventState_t kSendStates[] = {ncclProfilerProxyStepSendGPUWait,
                                                    ncclProfilerProxyStepSendPeerWait_v4,
                                                    ncclProfilerProxyStepSendWait};
constexpr ncclProfilerEventState_t kRecvStates[] = {ncclProfilerProxyStepRecvWait,
                                                    ncclProfilerProxyStepRecvFlushWait,
                                                    ncclProfilerProxyStepRecvGPUWait};

/// The proxy thread's events for the collective whose Coll handle is `coll` (see the top).
void network(fakeprof::Comm& comm, void* coll, const fakeprof::Collective& c, Network& net) {
  const int mask = comm.mask();
  const int n = static_cast<int>(c.channels.size());
  const bool opEvents = (mask & (ncclProfileProxyOp | ncclProfileProxyStep)) != 0;
  const bool stepEvents = (mask & ncclProfileProxyStep) != 0;
  // The proxy appends the channels' ops (ncclProxyOpToArgs): each ProxyOp starts.
  for (int ch = 0; ch < n && opEvents; ++ch) {
    for (int dir = 0; dir < 2; ++dir) {
      const bool send = dir == 0;
      void* op = comm.startProxyOp(coll, c.firstChannel + ch,
                                   send ? (kRank + 1) % kRanks : (kRank + kRanks - 1) % kRanks,
                                   send, net.steps);
      net.ops[2 * ch + dir] = op;
      net.opHandles += op != nullptr;
      ++net.events;
    }
  }
  // The profiler transport's progress sees the kernel start on each channel.
  for (int ch = 0; ch < n; ++ch) {
    net.kernels[ch] =
        (mask & ncclProfileKernelCh)
            ? comm.startRaw(ncclProfileKernelCh, coll, c.firstChannel + ch, c.channels[ch].startNs)
            : nullptr;
    net.events += (mask & ncclProfileKernelCh) != 0;
  }
  // The network transport's progress (sendProxyProgress, recvProxyProgress).
  for (int i = 0; i < 2 * n && opEvents; ++i) {
    void* op = net.ops[i];
    const ncclProfilerEventState_t* states = i % 2 == 0 ? kSendStates : kRecvStates;
    if (op != nullptr) {
      comm.recordRaw(op, ncclProfilerProxyOpInProgress_v4, 0);
      ++net.events;
    }
    for (int s = 0; s < net.steps && stepEvents; ++s) {
      void* step = comm.startProxyStep(op, s);
      ++net.events;
      if (step == nullptr) continue;
      ++net.stepHandles;
      if (op != nullptr) {
        for (int k = 0; k < 3; ++k) comm.recordRaw(step, states[k], kTransSize);
        net.events += 3;
      }
      comm.stopRaw(step);
      ++net.events;
    }
    if (op != nullptr) {
      comm.stopRaw(op);
      ++net.events;
    }
  }
  for (int ch = 0; ch < n; ++ch) {
    if (net.kernels[ch] == nullptr) continue;
    comm.recordRaw(net.kernels[ch], ncclProfilerKernelChStop, c.channels[ch].stopNs);
    comm.stopRaw(net.kernels[ch]);
    net.events += 2;
  }
}

fakeprof::Collective benchCollective(int channels) {
  fakeprof::Collective c;
  c.count = 262144;  // a 1 MiB float32 all-reduce
  c.channels = fakeprof::channelsTaking(channels, 120'000, 1'700'000'000'000'000'000ull);
  return c;
}

void sequence(benchmark::State& state, Loaded* loaded, int channels) {
  fakeprof::Collective c = benchCollective(channels);
  fakeprof::Comm& comm = *loaded->comm;
  for (auto _ : state) {
    void* h = comm.enqueue(c);
    comm.kernels(h, c);
    ++c.seqNumber;
  }
  state.counters["events"] = static_cast<double>(2 + 3 * channels);
}

/// One collective over the network with its proxy events (--proxy).
void overNetwork(benchmark::State& state, Loaded* loaded, int channels, int steps) {
  fakeprof::Collective c = benchCollective(channels);
  fakeprof::Comm& comm = *loaded->comm;
  Network net;
  net.steps = steps;
  net.ops.assign(2 * static_cast<size_t>(channels), nullptr);
  net.kernels.assign(static_cast<size_t>(channels), nullptr);
  for (auto _ : state) {
    void* h = comm.enqueue(c);
    network(comm, h, c, net);
    ++c.seqNumber;
  }
  const double n = static_cast<double>(state.iterations());
  // Per collective: the events NCCL sent after the Coll's (whose two are added), the handles
  // the module gave ProxyOps and ProxySteps.
  state.counters["events"] = 2 + net.events / n;
  state.counters["proxy_ops"] = net.opHandles / n;
  state.counters["proxy_steps"] = net.stepHandles / n;
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

struct Spec {
  std::string name, path;
  std::vector<std::pair<std::string, std::string>> env;  // set while it loads and initializes
};

/// Sets `env` for its lifetime, then puts back what was there.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::string>>& env) {
    for (const auto& [var, value] : env) {
      const char* old = std::getenv(var.c_str());
      saved_.emplace_back(var, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
      setenv(var.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

std::optional<std::string> envValue(const Spec& s, const std::string& var) {
  for (const auto& [v, value] : s.env) {
    if (v == var) return value;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  int channels = 8, steps = 8;
  bool p2p = false, proxy = false;
  std::optional<std::string> proxySetting;  // --proxy=VALUE
  std::vector<Spec> specs;
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> envOf;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--channels=", 0) == 0) {
      channels = std::stoi(arg.substr(11));
    } else if (arg.rfind("--steps=", 0) == 0) {
      steps = std::stoi(arg.substr(8));
    } else if (arg == "--p2p") {
      p2p = true;
    } else if (arg == "--proxy") {
      proxy = true;
    } else if (arg.rfind("--proxy=", 0) == 0) {
      proxy = true;
      proxySetting = arg.substr(8);
    } else if (arg.rfind("--module=", 0) == 0 || arg.rfind("--env-of=", 0) == 0) {
      const bool module = arg[2] == 'm';
      const std::string spec = arg.substr(9);
      const size_t sep = spec.find(module ? '=' : ':');
      const size_t eq = module ? sep : spec.find('=', sep == std::string::npos ? 0 : sep);
      if (sep == std::string::npos || eq == std::string::npos) {
        std::fprintf(stderr, "pilot_profiler_bench: --module=NAME=PATH, --env-of=NAME:VAR=VALUE\n");
        return 2;
      }
      if (module) {
        specs.push_back({spec.substr(0, sep), spec.substr(sep + 1), {}});
      } else {
        envOf.push_back(
            {spec.substr(0, sep), {spec.substr(sep + 1, eq - sep - 1), spec.substr(eq + 1)}});
      }
    } else {
      std::fprintf(stderr, "pilot_profiler_bench: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  if (p2p && proxy) {
    std::fprintf(stderr, "pilot_profiler_bench: --p2p and --proxy measure different things\n");
    return 2;
  }
  if (channels < 1 || channels > 64 || steps < 0) {
    std::fprintf(stderr, "pilot_profiler_bench: --channels=1..64, --steps=0 or more\n");
    return 2;
  }
  for (const auto& [name, env] : envOf) {
    bool found = false;
    for (Spec& s : specs) {
      if (s.name == name) {
        s.env.push_back(env);
        found = true;
      }
    }
    if (!found) {
      std::fprintf(stderr, "pilot_profiler_bench: --env-of names no module %s\n", name.c_str());
      return 2;
    }
  }
  if (proxySetting) {
    for (Spec& s : specs) {
      if (!envValue(s, "NCCL_PILOT_METRICS_PROXY")) {
        s.env.emplace_back("NCCL_PILOT_METRICS_PROXY", *proxySetting);
      }
    }
  }
  if (specs.empty()) {
    std::fprintf(stderr,
                 "usage: pilot_profiler_bench --module=NAME=PATH... [--env-of=NAME:VAR=VALUE...] "
                 "[--channels=N] [--p2p | --proxy[=off|ops|steps] [--steps=N]]\n");
    return 2;
  }
  std::vector<std::unique_ptr<Loaded>> modules;
  for (const Spec& s : specs) {
    auto l = std::make_unique<Loaded>();
    l->name = s.name;
    {
      ScopedEnv env(s.env);
      l->module = std::make_unique<fakeprof::Module>(s.path);
      if (!l->module->ok() || l->module->v5 == nullptr) {
        std::fprintf(stderr, "pilot_profiler_bench: %s=%s: %s\n", s.name.c_str(), s.path.c_str(),
                     l->module->ok() ? "no ncclProfiler_v5" : l->module->error().c_str());
        return 1;
      }
      l->comm = std::make_unique<fakeprof::Comm>(*l->module, 5, 0xbe7c4, "bench", 2,
                                                 p2p ? kP2pRanks : kRanks, kP2pRank, quietLog);
    }
    const int wanted =
        p2p ? ncclProfileP2p | ncclProfileKernelCh : ncclProfileColl | ncclProfileKernelCh;
    if ((l->comm->mask() & wanted) != wanted || l->comm->context() == nullptr) {
      std::fprintf(stderr,
                   "pilot_profiler_bench: %s did not ask for %s and KernelCh events "
                   "(is it enabled by its environment?)\n",
                   l->name.c_str(), p2p ? "P2p" : "Coll");
      return 1;
    }
    // A module told to ask for network events must ask for them, and take them: one collective
    // shows the handles it gives (ours gives none to a ProxyOp whose task it lost).
    const std::optional<std::string> asked = envValue(s, "NCCL_PILOT_METRICS_PROXY");
    if (proxy && asked && (*asked == "ops" || *asked == "steps")) {
      const int want = *asked == "steps" ? ncclProfileProxyOp | ncclProfileProxyStep
                                         : static_cast<int>(ncclProfileProxyOp);
      fakeprof::Collective c = benchCollective(channels);
      c.seqNumber = 1u << 30;
      Network net;
      net.steps = steps;
      net.ops.assign(2 * static_cast<size_t>(channels), nullptr);
      net.kernels.assign(static_cast<size_t>(channels), nullptr);
      if ((l->comm->mask() & want) == want) network(*l->comm, l->comm->enqueue(c), c, net);
      const int stepsWanted = *asked == "steps" ? 2 * channels * steps : 0;
      if ((l->comm->mask() & want) != want || net.opHandles != 2 * channels ||
          net.stepHandles != stepsWanted) {
        std::fprintf(stderr,
                     "pilot_profiler_bench: %s with NCCL_PILOT_METRICS_PROXY=%s: mask %#x, "
                     "handles for %d of %d ProxyOps and %d of %d ProxySteps\n",
                     l->name.c_str(), asked->c_str(), l->comm->mask(), net.opHandles, 2 * channels,
                     net.stepHandles, stepsWanted);
        return 1;
      }
    }
    modules.push_back(std::move(l));
  }
  for (auto& l : modules) {
    Loaded* raw = l.get();
    if (p2p) {
      benchmark::RegisterBenchmark(
          ("BM_P2p/" + l->name).c_str(),
          [raw, channels](benchmark::State& s) { exchange(s, raw, channels); });
    } else if (proxy) {
      benchmark::RegisterBenchmark(
          ("BM_Network/" + l->name).c_str(),
          [raw, channels, steps](benchmark::State& s) { overNetwork(s, raw, channels, steps); });
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
