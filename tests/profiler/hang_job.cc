// pilot_profiler_hang_job: one communicator of N rank processes on the fake NCCL (profiler v5),
// each loading the built profiler as NCCL does, that finish some AllReduces and then get stuck
// in one of the ways `nccl-pilot hang` must tell apart (tests/profiler/hang_job_test.sh):
//   never-launch R   every rank but R launches the next AllReduce; its kernels start and wait
//   sigstop R        every rank launches it; the parent stops R with SIGSTOP (and continues it
//                    at the end)
//   proxy R P        every rank launches it with NCCL's ProxyOp and ProxyStep events (channel 0:
//                    a send to the next rank, a receive from the previous); every one completes
//                    but R's send to P and P's receive from R, which stop at step 3 of 8
//   missing R        rank R never creates the communicator
//   healthy          every rank completes it, then computes (nothing in flight)
// It prints "stuck" once every rank is where the scenario puts it, holds --hold seconds, then
// lets everything complete and finalizes. NCCL_PILOT_* settings come from the environment.
//
// Usage: pilot_profiler_hang_job --module LIB --scenario NAME [R [P]] [--ranks N] [--calls C]
//                                [--hold S]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "profiler_host.h"

namespace {

struct Options {
  std::string module, scenario;
  int target = -1, peer = -1;
  int ranks = 8, calls = 40;
  double hold = 10;
};

constexpr uint64_t kCommId = 0x4a4e6;
constexpr int kChannels = 2;
constexpr int kSteps = 8;

fakeprof::Collective allReduce(uint64_t seq, uint64_t clock) {
  fakeprof::Collective c;
  c.count = 1 << 20;
  c.seqNumber = seq;
  c.channels = fakeprof::channelsTaking(kChannels, 50000, clock);
  return c;
}

void sleepFor(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

/// One rank: returns its exit status. Writes one byte to `ready` once it is stuck as told, and
/// waits for one on `go` before letting everything complete.
int rank(const Options& o, int r, int ready, int go) {
  fakeprof::Module module(o.module);
  if (!module.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", r, module.error().c_str());
    return 1;
  }
  const bool missing = o.scenario == "missing" && r == o.target;
  std::vector<std::unique_ptr<fakeprof::Comm>> comm;
  if (!missing) {
    comm.push_back(std::make_unique<fakeprof::Comm>(module, 5, kCommId, "dp", 1, o.ranks, r));
    uint64_t clock = 1'000'000;
    for (int i = 0; i < o.calls; ++i) {
      const fakeprof::Collective c = allReduce(static_cast<uint64_t>(i), clock);
      comm[0]->kernels(comm[0]->enqueue(c), c);
      clock += 100000;
    }
  }
  // The next AllReduce, as the scenario has it.
  struct Open {
    void* handle;
    bool stop;  // a ProxyOp to stop at the end (its steps are counted)
  };
  std::vector<Open> open;
  void* task = nullptr;
  fakeprof::Collective next = allReduce(static_cast<uint64_t>(o.calls), 1'000'000'000);
  const bool launches = !missing && !(o.scenario == "never-launch" && r == o.target);
  if (launches) {
    task = comm[0]->enqueue(next);
    if (o.scenario == "healthy") {
      comm[0]->kernels(task, next);
      task = nullptr;
    } else {
      for (int ch = 0; ch < kChannels; ++ch) {
        open.push_back(
            {comm[0]->startRaw(ncclProfileKernelCh, task, ch, next.channels[ch].startNs), false});
      }
    }
    if (o.scenario == "proxy" && task != nullptr) {
      const int nextRank = (r + 1) % o.ranks, previous = (r + o.ranks - 1) % o.ranks;
      for (const auto& [peer, send] : {std::pair{nextRank, true}, {previous, false}}) {
        void* op = comm[0]->startProxyOp(task, 0, peer, send, kSteps);
        const bool stalls =
            (send && r == o.target && peer == o.peer) || (!send && r == o.peer && peer == o.target);
        for (int s = 0; s < (stalls ? 3 : kSteps); ++s) {
          comm[0]->stopRaw(comm[0]->startRaw(ncclProfileProxyStep, op));
        }
        if (stalls) {
          open.push_back({op, true});
        } else {
          comm[0]->stopRaw(op);
        }
      }
    }
  }
  const char byte = 1;
  if (::write(ready, &byte, 1) != 1) return 1;
  char in = 0;
  if (::read(go, &in, 1) != 1) return 1;
  // Everything completes: the proxy, the kernels, then the late rank catches up.
  for (const Open& h : open) {
    if (h.stop) {
      comm[0]->stopRaw(h.handle);
    } else {
      comm[0]->recordRaw(h.handle, ncclProfilerKernelChStop, 2'000'000'000);
      comm[0]->stopRaw(h.handle);
    }
  }
  if (!launches && !missing) {
    task = comm[0]->enqueue(next);
    comm[0]->kernels(task, next);
  }
  if (!comm.empty()) comm[0]->finalize();
  return 0;
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--module") {
      o->module = value();
    } else if (a == "--scenario") {
      o->scenario = value();
      if (i + 1 < argc && argv[i + 1][0] != '-') o->target = std::atoi(argv[++i]);
      if (i + 1 < argc && argv[i + 1][0] != '-') o->peer = std::atoi(argv[++i]);
    } else if (a == "--ranks") {
      o->ranks = std::atoi(value().c_str());
    } else if (a == "--calls") {
      o->calls = std::atoi(value().c_str());
    } else if (a == "--hold") {
      o->hold = std::atof(value().c_str());
    } else {
      return false;
    }
  }
  const bool known = o->scenario == "never-launch" || o->scenario == "sigstop" ||
                     o->scenario == "proxy" || o->scenario == "missing" || o->scenario == "healthy";
  return !o->module.empty() && known && o->ranks > 1 && o->calls >= 0 &&
         (o->scenario == "healthy" || (o->target >= 0 && o->target < o->ranks)) &&
         (o->scenario != "proxy" || (o->peer >= 0 && o->peer < o->ranks));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s --module LIB --scenario never-launch R | sigstop R | proxy R P | "
                 "missing R | healthy [--ranks N] [--calls C] [--hold S]\n",
                 argv[0]);
    return 2;
  }
  int ready[2], go[2];
  if (::pipe(ready) != 0 || ::pipe(go) != 0) return 1;
  std::vector<pid_t> children;
  for (int r = 0; r < o.ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      ::close(go[1]);
      std::_Exit(rank(o, r, ready[1], go[0]));
    }
    children.push_back(pid);
  }
  ::close(ready[1]);
  ::close(go[0]);
  for (int r = 0; r < o.ranks; ++r) {
    char byte = 0;
    if (::read(ready[0], &byte, 1) != 1) return 1;
  }
  if (o.scenario == "sigstop") ::kill(children[static_cast<size_t>(o.target)], SIGSTOP);
  std::printf("stuck\n");
  std::fflush(stdout);
  sleepFor(o.hold);
  if (o.scenario == "sigstop") ::kill(children[static_cast<size_t>(o.target)], SIGCONT);
  const std::string bytes(static_cast<size_t>(o.ranks), '\1');
  if (::write(go[1], bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) return 1;
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed == 0 ? 0 : 1;
}
