// getCollInfo cost through the v5 function pointer of the built module, as NCCL 2.28 calls it,
// with a generated table of --rules=N lines (0 = no table: the empty call), against a minimal
// first-match linear scan over the same rules. The table is read once per process, so each
// rule count is its own run (run_tuner_bench.sh drives them).
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

constexpr size_t kRequests = 4096;  // a power of two
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
  float work[bench::kNumColl][bench::kNumAlgo * bench::kNumProto];  // one reused table per coll
};
Setup gSetup;

void BM_PilotGetCollInfo(benchmark::State& state) {
  const Setup& s = gSetup;
  float(*work)[bench::kNumAlgo * bench::kNumProto] = gSetup.work;
  size_t i = 0;
  for (auto _ : state) {
    const bench::Request& r = s.requests[i++ & (kRequests - 1)];
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
    const bench::Request& r = s.requests[i++ & (kRequests - 1)];
    int nChannels = 0;
    benchmark::DoNotOptimize(bench::linearScan(s.rules, kNodes, r, work[r.coll], &nChannels));
    benchmark::DoNotOptimize(nChannels);
  }
  state.SetItemsProcessed(state.iterations());
}

/// Every request: the plugin's cells and channels must equal the linear scan's.
bool verify() {
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
  return mismatches == 0;
}

/// Takes --rules=N out of argv (the rest is Google Benchmark's).
int takeRuleCount(int* argc, char** argv) {
  int rules = 100, out = 1;
  for (int i = 1; i < *argc; ++i) {
    if (std::strncmp(argv[i], "--rules=", 8) == 0)
      rules = std::atoi(argv[i] + 8);
    else
      argv[out++] = argv[i];
  }
  *argc = out;
  return rules;
}

}  // namespace

int main(int argc, char** argv) {
  const int ruleCount = takeRuleCount(&argc, argv);
  for (const char* v : {"NCCL_PILOT_TUNER_TABLE", "NCCL_TUNER_CONFIG_FILE", "NCCL_PILOT_TUNER",
                        "NCCL_PILOT_TUNER_STRICT", "NCCL_ALGO", "NCCL_PROTO", "NCCL_DEBUG"}) {
    unsetenv(v);
  }
  std::string tablePath;
  if (ruleCount > 0) {
    gSetup.rules = bench::generateRules(ruleCount);
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
  gSetup.requests = bench::generateRequests(kRequests, 0x5eed);
  for (int c = 0; c < bench::kNumColl; ++c) bench::baseCostTable(c, gSetup.work[c]);

  void* handle = dlopen(PILOT_TUNER_MODULE, RTLD_NOW | RTLD_LOCAL);
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
  bool ok = gWarnings == 0 && verify();
  std::fprintf(stderr, "table: %d rules (%s)\n", ruleCount, ruleCount ? tablePath.c_str() : "none");
  if (ok) {
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
