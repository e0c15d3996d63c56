// getCollInfo cost through the v5 function pointer of the built module, as NCCL 2.28 calls it,
// with a generated table of --rules=N lines (0 = no table), against an empty function called
// the same way (the floor any plugin pays) and a minimal first-match linear scan over the same
// rules. Two kinds of table: spread (every collective x node count, 4,096 requests over all
// collectives) and --dense (all rules AllReduce on this communicator's shape, as a fit for one
// cluster writes them, 65,536 requests of random size over the whole range). The table is
// read once per process, so each case is its own run (run_tuner_bench.sh drives them).
//
// Before timing, every request's decision through the plugin is checked against the linear
// scan's (same cells, same channels); a mismatch exits non-zero.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_table.h"
#include "nccl_host_abi.h"

namespace {

constexpr size_t kSpreadRequests = 4096, kDenseRequests = 65536;  // powers of two
constexpr int kRanks = 16, kNodes = 2;

int gWarnings = 0;
void countWarnings(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  if (level != NCCL_LOG_WARN) return;
  ++gWarnings;
  char line[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(line, sizeof(line), fmt, args);
  va_end(args);
  std::fprintf(stderr, "plugin WARN: %s\n", line);
}

struct Setup {
  const ncclTuner_v5_t* v5 = nullptr;
  void* ctx = nullptr;
  std::vector<bench::BenchRule> rules;
  std::vector<bench::Request> requests;
  size_t requestMask = 0;
  float work[bench::kNumColl][bench::kNumAlgo * bench::kNumProto];  // one reused table per coll
};
Setup gSetup;

// The floor: a function of getCollInfo's signature that does nothing, called through a pointer
// the compiler cannot see through, with the same request stream.
ncclResult_t emptyGetCollInfo(void*, ncclFunc_t, size_t, int, float**, int, int, int, int*) {
  return ncclSuccess;
}
ncclTuner_v5_t gEmptyTuner = {"empty", nullptr, emptyGetCollInfo, nullptr};

void BM_EmptyFunction(benchmark::State& state) {
  const Setup& s = gSetup;
  const ncclTuner_v5_t* tuner = &gEmptyTuner;
  benchmark::DoNotOptimize(tuner);
  float(*work)[bench::kNumAlgo * bench::kNumProto] = gSetup.work;
  size_t i = 0;
  for (auto _ : state) {
    const bench::Request& r = s.requests[i++ & s.requestMask];
    int nChannels = 0;
    tuner->getCollInfo(s.ctx, static_cast<ncclFunc_t>(r.coll), r.nBytes, 1,
                       reinterpret_cast<float**>(work[r.coll]), bench::kNumAlgo, bench::kNumProto,
                       0, &nChannels);
    benchmark::DoNotOptimize(nChannels);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_PilotGetCollInfo(benchmark::State& state) {
  const Setup& s = gSetup;
  float(*work)[bench::kNumAlgo * bench::kNumProto] = gSetup.work;
  size_t i = 0;
  for (auto _ : state) {
    const bench::Request& r = s.requests[i++ & s.requestMask];
    int nChannels = 0;
    s.v5->getCollInfo(s.ctx, static_cast<ncclFunc_t>(r.coll), r.nBytes, 1,
                      reinterpret_cast<float**>(work[r.coll]), bench::kNumAlgo, bench::kNumProto, 0,
                      &nChannels);
    benchmark::DoNotOptimize(nChannels);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_LinearScan(benchmark::State& state) {
  const Setup& s = gSetup;
  float(*work)[bench::kNumAlgo * bench::kNumProto] = gSetup.work;
  size_t i = 0;
  for (auto _ : state) {
    const bench::Request& r = s.requests[i++ & s.requestMask];
    int nChannels = 0;
    benchmark::DoNotOptimize(bench::linearScan(s.rules, kNodes, r, work[r.coll], &nChannels));
    benchmark::DoNotOptimize(nChannels);
  }
  state.SetItemsProcessed(state.iterations());
}

/// Every request: the plugin's cells and channels must equal the linear scan's, but for the
/// calls exploration ran on an alternative (NCCL_PILOT_TUNER_EXPLORE = `explore`).
bool verify(double explore) {
  size_t applied = 0, mismatches = 0;
  for (const bench::Request& r : gSetup.requests) {
    float mine[21], reference[21];
    bench::baseCostTable(r.coll, mine);
    bench::baseCostTable(r.coll, reference);
    int chMine = 0, chRef = 0;
    gSetup.v5->getCollInfo(gSetup.ctx, static_cast<ncclFunc_t>(r.coll), r.nBytes, 1,
                           reinterpret_cast<float**>(mine), bench::kNumAlgo, bench::kNumProto, 0,
                           &chMine);
    applied += bench::linearScan(gSetup.rules, kNodes, r, reference, &chRef);
    if (std::memcmp(mine, reference, sizeof(mine)) != 0 || chMine != chRef) {
      if (mismatches++ < 5) {
        std::fprintf(stderr, "MISMATCH coll %d bytes %llu: channels %d vs %d\n", r.coll,
                     static_cast<unsigned long long>(r.nBytes), chMine, chRef);
      }
    }
  }
  std::fprintf(stderr, "verified %zu requests: %zu decided by a rule, %zu mismatches\n",
               gSetup.requests.size(), applied, mismatches);
  if (!gSetup.rules.empty() && applied < gSetup.requests.size() / 4) {
    std::fprintf(stderr, "too few requests hit a rule: the benchmark would measure nothing\n");
    return false;
  }
  // Bresenham per (collective, size): at most one call more than the fraction of each pair's,
  // and at most 512 pairs are counted (tuner/exploration.h).
  const double allowed = explore * static_cast<double>(gSetup.requests.size()) + 512.0;
  if (explore > 0) {
    std::fprintf(stderr, "exploring %g: %zu calls ran an alternative (at most %.0f allowed)\n",
                 explore, mismatches, allowed);
    return mismatches > 0 && static_cast<double>(mismatches) <= allowed;
  }
  return mismatches == 0;
}

struct Options {
  int rules = 100;
  bool dense = false;
  const char* explore = nullptr;  ///< --explore=F: NCCL_PILOT_TUNER_EXPLORE
  size_t distinct =
      0;  ///< --distinct=N: the requests repeat N sizes, as a job's do (0: all random)
  const char* module = PILOT_TUNER_MODULE;  ///< --module=PATH: another build, for A/B runs
};

/// Takes --rules=N, --dense and --module=PATH out of argv (the rest is Google Benchmark's).
Options takeOptions(int* argc, char** argv) {
  Options o;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    if (std::strncmp(argv[i], "--rules=", 8) == 0)
      o.rules = std::atoi(argv[i] + 8);
    else if (std::strcmp(argv[i], "--dense") == 0)
      o.dense = true;
    else if (std::strncmp(argv[i], "--explore=", 10) == 0)
      o.explore = argv[i] + 10;
    else if (std::strncmp(argv[i], "--distinct=", 11) == 0)
      o.distinct = static_cast<size_t>(std::atol(argv[i] + 11));
    else if (std::strncmp(argv[i], "--module=", 9) == 0)
      o.module = argv[i] + 9;
    else
      argv[out++] = argv[i];
  }
  *argc = out;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opts = takeOptions(&argc, argv);
  const int ruleCount = opts.rules;
  for (const char* v : {"NCCL_PILOT_TUNER_TABLE", "NCCL_TUNER_CONFIG_FILE", "NCCL_PILOT_TUNER",
                        "NCCL_PILOT_TUNER_STRICT", "NCCL_PILOT_TUNER_EXPLORE", "NCCL_ALGO",
                        "NCCL_PROTO", "NCCL_DEBUG"}) {
    unsetenv(v);
  }
  if (opts.explore != nullptr) setenv("NCCL_PILOT_TUNER_EXPLORE", opts.explore, 1);
  std::string tablePath;
  if (ruleCount > 0) {
    gSetup.rules =
        opts.dense ? bench::generateDenseRules(ruleCount, kNodes) : bench::generateRules(ruleCount);
    char name[] = "/tmp/pilot-bench-XXXXXX";
    const int fd = mkstemp(name);
    const std::string csv = bench::toCsv(gSetup.rules);
    if (fd < 0 || write(fd, csv.data(), csv.size()) != static_cast<ssize_t>(csv.size())) {
      std::perror("table file");
      return 1;
    }
    close(fd);
    tablePath = name;
    setenv("NCCL_PILOT_TUNER_TABLE", name, 1);
  }
  gSetup.requests = opts.dense ? bench::generateDenseRequests(kDenseRequests, 0x5eed)
                               : bench::generateRequests(kSpreadRequests, 0x5eed);
  if (opts.distinct > 0) {  // a job: the same few sizes again and again
    for (size_t i = opts.distinct; i < gSetup.requests.size(); ++i) {
      gSetup.requests[i] = gSetup.requests[i % opts.distinct];
    }
  }
  gSetup.requestMask = gSetup.requests.size() - 1;
  for (int c = 0; c < bench::kNumColl; ++c) bench::baseCostTable(c, gSetup.work[c]);

  void* handle = dlopen(opts.module, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  gSetup.v5 = static_cast<const ncclTuner_v5_t*>(dlsym(handle, "ncclTunerPlugin_v5"));
  ncclNvlDomainInfo_v5_t nvl{kNodes, kRanks / kNodes, kRanks / kNodes};
  ncclTunerConstants_v5_t constants{};
  if (gSetup.v5 == nullptr || gSetup.v5->init(&gSetup.ctx, 1, kRanks, kNodes, countWarnings, &nvl,
                                              &constants) != ncclSuccess) {
    std::fprintf(stderr, "ncclTunerPlugin_v5 init failed\n");
    return 1;
  }
  bool ok = gWarnings == 0 && verify(opts.explore ? std::atof(opts.explore) : 0.0);
  std::fprintf(stderr, "table: %d rules, %s (%s)%s%s\n", ruleCount, opts.dense ? "dense" : "spread",
               ruleCount ? tablePath.c_str() : "none", opts.explore ? ", exploring " : "",
               opts.explore ? opts.explore : "");
  if (ok) {
    benchmark::RegisterBenchmark("BM_EmptyFunction", BM_EmptyFunction);
    benchmark::RegisterBenchmark("BM_PilotGetCollInfo", BM_PilotGetCollInfo);
    benchmark::RegisterBenchmark("BM_LinearScan", BM_LinearScan);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
      ok = false;
    else
      benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  gSetup.v5->finalize(gSetup.ctx);  // the module stays loaded, as in a long-running NCCL job
  if (!tablePath.empty()) unlink(tablePath.c_str());
  return ok ? 0 : 1;
}
