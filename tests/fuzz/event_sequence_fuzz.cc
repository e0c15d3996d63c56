// libFuzzer target: arbitrary sequences of NCCL profiler events on the metrics layer's event
// path: collectives and Send/Recv operations started with any channel count, in groups opened
// and closed in any order (or in none, or in a stale one), kernel channel starts with any
// channel id and live, stopped, stale or garbage parents, stop states and stops in any order,
// twice or never; [v5+] user groups (GroupApi) whose P2pApi a Send/Recv may name, open, stale or
// none; NCCL's ProxyOps under any task (live, finished, garbage), their ProxySteps, stopped once,
// twice or never. For every input nothing crashes (ASan/UBSan), and once every event of every task
// has arrived (the input is completed in NCCL's order at the end), or, for an input of odd length,
// once the communicator is finalized with what is still in flight (EventPath::abandon) and the
// rest of the events come after it:
//   - no slot and no group entry stays in use, and only the test holds the communicator;
//   - every task whose channels all had a GPU time is measured exactly once, per kind (after a
//     finalize: every channel had one before it), and what comes later changes nothing;
//   - every group that a Send/Recv joined has exactly one outcome;
//   - no ProxyOp record stays open (NCCL stops each; a finalize lets go of the rest), and, when
//     every task got a slot, nothing is left in flight in the communicator's InFlightLog.
// A channel takes a lane the first time its id shows up, while the task has lanes left (the
// number of channels NCCL announced); the model below predicts every handle that way.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "pilot/metrics/event_path.h"

using namespace pilot::metrics;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "event_sequence_fuzz: %s\n", what.c_str());
  std::abort();
}

struct Task {
  void* handle = nullptr;
  bool p2p = false;
  unsigned channels = 0;
  bool taskStopped = false;
  std::map<unsigned, unsigned> laneOf;  // channel id -> lane
  std::vector<void*> kernel;            // per lane taken
  std::vector<bool> kernelStopped;      // per lane
  std::vector<bool> timed;              // per lane: a usable stop time recorded
};

struct Group {
  void* handle = nullptr;
  bool joined = false;  // a Send/Recv of it took its entry
  bool user = false;    // a GroupApi (the user's group) rather than a plan's Group
};

uint64_t outcomes(const CommMonitor& comm) {
  uint64_t n = 0;
  for (int o = 0; o < static_cast<int>(GroupOutcome::Count); ++o) {
    n += comm.groups(static_cast<GroupOutcome>(o));
  }
  return n;
}

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
  const uint32_t groupsBefore = path->groupsInUse();
  const uint32_t proxiesBefore = path->proxiesInUse();
  std::vector<void*> proxies;  // ProxyOps started and not yet stopped
  std::vector<Task> tasks;
  std::vector<Group> groups;
  int open = -1;      // the group open on this thread (NCCL opens, fills and closes one at a time)
  int openUser = -1;  // the user group (GroupApi) open on this thread
  uint64_t clock = 1000;
  size_t i = 0;
  auto next = [&]() -> uint8_t { return i < size ? data[i++] : 0; };
  auto closeOpen = [&] { open = -1; };
  while (i < size) {
    const uint8_t op = next();
    const uint8_t arg = next();
    Task* t = tasks.empty() ? nullptr : &tasks[arg % tasks.size()];
    switch (op % 13) {
      case 0:    // start a collective
      case 6: {  // start a Send or Recv, in the open group, no group, or an old one
        Task n;
        n.p2p = op % 11 == 6;
        n.channels = 1 + arg % 8;
        if (n.p2p) {
          P2pEvent e;
          e.func = (arg & 0x80) ? "Recv" : "Send";
          e.count = 1 + arg;
          e.datatype = "ncclInt8";
          e.peer = (arg >> 3) % 10;  // 8 and 9 are no rank of the communicator
          e.nChannels = n.channels;
          const int which = (arg >> 4) % 3;
          const int g = which == 0 ? open : which == 1 || groups.empty() ? -1 : arg % groups.size();
          e.group = g >= 0 ? groups[g].handle : nullptr;
          // Its P2pApi under the open user group, or under the last one (maybe closed), or none.
          int u = -1;
          for (int k = static_cast<int>(groups.size()) - 1; (arg & 4) && k >= 0 && u < 0; --k) {
            if (groups[k].user && ((arg & 2) || k == openUser)) u = k;
          }
          e.operation = u >= 0 ? EventPath::startP2pApi(groups[u].handle) : nullptr;
          n.handle = path->startP2p(*comm, e);
          // It joins its user group when that is open here, else the open plan's group, even
          // when it found no slot (and spoils it then).
          if (u >= 0 && u == openUser) {
            groups[u].joined = true;
          } else if (g >= 0 && g == open) {
            groups[g].joined = true;
          }
        } else {
          CollEvent e;
          e.func = "AllReduce";
          e.count = 1 + arg;
          e.datatype = "ncclFloat32";
          e.nChannels = n.channels;
          e.algo = "RING";
          e.proto = "SIMPLE";
          n.handle = path->startCollective(*comm, e);
        }
        if (n.handle == nullptr) break;  // pool full
        tasks.push_back(n);
        break;
      }
      case 1:  // stop a task's own event (maybe twice: the second is ignored)
        if (t) {
          path->stop(t->handle);
          t->taskStopped = true;
        }
        break;
      case 2:  // start a channel (any id, maybe again, maybe one too many)
        if (t) {
          const unsigned ch = (arg >> 3) % 70;
          void* k = path->startKernelChannel(t->handle, ch, clock);
          const bool fresh = ch < EventPath::kMaxChannels && t->laneOf.count(ch) == 0;
          if (fresh && t->kernel.size() < t->channels) {
            if (k == nullptr) die("a first start of a live channel with a lane left got none");
            t->laneOf[ch] = static_cast<unsigned>(t->kernel.size());
            t->kernel.push_back(k);
            t->kernelStopped.push_back(false);
            t->timed.push_back(false);
          } else if (k != nullptr) {
            die("a repeated, surplus or out-of-range channel got a handle");
          }
        }
        break;
      case 3:  // a lane's stop state, with a time before or after the start
        if (t && !t->kernel.empty()) {
          const unsigned lane = (arg >> 3) % t->kernel.size();
          if (!t->kernelStopped[lane]) {
            const bool late = (arg & 1) != 0;
            path->recordKernelChannelStop(t->kernel[lane], late ? clock + 500 : 1);
            t->timed[lane] = t->timed[lane] || late;
          }
        }
        break;
      case 4:  // a lane's stop
        if (t && !t->kernel.empty()) {
          const unsigned lane = (arg >> 3) % t->kernel.size();
          if (!t->kernelStopped[lane]) {
            path->stop(t->kernel[lane]);
            t->kernelStopped[lane] = true;
          }
        }
        break;
      case 7:  // open a group (one left open is closed by it)
        closeOpen();
        groups.push_back({path->startGroup(*comm), false});
        open = static_cast<int>(groups.size()) - 1;
        break;
      case 8:  // stop a group: the open one, or one stopped before
        if (!groups.empty()) {
          const int g = (arg & 1) && open >= 0 ? open : arg % static_cast<int>(groups.size());
          path->stop(groups[g].handle);
          if (g == open) closeOpen();
          if (g == openUser) openUser = -1;
        }
        break;
      case 9:  // open a user group (one left open is closed by it)
        groups.push_back({path->startGroupApi(*comm), false, true});
        openUser = static_cast<int>(groups.size()) - 1;
        break;
      case 10:  // stop the user group (its P2pApi's stop, or the GroupApi's)
        if (openUser >= 0) {
          if (arg & 1) path->stop(EventPath::startP2pApi(groups[openUser].handle));
          path->stop(groups[openUser].handle);
          openUser = -1;
        }
        break;
      case 11:  // a ProxyOp under any task, and maybe a step of it
        if (t != nullptr) {
          void* p = path->startProxyOp(t->handle, arg % 70, arg % 9 - 1, arg & 1, arg % 17,
                                       (arg & 2) != 0);
          if (p != nullptr) {
            if (arg & 4) path->stop(path->startProxyStep(p));
            proxies.push_back(p);
          }
        }
        break;
      case 12:  // stop a ProxyOp (its handle kept: a second stop is stale)
        if (!proxies.empty()) {
          void* p = proxies[arg % proxies.size()];
          path->stop(p);
          if (arg & 1) path->stop(p);
          proxies.erase(proxies.begin() + arg % proxies.size());
        }
        break;
      default: {  // garbage handles of every kind
        uintptr_t junk = 0;
        for (int b = 0; b < 8; ++b) junk = junk << 8 | next();
        // A value with our handles' top bytes would be one of our handles (NCCL hands back
        // only what we gave it); stale ones come from completed tasks and closed groups above.
        if (((junk >> 56) >= 0xB7 && (junk >> 56) <= 0xBA) || (junk >> 56) == 0xB5) {
          junk ^= uintptr_t{1} << 63;
        }
        void* h = reinterpret_cast<void*>(junk);
        path->startKernelChannel(h, arg % 70, clock);
        path->recordKernelChannelStop(h, clock);
        path->stop(h);
      }
    }
    clock += 1000;
  }
  // The host's own stops of the groups still open, as NCCL sends them before a finalize.
  if (open >= 0) path->stop(groups[open].handle);
  if (openUser >= 0) path->stop(groups[openUser].handle);
  uint64_t timed[2] = {0, 0};
  if (size % 2 == 1) {
    // Finalized now: what is in flight is let go of; what was timed on every channel counts.
    for (const Task& t : tasks) {
      bool allTimed = t.kernel.size() == t.channels;
      for (size_t lane = 0; allTimed && lane < t.timed.size(); ++lane) allTimed = t.timed[lane];
      timed[t.p2p ? 1 : 0] += allTimed ? 1 : 0;
    }
    path->abandon(*comm);
    // Everything after the finalize is stale: it changes nothing.
    for (Task& t : tasks) {
      path->startKernelChannel(t.handle, 0, clock);
      for (void* k : t.kernel) {
        path->recordKernelChannelStop(k, clock + 700);
        path->stop(k);
      }
      path->stop(t.handle);
    }
  } else {
    // The rest of NCCL's events, in its order, so every task and group completes.
    for (void* p : proxies) path->stop(p);
    for (Task& t : tasks) {
      bool allTimed = true;
      for (unsigned lane = 0; lane < t.channels; ++lane) {
        if (lane == t.kernel.size()) {
          unsigned ch = 0;  // an id the task has not used (8 lanes at most, 64 ids)
          while (t.laneOf.count(ch) != 0) ++ch;
          void* k = path->startKernelChannel(t.handle, ch, clock);
          if (k == nullptr) die("a live task refused a channel it had a lane for");
          t.laneOf[ch] = lane;
          t.kernel.push_back(k);
          t.kernelStopped.push_back(false);
          t.timed.push_back(true);
          path->recordKernelChannelStop(k, clock + 700);
        }
        if (!t.kernelStopped[lane]) {
          path->stop(t.kernel[lane]);
          t.kernelStopped[lane] = true;
        }
        allTimed = allTimed && t.timed[lane];
      }
      if (!t.taskStopped) path->stop(t.handle);
      timed[t.p2p ? 1 : 0] += allTimed ? 1 : 0;
    }
  }
  if (path->slotsInUse() != inUseBefore) die("a completed task kept its slot");
  if (path->groupsInUse() != groupsBefore) die("a completed group kept its entry");
  if (comm->references() != 1) die("a task or group kept its communicator");
  if (path->proxiesInUse() != proxiesBefore) die("a ProxyOp record stayed open");
  if (size % 2 == 0 && comm->skipped(Skip::NoSlot) == 0 &&
      comm->skipped(Skip::NoSlot, TaskKind::P2p) == 0 && comm->inFlight().view().inFlight != 0) {
    die("every task completed, yet the in-flight log waits for " +
        std::to_string(comm->inFlight().view().inFlight));
  }
  for (TaskKind kind : {TaskKind::Collective, TaskKind::P2p}) {
    const uint64_t want = timed[kind == TaskKind::P2p ? 1 : 0];
    if (comm->measured(kind) != want) {
      die("measured " + std::to_string(comm->measured(kind)) + " of " + std::to_string(want) +
          (kind == TaskKind::P2p ? " Send/Recv" : " collectives") +
          " with a GPU time on every channel");
    }
  }
  uint64_t joined = 0;
  for (const Group& g : groups) joined += g.joined ? 1 : 0;
  if (outcomes(*comm) != joined) {
    die(std::to_string(outcomes(*comm)) + " group outcomes for " + std::to_string(joined) +
        " groups that Send/Recv joined");
  }
  comm->release();
  return 0;
}
