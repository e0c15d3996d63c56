// pilot_profiler_long_job: one process of a long RL job as the profiler lives through it. The
// fake NCCL (profiler_host) loads the built module and goes through many communicators one after
// the other, as a weight-sync group rebuilt at every sync does: init, CALLS Broadcasts of BYTES
// on CHANNELS channels, finalize; every ABORT_EVERY-th is torn down with one more Broadcast
// enqueued whose kernels never report (an abort), and with --late-events they report after the
// finalize. With --alltoall-every N every N-th communicator is an expert-parallel group instead,
// running grouped all-to-alls that NCCL split over two kernel plans under one GroupApi (v5+).
// The exporter writes every --interval seconds meanwhile.
//
// Per block of communicators it prints the wall time, the resident memory and the sizes of the
// textfile and the summary, and at the end the weight-sync group's calls and bus bandwidth as
// the GPU times it reported imply them (computed here, apart from the library). The --max-*
// options turn figures into checks (exit 1 when one fails): the CTest variants use them.
//
// Usage: pilot_profiler_long_job --module LIB --dir DIR [--comms N] [--block N] [--calls N]
//          [--abort-every N] [--bytes N] [--channels N] [--abi 4|5|6] [--interval S]
//          [--alltoall-every N] [--late-events] [--max-block-ratio R]
//          [--max-rss-growth-mib M] [--max-textfile-bytes B] [--max-summary-bytes B]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "profiler_host.h"

namespace {

struct Options {
  std::string module, dir;
  int comms = 4000, block = 500, calls = 20, abortEvery = 10, channels = 4, abi = 5;
  size_t bytes = 4u << 20;
  int interval = 1;
  int alltoallEvery = 0;
  bool lateEvents = false;
  double maxBlockRatio = 0, maxRssGrowthMib = 0;
  uint64_t maxTextfileBytes = 0, maxSummaryBytes = 0;
};

constexpr int kRanks = 8, kNodes = 2, kRank = 3;

/// NCCL's logger, dropping the lines (the host's captureLog keeps every one: memory of its own).
void quietLog(ncclDebugLogLevel, unsigned long, const char*, int, const char*, ...) {}
constexpr uint64_t kClockBase = 1'900'000'000'000'000'000ull;

double residentMib() {
  std::ifstream statm("/proc/self/statm");
  unsigned long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

uint64_t fileBytes(const std::string& dir, const char* suffix) {
  uint64_t total = 0;
  for (const std::string& f : fakeprof::filesIn(dir, suffix)) {
    std::ifstream in(f, std::ios::binary | std::ios::ate);
    if (in) total += static_cast<uint64_t>(in.tellg());
  }
  return total;
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--late-events") {
      o->lateEvents = true;
      continue;
    }
    if ((v = next()) == nullptr) return false;
    if (a == "--module")
      o->module = v;
    else if (a == "--dir")
      o->dir = v;
    else if (a == "--comms")
      o->comms = std::atoi(v);
    else if (a == "--block")
      o->block = std::atoi(v);
    else if (a == "--calls")
      o->calls = std::atoi(v);
    else if (a == "--abort-every")
      o->abortEvery = std::atoi(v);
    else if (a == "--bytes")
      o->bytes = std::strtoull(v, nullptr, 10);
    else if (a == "--channels")
      o->channels = std::atoi(v);
    else if (a == "--abi")
      o->abi = std::atoi(v);
    else if (a == "--interval")
      o->interval = std::atoi(v);
    else if (a == "--alltoall-every")
      o->alltoallEvery = std::atoi(v);
    else if (a == "--max-block-ratio")
      o->maxBlockRatio = std::atof(v);
    else if (a == "--max-rss-growth-mib")
      o->maxRssGrowthMib = std::atof(v);
    else if (a == "--max-textfile-bytes")
      o->maxTextfileBytes = std::strtoull(v, nullptr, 10);
    else if (a == "--max-summary-bytes")
      o->maxSummaryBytes = std::strtoull(v, nullptr, 10);
    else
      return false;
  }
  return !o->module.empty() && !o->dir.empty() && o->comms > 0 && o->block > 0 &&
         o->comms % o->block == 0 && o->calls > 0 && o->channels > 0 && o->channels <= 64 &&
         o->abi >= 4 && o->abi <= 6 && o->interval > 0;
}

/// What the communicators' GPU times imply, summed apart from the library.
struct Expected {
  uint64_t calls = 0, aborted = 0, alltoalls = 0;
  double busBytes = 0, timeNs = 0;
};

/// One weight-sync communicator's life; `abort`: one more Broadcast left in flight.
void weightSync(const fakeprof::Module& m, const Options& o, int index, bool abort, Expected* e,
                uint64_t* clock) {
  fakeprof::Comm comm(m, o.abi, 0x5eed0000ull + static_cast<uint64_t>(index), "weight_sync", kNodes,
                      kRanks, kRank, quietLog);
  for (int call = 0; call <= o.calls; ++call) {
    const bool inFlight = call == o.calls;
    if (inFlight && !abort) break;
    fakeprof::Collective c;
    c.func = "Broadcast";
    c.count = o.bytes;
    c.datatype = "ncclInt8";
    c.seqNumber = static_cast<uint64_t>(call);
    // 300..475 us, different per communicator and call: the bandwidth is a true aggregate.
    const uint64_t ns = 300'000 + static_cast<uint64_t>(index % 7) * 25'000 +
                        static_cast<uint64_t>(call % 5) * 1'000;
    c.channels = fakeprof::channelsTaking(o.channels, ns, *clock += 1'000'000);
    void* h = comm.enqueue(c);
    if (inFlight) {
      ++e->aborted;
      comm.finalize();                       // torn down with its last Broadcast still on the GPU
      if (o.lateEvents) comm.kernels(h, c);  // events after the finalize: stale, ignored
      break;
    }
    comm.kernels(h, c);
    ++e->calls;
    e->busBytes += static_cast<double>(o.bytes);  // a Broadcast's bus bytes are its bytes
    e->timeNs += static_cast<double>(ns);
  }
}

/// An expert-parallel communicator: all-to-alls NCCL split over two kernel plans.
void expertParallel(const fakeprof::Module& m, const Options& o, int index, Expected* e,
                    uint64_t* clock) {
  fakeprof::Comm comm(m, o.abi, 0xe9000000ull + static_cast<uint64_t>(index), "ep_alltoall", kNodes,
                      kRanks, kRank, quietLog);
  for (int call = 0; call < 4; ++call) {
    std::vector<fakeprof::P2p> ops;
    for (const char* func : {"Send", "Recv"}) {
      for (int peer = 0; peer < kRanks; ++peer) {
        if (peer == kRank) continue;
        fakeprof::P2p p;
        p.func = func;
        p.peer = peer;
        p.count = 1 << 20;
        p.channels = fakeprof::channelsTaking(2, 200'000, *clock += 300'000, 0.0);
        p.firstChannel = static_cast<int>(ops.size() % 16);
        ops.push_back(p);
      }
    }
    std::vector<void*> handles = comm.enqueueGroup(ops, 2);
    for (size_t i = 0; i < ops.size(); ++i) comm.kernels(handles[i], ops[i]);
    if (o.abi >= 5) ++e->alltoalls;  // v4 has nothing that ties the two plans together
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: pilot_profiler_long_job --module LIB --dir DIR [--comms N] [--block N "
                 "(divides N)] [--calls N] [--abort-every N] [--bytes N] [--channels N] [--abi "
                 "4|5|6] [--interval S] [--alltoall-every N] [--late-events] [--max-block-ratio "
                 "R] [--max-rss-growth-mib M] [--max-textfile-bytes B] [--max-summary-bytes B]\n");
    return 2;
  }
  ::setenv("NCCL_PILOT_METRICS_DIR", o.dir.c_str(), 1);
  ::setenv("NCCL_PILOT_METRICS_INTERVAL_S", std::to_string(o.interval).c_str(), 1);
  fakeprof::Module m(o.module);
  if (!m.ok()) {
    std::fprintf(stderr, "cannot load %s: %s\n", o.module.c_str(), m.error().c_str());
    return 2;
  }
  // One communicator lives through the whole job (the world group), so the exporter runs
  // throughout, as in a job; it runs no collective of its own.
  fakeprof::Comm world(m, o.abi, 0x3001d, "world", kNodes, kRanks, kRank, quietLog);

  Expected expected, ep;
  uint64_t clock = kClockBase;
  std::vector<double> blockMs, blockRss;
  uint64_t maxTextfile = 0, maxSummary = 0;
  const int blocks = o.comms / o.block;
  for (int b = 0; b < blocks; ++b) {
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < o.block; ++k) {
      const int index = b * o.block + k;
      if (o.alltoallEvery > 0 && index % o.alltoallEvery == o.alltoallEvery - 1) {
        expertParallel(m, o, index, &ep, &clock);
      } else {
        weightSync(m, o, index, o.abortEvery > 0 && index % o.abortEvery == o.abortEvery - 1,
                   &expected, &clock);
      }
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    blockMs.push_back(ms);
    blockRss.push_back(residentMib());
    const uint64_t textfile = fileBytes(o.dir, ".prom"), summary = fileBytes(o.dir, ".jsonl");
    maxTextfile = std::max(maxTextfile, textfile);
    maxSummary = std::max(maxSummary, summary);
    std::printf(
        "block %d (communicators %d..%d): %.0f ms, resident %.1f MiB, textfile %llu B, "
        "summary %llu B\n",
        b + 1, b * o.block + 1, (b + 1) * o.block, ms, blockRss.back(),
        static_cast<unsigned long long>(textfile), static_cast<unsigned long long>(summary));
    std::fflush(stdout);
  }
  world.finalize();
  const uint64_t textfile = fileBytes(o.dir, ".prom"), summary = fileBytes(o.dir, ".jsonl");
  maxTextfile = std::max(maxTextfile, textfile);
  maxSummary = std::max(maxSummary, summary);
  const double ratio = blockMs.back() / blockMs.front();
  const double growth = blockRss.back() - blockRss[blocks > 1 ? 1 : 0];
  std::printf("after the last finalize: textfile %llu B, summary %llu B\n",
              static_cast<unsigned long long>(textfile), static_cast<unsigned long long>(summary));
  std::printf(
      "last block / first block: %.2fx; resident growth from block %d to the end: "
      "%.1f MiB; largest textfile %llu B, largest summary %llu B\n",
      ratio, blocks > 1 ? 2 : 1, growth, static_cast<unsigned long long>(maxTextfile),
      static_cast<unsigned long long>(maxSummary));
  std::printf("expected weight_sync: calls %llu, bus bandwidth %.6f GB/s, aborted %llu\n",
              static_cast<unsigned long long>(expected.calls),
              expected.timeNs > 0 ? expected.busBytes / expected.timeNs : 0.0,
              static_cast<unsigned long long>(expected.aborted));
  std::printf("expected ep_alltoall: alltoalls %llu\n",
              static_cast<unsigned long long>(ep.alltoalls));

  bool ok = true;
  auto check = [&](bool pass, const std::string& what) {
    std::printf("%s: %s\n", pass ? "PASS" : "FAIL", what.c_str());
    ok = ok && pass;
  };
  std::ostringstream s;
  if (o.maxBlockRatio > 0) {
    s << "last block takes " << ratio << "x the first (at most " << o.maxBlockRatio << "x)";
    check(ratio <= o.maxBlockRatio, s.str());
    s.str("");
  }
  if (o.maxRssGrowthMib > 0) {
    s << "resident memory grew " << growth << " MiB after the first block (at most "
      << o.maxRssGrowthMib << ")";
    check(growth <= o.maxRssGrowthMib, s.str());
    s.str("");
  }
  if (o.maxTextfileBytes > 0) {
    s << "the textfile stayed at or below " << maxTextfile << " B (at most " << o.maxTextfileBytes
      << ")";
    check(maxTextfile <= o.maxTextfileBytes, s.str());
    s.str("");
  }
  if (o.maxSummaryBytes > 0) {
    s << "the summary stayed at or below " << maxSummary << " B (at most " << o.maxSummaryBytes
      << ")";
    check(maxSummary <= o.maxSummaryBytes, s.str());
  }
  return ok ? 0 : 1;
}
