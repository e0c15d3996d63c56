// pilot_profiler_replay: the fake NCCL (profiler_host) driven from a scenario file, as one
// rank of a job: the Prometheus end-to-end test, the quick start's demo and the GPU checker's
// tests make the library write real files with it. The library's NCCL_PILOT_METRICS_* settings
// come from the environment as in a job.
//
// Usage: pilot_profiler_replay --module LIB --scenario FILE --rank R [--abi 4|5|6]
//                              [--hold SECONDS] [--repeat-for SECONDS] [--jitter FRACTION]
// Scenario lines ('#' starts a comment):
//   comm ID NAME NRANKS NNODES
//   coll ID FUNC COUNT DATATYPE ALGO PROTO CHANNELS CALLS US[,US...]
//   p2p ID Send|Recv BYTES PEER_OFFSET CHANNELS CALLS US[,US...]   (the peer: rank + offset,
//                                                                    modulo NRANKS; one group)
//   alltoall ID BYTES CHANNELS CALLS US[,US...]   (one group: a Send and a Recv of BYTES with
//                                                  every other rank; US is the exchange's span)
//   stall ID FUNC COUNT DATATYPE ALGO PROTO CHANNELS RANK[,RANK...]|*
//                     after the collectives (and --repeat-for), the listed ranks (every rank
//                     with *) launch one more FUNC of the comm (NCCL's next seqNumber of it):
//                     its kernel channels start and never stop, so it stays in flight while
//                     --hold keeps the communicator open (a stalled rank, NCCL_PILOT_STALL_S);
//                     then its channels stop and the communicator is finalized
// US is the kernel time of one call in microseconds, one value for every rank or one per rank;
// calls vary by +-2% around it (--jitter; deterministically), channel c takes (1 - 0.02 c) of
// the call (of an all-to-all, operation i starts i x 0.2% of the span late and ends with it).
// --repeat-for replays the collectives again and again for that long, as a job keeps calling them;
// --hold then keeps the communicators open that long (for scrapes), with the stall lines'
// operations in flight.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "profiler_host.h"

namespace {

struct CommLine {
  uint64_t id = 0;
  std::string name;
  int nRanks = 1, nNodes = 1;
};

struct CollLine {
  enum Kind { Coll, P2p, AlltoAll } kind = Coll;
  uint64_t comm = 0;
  fakeprof::Collective base;  ///< Coll
  std::string func;           ///< P2p
  size_t bytes = 0;           ///< P2p, AlltoAll
  int peerOffset = 0;         ///< P2p
  int channels = 1;
  int calls = 1;
  std::vector<double> us;
};

/// A stall line: one more collective that stays in flight on the listed ranks.
struct StallLine {
  uint64_t comm = 0;
  fakeprof::Collective base;
  int channels = 1;
  bool everyRank = false;
  std::vector<int> ranks;
};

/// A launched stall line's operation: its Coll handle and its started KernelCh handles.
struct Stalled {
  fakeprof::Comm* comm = nullptr;
  fakeprof::Collective coll;
  std::vector<void*> channels;
};

/// The Send/Recv operations of one call of a p2p or alltoall line, for `rank` of `nRanks`, whose
/// kernels start at `clock` and take `ns` (the span of an exchange).
std::vector<fakeprof::P2p> p2pCall(const CollLine& c, int rank, int nRanks, uint64_t ns,
                                   uint64_t clock) {
  std::vector<fakeprof::P2p> ops;
  auto add = [&](const std::string& func, int peer, uint64_t late) {
    fakeprof::P2p p;
    p.func = func;
    p.peer = peer;
    p.count = c.bytes;
    p.channels = fakeprof::channelsTaking(c.channels, ns - late, clock + late, 0.0);
    p.firstChannel = static_cast<int>(ops.size() % 32);
    ops.push_back(p);
  };
  if (c.kind == CollLine::P2p) {
    add(c.func, ((rank + c.peerOffset) % nRanks + nRanks) % nRanks, 0);
    return ops;
  }
  for (const char* func : {"Send", "Recv"}) {
    for (int peer = 0; peer < nRanks; ++peer) {
      if (peer != rank) add(func, peer, ns * ops.size() / 500);
    }
  }
  return ops;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "pilot_profiler_replay: %s\nusage: pilot_profiler_replay --module LIB --scenario "
               "FILE --rank R [--abi 4|5|6] [--hold SECONDS] [--repeat-for SECONDS] "
               "[--jitter FRACTION]\n",
               why);
  return 2;
}

std::vector<double> parseTimes(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stod(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string module, scenario;
  int rank = -1, abi = 5;
  double hold = 0, repeatFor = 0, jitterFraction = 0.02;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--module") {
      module = value;
    } else if (flag == "--scenario") {
      scenario = value;
    } else if (flag == "--rank") {
      rank = std::stoi(value);
    } else if (flag == "--abi") {
      abi = std::stoi(value);
    } else if (flag == "--hold") {
      hold = std::stod(value);
    } else if (flag == "--repeat-for") {
      repeatFor = std::stod(value);
    } else if (flag == "--jitter") {
      jitterFraction = std::stod(value);
    } else {
      return usage(("unknown option " + flag).c_str());
    }
  }
  if (argc % 2 == 0) return usage("options take a value each");
  if (module.empty() || scenario.empty() || rank < 0) return usage("missing option");
  if (abi < 4 || abi > 6) return usage("--abi takes 4, 5 or 6");

  std::ifstream in(scenario);
  if (!in) return usage(("cannot read " + scenario).c_str());
  std::vector<CommLine> comms;
  std::vector<CollLine> colls;
  std::vector<StallLine> stalls;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string kind;
    if (!(words >> kind)) continue;
    try {
      if (kind == "comm") {
        CommLine c;
        std::string id;
        words >> id >> c.name >> c.nRanks >> c.nNodes;
        c.id = std::stoull(id, nullptr, 0);
        comms.push_back(c);
      } else if (kind == "coll") {
        CollLine c;
        std::string id, times;
        words >> id >> c.base.func >> c.base.count >> c.base.datatype >> c.base.algo >>
            c.base.proto >> c.channels >> c.calls >> times;
        c.comm = std::stoull(id, nullptr, 0);
        c.us = parseTimes(times);
        if (c.us.empty()) throw std::invalid_argument("no time");
        colls.push_back(c);
      } else if (kind == "p2p" || kind == "alltoall") {
        CollLine c;
        c.kind = kind == "p2p" ? CollLine::P2p : CollLine::AlltoAll;
        std::string id, times;
        words >> id;
        if (c.kind == CollLine::P2p) words >> c.func;
        words >> c.bytes;
        if (c.kind == CollLine::P2p) words >> c.peerOffset;
        words >> c.channels >> c.calls >> times;
        if (c.kind == CollLine::P2p && c.func != "Send" && c.func != "Recv") {
          throw std::invalid_argument(c.func);
        }
        c.comm = std::stoull(id, nullptr, 0);
        c.us = parseTimes(times);
        if (c.us.empty()) throw std::invalid_argument("no time");
        colls.push_back(c);
      } else if (kind == "stall") {
        StallLine c;
        std::string id, ranks;
        words >> id >> c.base.func >> c.base.count >> c.base.datatype >> c.base.algo >>
            c.base.proto >> c.channels >> ranks;
        c.comm = std::stoull(id, nullptr, 0);
        if (c.channels < 1 || c.channels > 64) throw std::invalid_argument("channels");
        if (ranks == "*") {
          c.everyRank = true;
        } else {
          std::stringstream list(ranks);
          std::string item;
          while (std::getline(list, item, ',')) {
            size_t used = 0;
            c.ranks.push_back(std::stoi(item, &used));
            if (used != item.size() || c.ranks.back() < 0) throw std::invalid_argument(item);
          }
          if (c.ranks.empty()) throw std::invalid_argument("no rank");
        }
        stalls.push_back(c);
      } else {
        throw std::invalid_argument(kind);
      }
      if (words.fail()) throw std::invalid_argument("too few fields");
    } catch (const std::exception&) {
      std::fprintf(stderr, "pilot_profiler_replay: %s:%d: bad line\n", scenario.c_str(), number);
      return 2;
    }
  }

  fakeprof::Module m(module);
  if (!m.ok()) {
    std::fprintf(stderr, "pilot_profiler_replay: %s\n", m.error().c_str());
    return 1;
  }
  std::map<uint64_t, std::unique_ptr<fakeprof::Comm>> open;
  std::map<uint64_t, int> ranksOf;
  for (const CommLine& c : comms) {
    ranksOf[c.id] = c.nRanks;
    open[c.id] = std::make_unique<fakeprof::Comm>(m, abi, c.id, c.name, c.nNodes, c.nRanks, rank);
    if (open[c.id]->context() == nullptr) {
      std::fprintf(stderr, "pilot_profiler_replay: the library does not measure comm %s\n",
                   c.name.c_str());
    }
  }
  uint64_t clock = 1'900'000'000'000'000'000ull;                  // a GPU globaltimer
  std::map<std::pair<uint64_t, std::string>, uint64_t> sequence;  // NCCL's per-function counter
  for (const CollLine& c : colls) {
    if (open.find(c.comm) == open.end()) {
      std::fprintf(stderr, "pilot_profiler_replay: coll of an undeclared comm\n");
      return 2;
    }
  }
  for (const StallLine& s : stalls) {
    if (open.find(s.comm) == open.end()) {
      std::fprintf(stderr, "pilot_profiler_replay: stall of an undeclared comm\n");
      return 2;
    }
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(repeatFor);
  do {
    for (const CollLine& c : colls) {
      fakeprof::Comm& comm = *open[c.comm];
      const double us = c.us[c.us.size() == 1 ? 0 : static_cast<size_t>(rank) % c.us.size()];
      for (int k = 0; k < c.calls; ++k) {
        const double jitter = 1.0 + jitterFraction * std::sin(static_cast<double>(k) * 1.7);
        const auto ns = static_cast<uint64_t>(us * 1000.0 * jitter);
        if (c.kind != CollLine::Coll) {
          const auto ops = p2pCall(c, rank, ranksOf[c.comm], ns, clock);
          clock += ns + 5000;
          const std::vector<void*> handles = comm.enqueueGroup(ops);
          std::thread proxy([&] {
            for (size_t i = 0; i < ops.size(); ++i) comm.kernels(handles[i], ops[i]);
          });
          proxy.join();
          continue;
        }
        fakeprof::Collective coll = c.base;
        coll.seqNumber = sequence[{c.comm, coll.func}]++;
        coll.channels = fakeprof::channelsTaking(c.channels, ns, clock);
        clock += ns + 5000;
        void* h = comm.enqueue(coll);
        std::thread proxy([&] { comm.kernels(h, coll); });  // NCCL's proxy thread
        proxy.join();
      }
    }
    if (repeatFor > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < until);
  // The stall lines: the operation is enqueued, and the proxy thread starts its kernel channels
  // (NCCL's KernelCh start, the GPU's start time) but records no stop.
  std::vector<Stalled> stalled;
  for (const StallLine& s : stalls) {
    if (!s.everyRank && std::find(s.ranks.begin(), s.ranks.end(), rank) == s.ranks.end()) continue;
    Stalled st;
    st.comm = open[s.comm].get();
    st.coll = s.base;
    st.coll.seqNumber = sequence[{s.comm, st.coll.func}]++;
    st.coll.channels = fakeprof::channelsTaking(s.channels, 1'000'000, clock);
    clock += 1'000'000 + 5000;
    void* h = st.comm->enqueue(st.coll);
    if (st.comm->mask() & ncclProfileKernelCh) {
      std::thread proxy([&] {
        for (size_t ch = 0; ch < st.coll.channels.size(); ++ch) {
          st.channels.push_back(st.comm->startRaw(ncclProfileKernelCh, h,
                                                  st.coll.firstChannel + static_cast<int>(ch),
                                                  st.coll.channels[ch].startNs));
        }
      });
      proxy.join();
    }
    stalled.push_back(std::move(st));
  }
  if (hold > 0) std::this_thread::sleep_for(std::chrono::duration<double>(hold));
  // The stalled operations complete, then the communicators are finalized.
  for (Stalled& st : stalled) {
    std::thread proxy([&] {
      for (size_t ch = 0; ch < st.channels.size(); ++ch) {
        if (st.channels[ch] == nullptr) continue;
        st.comm->recordRaw(st.channels[ch], ncclProfilerKernelChStop, st.coll.channels[ch].stopNs);
        st.comm->stopRaw(st.channels[ch]);
      }
    });
    proxy.join();
  }
  for (auto& [id, comm] : open) comm->finalize();
  return 0;
}
