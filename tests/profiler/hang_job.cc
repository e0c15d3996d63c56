// pilot_profiler_hang_job: a job of N rank processes on the fake NCCL (profiler v5), each
// loading the built profiler as NCCL does, that finish some AllReduces on "dp" (and on "tp" for
// the order scenarios) and then get stuck in one of the ways `nccl-pilot hang` must tell apart
// (tests/profiler/hang_job_test.sh):
//   never-launch R     every rank but R launches the next AllReduce; its kernels start and wait
//   sigstop R          every rank launches it; the parent stops R with SIGSTOP
//   proxy R P          every rank launches it with NCCL's ProxyOp and ProxyStep events (channel
//                      0: a send to the next rank, a receive from the previous); every one
//                      completes but R's send to P and P's receive from R, which stop at step 3
//   missing R          rank R never creates the communicator
//   healthy            every rank completes it, then computes (nothing in flight)
//   mismatch R         rank R calls AllGather where the others call the next AllReduce
//   size-mismatch R    rank R calls the next AllReduce with twice the others' size
//   p2p-cycle R P      R receives from P while P receives from R; nobody sends
//   order-blocking R   every rank calls AllReduce on tp then dp, R on dp then tp; each blocks in
//                      its first (never launches the second)
//   order-enqueued R   the same, with both launched (PyTorch): the second's kernel queues
//                      behind the first on the rank's GPU (no channel of it starts)
//   kill-all R         never-launch R, then 3 s later the parent kills the whole job (SIGKILL,
//                      reaped), as a watchdog or a scheduler does
//   die-idle R         never-launch R, then the parent kills R (SIGKILL, reaped) while it idles
//   clock-behind R     every rank launches it (a network stall); ranks 4 and up run on node
//                      "node-b" whose clock is 20 s behind, the others on "node-a"; the parent
//                      stops R with SIGSTOP
// The node names and node-b's clock come from this program's own gethostname and
// clock_gettime, which the profiler library (dlopened) binds to: exported for it.
// It prints "stuck" once every rank is where the scenario puts it (the fault made: stopped,
// killed), holds --hold seconds, then lets everything complete and finalizes. A rank dies with
// the parent (PR_SET_PDEATHSIG): killing the parent leaves no rank behind, stopped or not.
// NCCL_PILOT_* settings come from the environment.
//
// Usage: pilot_profiler_hang_job --module LIB --scenario NAME [R [P]] [--ranks N] [--calls C]
//                                [--hold S]
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "profiler_host.h"

namespace {

/// This process's node and wall-clock offset as the library sees them (clock-behind).
const char* fakeNode = nullptr;
int64_t clockOffsetNs = 0;

}  // namespace

extern "C" int gethostname(char* name, size_t len) {
  if (fakeNode == nullptr) {
    utsname u{};
    if (::uname(&u) != 0) return -1;
    std::snprintf(name, len, "%s", u.nodename);
    return 0;
  }
  std::snprintf(name, len, "%s", fakeNode);
  return 0;
}

extern "C" int clock_gettime(clockid_t clock, timespec* ts) {
  const long rc = ::syscall(SYS_clock_gettime, clock, ts);
  if (rc == 0 && clock == CLOCK_REALTIME && clockOffsetNs != 0) {
    int64_t ns = static_cast<int64_t>(ts->tv_sec) * 1'000'000'000 + ts->tv_nsec + clockOffsetNs;
    ts->tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    ts->tv_nsec = static_cast<long>(ns % 1'000'000'000);
  }
  return static_cast<int>(rc);
}

namespace {

struct Options {
  std::string module, scenario;
  int target = -1, peer = -1;
  int ranks = 8, calls = 40;
  double hold = 10;
};

constexpr uint64_t kCommId = 0x4a4e6;  // dp
constexpr uint64_t kTpCommId = 0x7a7a1;
constexpr int kChannels = 2;
constexpr int kSteps = 8;
constexpr double kHangBeforeKillS = 3;

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

/// What a rank leaves in flight until the parent lets everything complete.
struct Open {
  fakeprof::Comm* comm = nullptr;
  void* handle = nullptr;
  bool proxy = false;  ///< a ProxyOp (else a kernel channel)
};

/// A collective to run to its end once the parent lets go: one never launched (the rank is
/// elsewhere), or one launched whose kernel queued behind another (no channel started).
struct Later {
  fakeprof::Comm* comm = nullptr;
  fakeprof::Collective c;
  void* queued = nullptr;  ///< its handle when launched already
};

/// Launches `c`; its kernel channels start and stay open.
void* launchStarted(fakeprof::Comm& comm, const fakeprof::Collective& c, std::vector<Open>* open) {
  void* task = comm.enqueue(c);
  for (int ch = 0; ch < kChannels; ++ch) {
    open->push_back(
        {&comm, comm.startRaw(ncclProfileKernelCh, task, ch, c.channels[ch].startNs), false});
  }
  return task;
}

/// ProxyOps of the next AllReduce (channel 0: a send to the next rank, a receive from the
/// previous), all completing but R's send to P and P's receive from R, stopped at step 3.
void proxySteps(const Options& o, int r, fakeprof::Comm& comm, void* task,
                std::vector<Open>* open) {
  const int nextRank = (r + 1) % o.ranks, previous = (r + o.ranks - 1) % o.ranks;
  for (const auto& [peer, send] : {std::pair{nextRank, true}, {previous, false}}) {
    void* op = comm.startProxyOp(task, 0, peer, send, kSteps);
    const bool stalls =
        (send && r == o.target && peer == o.peer) || (!send && r == o.peer && peer == o.target);
    for (int s = 0; s < (stalls ? 3 : kSteps); ++s) {
      comm.stopRaw(comm.startRaw(ncclProfileProxyStep, op));
    }
    if (stalls) {
      open->push_back({&comm, op, true});
    } else {
      comm.stopRaw(op);
    }
  }
}

/// One rank: returns its exit status. Writes one byte to `ready` once it is stuck as told, and
/// waits for one on `go` before letting everything complete.
int rank(const Options& o, int r, int ready, int go) {
  fakeprof::Module module(o.module);
  if (!module.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", r, module.error().c_str());
    return 1;
  }
  const std::string& sc = o.scenario;
  const bool target = r == o.target;
  if (sc == "clock-behind") {
    fakeNode = r >= 4 ? "node-b" : "node-a";
    if (r >= 4) clockOffsetNs = -20'000'000'000;
  }
  const bool ordered = sc == "order-blocking" || sc == "order-enqueued";
  std::unique_ptr<fakeprof::Comm> dp, tp;
  if (!(sc == "missing" && target))
    dp = std::make_unique<fakeprof::Comm>(module, 5, kCommId, "dp", 1, o.ranks, r);
  if (ordered) tp = std::make_unique<fakeprof::Comm>(module, 5, kTpCommId, "tp", 1, o.ranks, r);
  uint64_t clock = 1'000'000;
  for (int i = 0; i < o.calls; ++i) {
    for (fakeprof::Comm* comm : {tp.get(), dp.get()}) {
      if (comm == nullptr) continue;
      const fakeprof::Collective c = allReduce(static_cast<uint64_t>(i), clock);
      comm->kernels(comm->enqueue(c), c);
      clock += 100000;
    }
  }
  const fakeprof::Collective next = allReduce(static_cast<uint64_t>(o.calls), 1'000'000'000);
  std::vector<Open> open;
  std::vector<Later> later;
  if (sc == "healthy") {
    dp->kernels(dp->enqueue(next), next);
  } else if (sc == "never-launch" || sc == "kill-all" || sc == "die-idle") {
    if (target) {
      later.push_back({dp.get(), next});
    } else {
      launchStarted(*dp, next, &open);
    }
  } else if (sc == "sigstop" || sc == "clock-behind" || (sc == "missing" && !target)) {
    launchStarted(*dp, next, &open);
  } else if (sc == "proxy") {
    proxySteps(o, r, *dp, launchStarted(*dp, next, &open), &open);
  } else if (sc == "mismatch" || sc == "size-mismatch") {
    fakeprof::Collective mine = next;
    if (target && sc == "mismatch") {
      mine.func = "AllGather";
      mine.seqNumber = 0;
      later.push_back({dp.get(), next});  // it calls the AllReduce only after
    }
    if (target) mine.count *= 2;
    launchStarted(*dp, mine, &open);
  } else if (sc == "p2p-cycle") {
    if (target || r == o.peer) {
      fakeprof::P2p recv;
      recv.func = "Recv";
      recv.count = 1 << 20;
      recv.peer = target ? o.peer : o.target;
      recv.channels = fakeprof::channelsTaking(1, 50000, 1'000'000'000);
      void* handle = dp->enqueueGroup({recv}).front();
      open.push_back(
          {dp.get(), dp->startRaw(ncclProfileKernelCh, handle, 0, 1'000'000'000), false});
    }
  } else if (ordered) {
    fakeprof::Comm& first = target ? *dp : *tp;
    fakeprof::Comm& second = target ? *tp : *dp;
    launchStarted(first, next, &open);
    later.push_back({&second, next, sc == "order-enqueued" ? second.enqueue(next) : nullptr});
  }
  const char byte = 1;
  if (::write(ready, &byte, 1) != 1) return 1;
  char in = 0;
  if (::read(go, &in, 1) != 1) return 1;
  // Everything completes: the proxy, the kernels, then what was late or queued.
  for (const Open& h : open) {
    if (!h.proxy) h.comm->recordRaw(h.handle, ncclProfilerKernelChStop, 2'000'000'000);
    h.comm->stopRaw(h.handle);
  }
  for (const Later& l : later) {
    l.comm->kernels(l.queued != nullptr ? l.queued : l.comm->enqueue(l.c), l.c);
  }
  for (fakeprof::Comm* comm : {tp.get(), dp.get()})
    if (comm != nullptr) comm->finalize();
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
  static const char* const kScenarios[] = {
      "never-launch",   "sigstop",        "proxy",       "missing",  "healthy",
      "mismatch",       "size-mismatch",  "p2p-cycle",   "kill-all", "die-idle",
      "order-blocking", "order-enqueued", "clock-behind"};
  bool known = false;
  for (const char* k : kScenarios) known = known || o->scenario == k;
  const bool needsPeer = o->scenario == "proxy" || o->scenario == "p2p-cycle";
  return !o->module.empty() && known && o->ranks > 1 && o->calls >= 0 &&
         (o->scenario == "healthy" || (o->target >= 0 && o->target < o->ranks)) &&
         (!needsPeer || (o->peer >= 0 && o->peer < o->ranks && o->peer != o->target));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s --module LIB --scenario never-launch R | sigstop R | proxy R P | "
                 "missing R | healthy | mismatch R | size-mismatch R | p2p-cycle R P | "
                 "order-blocking R | order-enqueued R | kill-all R | die-idle R | "
                 "clock-behind R [--ranks N] "
                 "[--calls C] [--hold S]\n",
                 argv[0]);
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  int ready[2], go[2];
  if (::pipe(ready) != 0 || ::pipe(go) != 0) return 1;
  const pid_t parent = ::getpid();
  std::vector<pid_t> children;
  for (int r = 0; r < o.ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      // A rank never outlives the job: killed with its parent even while stopped.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) std::_Exit(1);
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
  const pid_t victim = children[static_cast<size_t>(std::max(o.target, 0))];
  std::vector<pid_t> killed;
  if (o.scenario == "sigstop" || o.scenario == "clock-behind") ::kill(victim, SIGSTOP);
  if (o.scenario == "die-idle") killed = {victim};
  if (o.scenario == "kill-all") {
    // A watchdog kills a job that hung a while: the ranks have waited past the stall first.
    sleepFor(kHangBeforeKillS);
    killed = children;
  }
  for (pid_t pid : killed) ::kill(pid, SIGKILL);
  for (pid_t pid : killed) ::waitpid(pid, nullptr, 0);  // reaped: no /proc entry left
  std::printf("stuck\n");
  std::fflush(stdout);
  sleepFor(o.hold);
  if (o.scenario == "sigstop" || o.scenario == "clock-behind") ::kill(victim, SIGCONT);
  const std::string bytes(children.size() - killed.size(), '\1');
  if (!bytes.empty() &&
      ::write(go[1], bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
    return 1;
  int failed = 0;
  for (pid_t pid : children) {
    if (std::find(killed.begin(), killed.end(), pid) != killed.end()) continue;
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed == 0 ? 0 : 1;
}
