#include "job_sim.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "fake_nccl.h"
#include "pilot/calibration/dataset_loader.h"
#include "pilot/calibration/labels.h"
#include "pilot/calibration/series.h"
#include "profiler_host.h"

namespace sim {
namespace {

const char* const kAlgoNames[kNumAlgo] = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
const char* const kProtoNames[kNumProto] = {"LL", "LL128", "Simple"};
// NCCL's spelling in the profiler's Coll event (ncclAlgoStr / ncclProtoStr upper-cased).
const char* const kProfAlgo[kNumAlgo] = {
    "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
const char* const kProfProto[kNumProto] = {"LL", "LL128", "SIMPLE"};

int algoIndex(const std::string& name) {
  for (int a = 0; a < kNumAlgo; ++a) {
    if (name == kAlgoNames[a]) return a;
  }
  return -1;
}

int protoIndex(const std::string& name) {
  for (int p = 0; p < kNumProto; ++p) {
    if (name == kProtoNames[p]) return p;
  }
  return -1;
}

double logDistance(double a, double b) {
  return std::fabs(std::log(a / b));
}

std::string collFunc(const std::string& collective) {
  static const std::map<std::string, std::string> kFuncs = {{"allreduce", "AllReduce"},
                                                            {"allgather", "AllGather"},
                                                            {"reducescatter", "ReduceScatter"},
                                                            {"broadcast", "Broadcast"},
                                                            {"reduce", "Reduce"}};
  auto it = kFuncs.find(collective);
  return it == kFuncs.end() ? "" : it->second;
}

int collType(const std::string& collective) {
  static const std::map<std::string, int> kTypes = {{"broadcast", ncclFuncBroadcast},
                                                    {"reduce", ncclFuncReduce},
                                                    {"allgather", ncclFuncAllGather},
                                                    {"reducescatter", ncclFuncReduceScatter},
                                                    {"allreduce", ncclFuncAllReduce}};
  auto it = kTypes.find(collective);
  return it == kTypes.end() ? -1 : it->second;
}

/// A partial forcing measured at one size: the cell half it fixes and its time.
struct Partial {
  int algo = -1, proto = -1;
  double us = 0;
};

// ---- one rank ---------------------------------------------------------------------------

// Failed assertions so far in this process (the fake hosts check NCCL's invariants with gtest;
// a forked rank inherits its test's earlier failures, so it counts its own).
/// NCCL's proxy thread: one per rank for the whole job, as in NCCL, so that a collective's
/// kernel events come from another thread than its launch. (A thread per call was 60,000 thread
/// creations in a 2-node test, most of the simulator's time under the sanitizers.)
class ProxyThread {
 public:
  ProxyThread() : thread_([this] { serve(); }) {}
  ~ProxyThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  ProxyThread(const ProxyThread&) = delete;
  ProxyThread& operator=(const ProxyThread&) = delete;

  /// Runs work on the proxy thread and returns once it has run.
  void run(const std::function<void()>& work) {
    std::unique_lock<std::mutex> lock(mutex_);
    work_ = &work;
    wake_.notify_all();
    wake_.wait(lock, [this] { return work_ == nullptr; });
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || work_ != nullptr; });
      if (work_ == nullptr) return;  // stopped with nothing to run
      const std::function<void()>& work = *work_;
      lock.unlock();
      work();
      lock.lock();
      work_ = nullptr;
      wake_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  const std::function<void()>* work_ = nullptr;
  bool stop_ = false;
  std::thread thread_;  // last: it starts once the members it reads exist
};

int failedParts() {
  const ::testing::UnitTest* u = ::testing::UnitTest::GetInstance();
  const ::testing::TestResult* r =
      u->current_test_info() ? u->current_test_info()->result() : &u->ad_hoc_test_result();
  int n = 0;
  for (int i = 0; i < r->total_part_count(); ++i) n += r->GetTestPartResult(i).failed() ? 1 : 0;
  return n;
}

int runRank(const Truth& truth, const JobOptions& o, int rank) {
  const int failedBefore = failedParts();
  fake::resetEnv();
  for (const char* name :
       {"NCCL_PILOT_TUNER_EXPLORE", "NCCL_PILOT_METRICS", "NCCL_PILOT_METRICS_DIR",
        "NCCL_PILOT_METRICS_SAMPLE", "NCCL_PILOT_METRICS_MIN_BYTES", "NCCL_PILOT_METRICS_PORT",
        "NCCL_PILOT_METRICS_INTERVAL_S"}) {
    unsetenv(name);
  }
  if (!o.table.empty()) setenv("NCCL_PILOT_TUNER_TABLE", o.table.c_str(), 1);
  if (!o.explore.empty()) setenv("NCCL_PILOT_TUNER_EXPLORE", o.explore.c_str(), 1);
  if (!o.metricsDir.empty()) setenv("NCCL_PILOT_METRICS_DIR", o.metricsDir.c_str(), 1);

  const fake::Release& rel = fake::release("2.28");  // tuner v5, profiler v5
  fake::Module tuner(o.tunerModule.c_str());
  if (!tuner.ok() || tuner.v5 == nullptr) {
    std::fprintf(stderr, "rank %d: %s: %s\n", rank, o.tunerModule.c_str(), tuner.error().c_str());
    return 1;
  }
  std::unique_ptr<fakeprof::Module> profiler;
  std::unique_ptr<fakeprof::Comm> prof;
  if (!o.metricsDir.empty() && !o.profilerModule.empty()) {
    profiler = std::make_unique<fakeprof::Module>(o.profilerModule);
    if (!profiler->ok() || profiler->v5 == nullptr) {
      std::fprintf(stderr, "rank %d: %s: %s\n", rank, o.profilerModule.c_str(),
                   profiler->error().c_str());
      return 1;
    }
  }
  fake::Shape shape;
  shape.nRanks = static_cast<size_t>(truth.ranks);
  shape.nNodes = static_cast<size_t>(truth.nodes);
  int status = 0;
  RankResult result;
  {
    fake::FakeComm comm(tuner, rel, shape);
    if (comm.initResult() != ncclSuccess) {
      std::fprintf(stderr, "rank %d: tuner init failed\n", rank);
      return 1;
    }
    if (profiler) {
      prof = std::make_unique<fakeprof::Comm>(*profiler, 5, fake::kCommId, "sim", truth.nodes,
                                              truth.ranks, rank);
      if (prof->initResult() != ncclSuccess || prof->context() == nullptr) {
        std::fprintf(stderr, "rank %d: the profiler does not measure\n", rank);
        return 1;
      }
    }
    std::unique_ptr<ProxyThread> proxy;
    if (prof) proxy = std::make_unique<ProxyThread>();
    std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(rank) + 1);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const int type = collType(truth.collective);
    const std::string func = collFunc(truth.collective);
    uint64_t clock = 1'900'000'000'000'000'000ull;  // a GPU globaltimer
    uint64_t seq = 0;
    for (int i = 0; i < o.calls; ++i) {
      for (size_t s = 0; s < truth.sizes.size(); ++s) {
        const SizeTruth& st = truth.sizes[s];
        fake::CostTable costs;
        costs.numAlgo = rel.numAlgo;
        const std::vector<float> c = st.costs();
        std::copy(c.begin(), c.begin() + costs.size(), costs.cells);
        fake::Call call;
        call.coll = type;
        call.nBytes = st.bytes;
        const fake::Decision d = comm.collInfo(call, costs);
        CallRecord r;
        r.iteration = i;
        r.size = static_cast<int>(s);
        r.cell = d.choice.algo < 0 ? -1 : d.choice.algo * kNumProto + d.choice.proto;
        r.nChannels = d.nChannels;
        r.truthUs = r.cell < 0 ? -1 : st.runUs(r.cell);
        if (r.truthUs < 0) {
          std::fprintf(stderr, "rank %d: call %d ran %s, which the sweep never measured\n", rank, i,
                       cellName(r.cell).c_str());
          status = 1;
          r.truthUs = st.runUs(st.ncclCell);
        }
        double factor = std::exp(o.sigma * normal(rng));
        if (uniform(rng) < o.stragglerShare) factor *= o.stragglerFactor;
        r.noisyUs = r.truthUs * factor;
        result.calls.push_back(r);
        if (prof) {
          fakeprof::Collective coll;
          coll.func = func;
          // NCCL's Coll event counts one rank's elements: AllGather's send count (nBytes, the
          // tuner's size, is the total over ranks), ReduceScatter's receive count.
          const bool perRank = type == ncclFuncAllGather || type == ncclFuncReduceScatter;
          coll.count = st.bytes / 4 / (perRank ? static_cast<uint64_t>(truth.ranks) : 1);
          coll.datatype = "ncclFloat32";
          coll.algo = kProfAlgo[d.choice.algo];
          coll.proto = kProfProto[d.choice.proto];
          coll.seqNumber = seq++;
          const auto ns = static_cast<uint64_t>(r.noisyUs * 1000.0);
          coll.channels = fakeprof::channelsTaking(d.nChannels > 0 ? d.nChannels : 2, ns, clock);
          clock += ns + 5000;
          void* h = prof->enqueue(coll);
          proxy->run([&] { prof->kernels(h, coll); });
        }
      }
    }
    if (prof) prof->finalize();
  }
  for (const fake::LogLine& l : fake::capturedLogs()) {
    result.log.push_back(l.text);
    std::string lower = l.text;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (lower.find("explor") != std::string::npos) result.exploreLogged = true;
  }
  const std::string base = o.outDir + "/rank" + std::to_string(rank);
  {
    std::ofstream out(base + ".decisions");
    out << "# iteration size bytes cell nchannels truth_us noisy_us\n";
    out << "explore_logged " << (result.exploreLogged ? 1 : 0) << "\n";
    char line[200];
    for (const CallRecord& r : result.calls) {
      std::snprintf(line, sizeof line, "%d %d %llu %d %d %.17g %.17g\n", r.iteration, r.size,
                    static_cast<unsigned long long>(truth.sizes[r.size].bytes), r.cell, r.nChannels,
                    r.truthUs, r.noisyUs);
      out << line;
    }
    out << "end\n";
    if (!out) status = 1;
  }
  std::ofstream log(base + ".log");
  for (const std::string& l : result.log) log << l << "\n";
  if (failedParts() != failedBefore) {
    std::fprintf(stderr, "rank %d: the fake NCCL's checks failed (above)\n", rank);
    status = 1;
  }
  return status;
}

bool readRank(const std::string& path, RankResult& r) {
  std::ifstream in(path);
  std::string line;
  bool ended = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line == "end") {
      ended = true;
      break;
    }
    std::istringstream words(line);
    if (line.rfind("explore_logged ", 0) == 0) {
      std::string key;
      int v = 0;
      words >> key >> v;
      r.exploreLogged = v != 0;
      continue;
    }
    CallRecord c;
    unsigned long long bytes = 0;
    if (!(words >> c.iteration >> c.size >> bytes >> c.cell >> c.nChannels >> c.truthUs >>
          c.noisyUs)) {
      return false;
    }
    r.calls.push_back(c);
  }
  std::ifstream log(path.substr(0, path.size() - std::strlen(".decisions")) + ".log");
  while (std::getline(log, line)) r.log.push_back(line);
  return ended;
}

}  // namespace

std::string cellName(int cell) {
  if (cell < 0 || cell >= kNumCells) return "none";
  return std::string(kAlgoNames[cell / kNumProto]) + "/" + kProtoNames[cell % kNumProto];
}

double SizeTruth::runUs(int cell) const {
  if (cell < 0 || cell >= kNumCells) return -1;
  if (cell == ncclCell) return defaultUs;
  if (costModel == CostModel::Nccl && modelUs[static_cast<size_t>(cell)] < 0) return -1;
  return forcedUs[cell];
}

int SizeTruth::fastestCell() const {
  int best = -1;
  for (int c = 0; c < kNumCells; ++c) {
    if (runUs(c) >= 0 && (best < 0 || runUs(c) < runUs(best))) best = c;
  }
  return best;
}

double SizeTruth::fastestUs() const {
  return runUs(fastestCell());
}

std::vector<float> SizeTruth::costs() const {
  std::vector<float> t(kNumCells, -1.0f);
  if (costModel == CostModel::Nccl) {
    for (int c = 0; c < kNumCells; ++c) {
      if (runUs(c) >= 0) t[static_cast<size_t>(c)] = modelUs[static_cast<size_t>(c)];
    }
    return t;
  }
  for (int c = 0; c < kNumCells; ++c) {
    if (forcedUs[c] >= 0) t[static_cast<size_t>(c)] = static_cast<float>(runUs(c));
  }
  if (ncclCell >= 0) t[static_cast<size_t>(ncclCell)] = static_cast<float>(0.95 * fastestUs());
  return t;
}

const std::vector<std::string>& defaultLabels() {
  static const std::vector<std::string> kLabels = {"default=default",
                                                   "iteration_*=default",
                                                   "ring=NCCL_ALGO=Ring",
                                                   "tree=NCCL_ALGO=Tree",
                                                   "auto_*=NCCL_PROTO=*",
                                                   "ring_*=NCCL_ALGO=Ring,NCCL_PROTO=*",
                                                   "tree_*=NCCL_ALGO=Tree,NCCL_PROTO=*"};
  return kLabels;
}

std::string loadTruth(const std::string& path, const std::string& collective, Truth& out,
                      const std::vector<std::string>& labels) {
  namespace cal = pilot::calibration;
  cal::LoadOptions options;
  for (const std::string& l : labels) {
    auto rule = cal::parseLabelRule(l);
    if (!rule.ok()) return "bad label rule " + l;
    options.labels.push_back(*rule);
  }
  const cal::Dataset data = cal::loadDataset({path}, options);
  if (!data.problems.empty()) return path + ": " + data.problems[0];
  const cal::Measurements m = cal::summarize(data);
  const cal::Shape* shape = nullptr;
  for (const cal::Shape& s : m.shapes) {
    if (s.key.collective == collective) {
      if (shape != nullptr) return path + ": several shapes of " + collective;
      shape = &s;
    }
  }
  if (shape == nullptr) return path + ": no " + collective;
  const cal::Series* def = shape->defaults();
  if (def == nullptr) return path + ": no default runs";
  if (shape->key.nodes <= 0 || shape->key.ranks <= 0) return path + ": unknown shape";
  out = Truth{};
  out.source = path;
  out.collective = collective;
  out.nodes = shape->key.nodes;
  out.ranks = shape->key.ranks;
  for (const cal::SizeStat& ds : def->sizes) {
    SizeTruth st;
    st.bytes = ds.size;
    st.defaultUs = ds.timeUs;
    std::vector<std::vector<double>> measured(kNumCells);
    std::vector<Partial> algoOnly, protoOnly;
    for (const cal::Series& s : shape->series) {
      if (s.isDefault() || s.config.minChannels || s.config.maxChannels) continue;
      const cal::SizeStat* at = s.at(ds.size);
      if (at == nullptr || at->timeUs <= 0) continue;
      const int a = s.config.algo.empty() ? -1 : algoIndex(s.config.algo);
      const int p = s.config.proto.empty() ? -1 : protoIndex(s.config.proto);
      if ((!s.config.algo.empty() && a < 0) || (!s.config.proto.empty() && p < 0)) continue;
      if (a >= 0 && p >= 0) {
        measured[static_cast<size_t>(a * kNumProto + p)].push_back(at->timeUs);
      } else if (a >= 0) {
        algoOnly.push_back({a, -1, at->timeUs});
      } else if (p >= 0) {
        protoOnly.push_back({-1, p, at->timeUs});
      }
    }
    // A partial forcing borrows the other half from the nearest configuration forcing it.
    auto nearest = [](const std::vector<Partial>& list, double us) {
      const Partial* best = nullptr;
      for (const Partial& q : list) {
        if (best == nullptr || logDistance(q.us, us) < logDistance(best->us, us)) best = &q;
      }
      return best;
    };
    for (const Partial& q : algoOnly) {
      const Partial* other = nearest(protoOnly, q.us);
      if (other) measured[static_cast<size_t>(q.algo * kNumProto + other->proto)].push_back(q.us);
    }
    for (const Partial& q : protoOnly) {
      const Partial* other = nearest(algoOnly, q.us);
      if (other) measured[static_cast<size_t>(other->algo * kNumProto + q.proto)].push_back(q.us);
    }
    int any = 0;
    for (int c = 0; c < kNumCells; ++c) {
      st.forcedUs[c] = -1;
      const auto& v = measured[static_cast<size_t>(c)];
      if (v.empty()) continue;
      double logSum = 0;
      for (double t : v) logSum += std::log(t);
      st.forcedUs[c] = std::exp(logSum / static_cast<double>(v.size()));
      ++any;
    }
    if (any == 0) continue;
    for (int c = 0; c < kNumCells; ++c) {
      if (st.forcedUs[c] < 0) continue;
      if (st.ncclCell < 0 || logDistance(st.forcedUs[c], st.defaultUs) <
                                 logDistance(st.forcedUs[st.ncclCell], st.defaultUs)) {
        st.ncclCell = c;
      }
    }
    st.twinCell = st.ncclCell;
    out.sizes.push_back(st);
  }
  if (out.sizes.empty()) return path + ": no size with a default and a forced configuration";
  return "";
}

std::string applyNcclModel(Truth& truth, const NcclShape& shape) {
  const int type = collType(truth.collective);
  if (type < 0) return "no NCCL function for " + truth.collective;
  const std::string bad = checkNcclVersion(shape.nccl);
  if (!bad.empty()) return bad;
  NcclShape s = shape;
  s.nodes = truth.nodes;
  s.ranks = truth.ranks;
  if (s.nodes <= 0 || s.ranks < s.nodes) return "bad shape";
  std::vector<SizeTruth> sizes = truth.sizes;
  for (SizeTruth& st : sizes) {
    const std::array<float, 21> model = ncclCostTable(s, type, st.bytes);
    std::copy(model.begin(), model.end(), st.modelUs.begin());
    // NCCL's pick over what NCCL would see: its own table. The simulator's table keeps the
    // measured cells and the pick, so the pick stays its minimum.
    st.ncclCell = ncclPick(model);
    if (st.ncclCell < 0) return "the model enables no cell at " + std::to_string(st.bytes) + " B";
    st.costModel = CostModel::Nccl;
  }
  truth.sizes = std::move(sizes);
  truth.costModel = CostModel::Nccl;
  truth.shape = s;
  return "";
}

namespace {

/// The forced cell nearest the default among the cells NCCL's model enables; -1 = none.
int enabledTwinOf(const SizeTruth& st) {
  int best = -1;
  for (int c = 0; c < kNumCells; ++c) {
    if (st.forcedUs[c] < 0 || st.modelUs[static_cast<size_t>(c)] < 0) continue;
    if (best < 0 ||
        logDistance(st.forcedUs[c], st.defaultUs) < logDistance(st.forcedUs[best], st.defaultUs)) {
      best = c;
    }
  }
  return best;
}

}  // namespace

ModelAgreement compareModel(const Truth& truth) {
  ModelAgreement m;
  const auto& sz = truth.sizes;
  m.sizes = static_cast<int>(sz.size());
  for (const SizeTruth& st : sz) {
    const int twin = enabledTwinOf(st);
    m.enabledTwin.push_back(twin);
    if (twin >= 0 && twin % kNumProto == st.ncclCell % kNumProto) ++m.agreeProtocol;
    if (st.forcedUs[st.ncclCell] < 0) continue;  // the sweep never forced the pick (PAT)
    ++m.comparable;
    m.agreeTwin += st.ncclCell == st.twinCell;
    m.agreeEnabledTwin += st.ncclCell == twin;
    if (st.ncclCell != twin) m.disagreements.push_back(st.bytes);
  }
  for (size_t i = 1; i < sz.size(); ++i) {
    if (m.enabledTwin[i] != m.enabledTwin[i - 1]) m.twinSwitches.push_back(sz[i].bytes);
  }
  for (size_t i = 1; i < sz.size(); ++i) {
    const int a = sz[i - 1].ncclCell, b = sz[i].ncclCell;
    if (a == b) continue;
    ModelSwitch w;
    w.bytes = sz[i].bytes;
    w.from = a;
    w.to = b;
    const bool protoChanges = a % kNumProto != b % kNumProto;
    const bool algoSeen =
        a / kNumProto != b / kNumProto && sz[i - 1].forcedUs[a] >= 0 && sz[i].forcedUs[b] >= 0;
    w.observable = protoChanges || algoSeen;
    if (w.observable) {
      // The same change in the enabled twin between sizes j-1 and j, nearest i.
      auto same = [&](int twin, int cell) {
        if (twin < 0) return false;
        if (protoChanges && twin % kNumProto != cell % kNumProto) return false;
        if (algoSeen && twin / kNumProto != cell / kNumProto) return false;
        return true;
      };
      for (size_t j = 1; j < sz.size(); ++j) {
        if (!same(m.enabledTwin[j - 1], a) || !same(m.enabledTwin[j], b)) continue;
        const int steps = static_cast<int>(j > i ? j - i : i - j);
        if (w.twinSteps < 0 || steps < w.twinSteps) {
          w.twinSteps = steps;
          w.twinBytes = sz[j].bytes;
        }
      }
    }
    m.switches.push_back(w);
  }
  return m;
}

std::string describeModel(const Truth& truth) {
  std::ostringstream out;
  char line[512];
  const NcclShape& s = truth.shape;
  std::snprintf(line, sizeof line,
                "%s %s: %d nodes, %d ranks; NCCL %s model: sm%d, %s CPU, %.3g GB/s x %d graph "
                "channel(s), %d run channels, LL128 %s, tree pattern %s\n",
                truth.source.c_str(), truth.collective.c_str(), truth.nodes, truth.ranks,
                s.nccl.c_str(), s.compCap, s.amdCpu ? "AMD" : "Intel", s.netGBps, s.graphChannels,
                s.runChannels, s.ll128Path ? "on (path <= PXB)" : "off (path PHB)",
                s.treePattern ? "TREE (x0.85)" : "balanced");
  out << line;
  out << "cells: predicted µs / measured µs (forced; '-' = never forced; the pick's measured "
         "time is the default's; '*' = NCCL disables it)\n";
  const ModelAgreement m = compareModel(truth);
  for (size_t i = 0; i < truth.sizes.size(); ++i) {
    const SizeTruth& st = truth.sizes[i];
    std::snprintf(line, sizeof line,
                  "%10llu B  pick %-11s twin %-11s enabled twin %-11s fastest %-11s %9.1f |",
                  static_cast<unsigned long long>(st.bytes), cellName(st.ncclCell).c_str(),
                  cellName(st.twinCell).c_str(), cellName(m.enabledTwin[i]).c_str(),
                  cellName(st.fastestCell()).c_str(), st.fastestUs());
    out << line;
    for (int c = 0; c < kNumCells; ++c) {
      const float model = st.modelUs[static_cast<size_t>(c)];
      if (model < 0 && st.forcedUs[c] < 0) continue;
      char pred[32], meas[32];
      if (model < 0) {
        std::snprintf(pred, sizeof pred, "*");
      } else {
        std::snprintf(pred, sizeof pred, "%.1f", model);
      }
      const double measured = c == st.ncclCell ? st.defaultUs : st.forcedUs[c];
      if (measured < 0) {
        std::snprintf(meas, sizeof meas, "-");
      } else {
        std::snprintf(meas, sizeof meas, "%.1f", measured);
      }
      std::snprintf(line, sizeof line, " %s %s/%s", cellName(c).c_str(), pred, meas);
      out << line;
    }
    out << "\n";
  }
  out << "model switches:";
  for (const ModelSwitch& w : m.switches) {
    std::snprintf(line, sizeof line, " %llu B %s -> %s", static_cast<unsigned long long>(w.bytes),
                  cellName(w.from).c_str(), cellName(w.to).c_str());
    out << line;
    if (!w.observable) {
      out << " (not observable: never forced)";
    } else if (w.twinSteps < 0) {
      out << " (the twin never makes it)";
    } else {
      std::snprintf(line, sizeof line, " (twin at %llu B, %d step(s))",
                    static_cast<unsigned long long>(w.twinBytes), w.twinSteps);
      out << line;
    }
    out << ";";
  }
  out << "\nenabled twin switches:";
  for (uint64_t b : m.twinSwitches) out << " " << b;
  // The twin's and the fastest enabled cell's switch points, for a look.
  const auto& sz = truth.sizes;
  out << "\ntwin switches:";
  for (size_t i = 1; i < sz.size(); ++i) {
    if (sz[i].twinCell != sz[i - 1].twinCell) out << " " << sz[i].bytes;
  }
  out << "\nfastest enabled cell switches:";
  for (size_t i = 1; i < sz.size(); ++i) {
    if (sz[i].fastestCell() != sz[i - 1].fastestCell()) out << " " << sz[i].bytes;
  }
  std::snprintf(line, sizeof line,
                "\nagreement: pick == twin %d, == enabled twin %d of %d sizes where the sweep "
                "forced the pick (%d sizes); same protocol as the enabled twin %d of %d\n",
                m.agreeTwin, m.agreeEnabledTwin, m.comparable, m.sizes, m.agreeProtocol, m.sizes);
  out << line;
  out << "disagreements (pick != enabled twin):";
  for (uint64_t b : m.disagreements) out << " " << b;
  out << "\n";
  return out.str();
}

JobResult runJob(const Truth& truth, const JobOptions& o) {
  JobResult job;
  const int n = o.processes > 0 ? o.processes : truth.ranks;
  if (::mkdir(o.outDir.c_str(), 0755) != 0 && errno != EEXIST) {
    job.error = "mkdir " + o.outDir + ": " + std::strerror(errno);
    return job;
  }
  std::vector<pid_t> pids;
  std::fflush(stdout);
  std::fflush(stderr);
  for (int rank = 0; rank < n; ++rank) {
    const pid_t pid = fork();
    if (pid == -1) {
      job.error = std::string("fork: ") + std::strerror(errno);
      break;
    }
    if (pid == 0) {
      int status = 2;
      try {
        status = runRank(truth, o, rank);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(status);
    }
    pids.push_back(pid);
  }
  for (size_t rank = 0; rank < pids.size(); ++rank) {
    int status = 0;
    pid_t w;
    do {
      w = waitpid(pids[rank], &status, 0);
    } while (w == -1 && errno == EINTR);
    if (job.error.empty() && (w != pids[rank] || !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
      job.error = "rank " + std::to_string(rank) + " failed (" +
                  (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                       : "exit " + std::to_string(WEXITSTATUS(status))) +
                  "), see " + o.outDir;
    }
  }
  if (!job.error.empty()) return job;
  job.ranks.resize(static_cast<size_t>(n));
  for (int rank = 0; rank < n; ++rank) {
    const std::string path = o.outDir + "/rank" + std::to_string(rank) + ".decisions";
    if (!readRank(path, job.ranks[static_cast<size_t>(rank)])) {
      job.error = "cannot read " + path;
      return job;
    }
  }
  const RankResult& r0 = job.ranks[0];
  for (int rank = 1; rank < n && job.divergence.empty(); ++rank) {
    const RankResult& r = job.ranks[static_cast<size_t>(rank)];
    if (r.calls.size() != r0.calls.size()) {
      job.divergence = "rank " + std::to_string(rank) + " made " + std::to_string(r.calls.size()) +
                       " calls, rank 0 " + std::to_string(r0.calls.size());
      break;
    }
    for (size_t k = 0; k < r0.calls.size(); ++k) {
      if (r.calls[k].cell != r0.calls[k].cell || r.calls[k].nChannels != r0.calls[k].nChannels) {
        job.divergence = "call " + std::to_string(k) + ": rank 0 " + cellName(r0.calls[k].cell) +
                         ", rank " + std::to_string(rank) + " " + cellName(r.calls[k].cell);
        break;
      }
    }
  }
  for (const CallRecord& c : r0.calls) {
    const SizeTruth& st = truth.sizes[static_cast<size_t>(c.size)];
    job.jobUs += st.runUs(c.cell);
    job.jobNoisyUs += c.noisyUs;
    job.ncclUs += st.runUs(st.ncclCell);
  }
  return job;
}

JobResult runShadow(const Truth& truth, const JobOptions& options) {
  JobOptions off = options;
  off.explore = "0";
  off.metricsDir = "";
  off.outDir = options.outDir + "/shadow";
  return runJob(truth, off);
}

double ExplorationStats::maxSizeShare() const {
  double worst = 0;
  for (size_t s = 0; s < callsPerSize.size(); ++s) {
    if (callsPerSize[s] > 0) {
      worst = std::max(worst, static_cast<double>(explorationsPerSize[s]) / callsPerSize[s]);
    }
  }
  return worst;
}

int ExplorationStats::sizesWithAlternatives(int n) const {
  return static_cast<int>(std::count_if(alternativesPerSize.begin(), alternativesPerSize.end(),
                                        [n](int a) { return a >= n; }));
}

ExplorationStats compareRuns(const Truth& truth, const JobResult& job, const JobResult& baseline) {
  ExplorationStats s;
  const size_t sizes = truth.sizes.size();
  s.callsPerSize.assign(sizes, 0);
  s.explorationsPerSize.assign(sizes, 0);
  s.alternativesPerSize.assign(sizes, 0);
  if (job.ranks.empty() || baseline.ranks.empty()) return s;
  const auto& a = job.ranks[0].calls;
  const auto& b = baseline.ranks[0].calls;
  std::vector<std::set<int>> tried(sizes);
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
    const auto size = static_cast<size_t>(a[k].size);
    ++s.calls;
    ++s.callsPerSize[size];
    if (a[k].cell != b[k].cell) {
      ++s.explorations;
      ++s.explorationsPerSize[size];
      tried[size].insert(a[k].cell);
    }
  }
  for (size_t i = 0; i < sizes; ++i) s.alternativesPerSize[i] = static_cast<int>(tried[i].size());
  return s;
}

Score scoreTable(const Truth& truth, const JobOptions& base, const std::string& table) {
  Score score;
  JobOptions o = base;
  o.table = table;
  o.explore = "";
  o.metricsDir = "";
  o.calls = 1;
  o.processes = 1;
  const JobResult job = runJob(truth, o);
  if (!job.error.empty()) {
    score.error = job.error;
    return score;
  }
  double logNccl = 0, logTable = 0;
  for (const CallRecord& c : job.ranks[0].calls) {
    const SizeTruth& st = truth.sizes[static_cast<size_t>(c.size)];
    SizeScore z;
    z.bytes = st.bytes;
    z.ncclCell = st.ncclCell;
    z.tableCell = c.cell;
    z.fastestCell = st.fastestCell();
    z.ncclUs = st.runUs(st.ncclCell);
    z.tableUs = st.runUs(c.cell);
    z.fastestUs = st.fastestUs();
    logNccl += std::log(z.fastestUs / z.ncclUs);
    logTable += std::log(z.fastestUs / z.tableUs);
    score.totalTableUs += z.tableUs;
    score.totalNcclUs += z.ncclUs;
    score.totalFastestUs += z.fastestUs;
    if (z.tableUs / z.ncclUs > score.worst) {
      score.worst = z.tableUs / z.ncclUs;
      score.worstBytes = z.bytes;
    }
    score.sizes.push_back(z);
  }
  const double n = static_cast<double>(score.sizes.size());
  score.effNccl = std::exp(logNccl / n);
  score.effTable = std::exp(logTable / n);
  score.captured =
      score.effNccl >= 1.0 ? 1.0 : (score.effTable - score.effNccl) / (1.0 - score.effNccl);
  return score;
}

std::string describe(const ExplorationStats& s) {
  char line[320];
  const int sizesTwo = s.sizesWithAlternatives(2);
  int fewest = 0, most = 0;
  if (!s.alternativesPerSize.empty()) {
    fewest = *std::min_element(s.alternativesPerSize.begin(), s.alternativesPerSize.end());
    most = *std::max_element(s.alternativesPerSize.begin(), s.alternativesPerSize.end());
  }
  std::snprintf(line, sizeof line,
                "explorations %d of %d calls (%.2f%%), most at one size %.2f%%, sizes with >= 2 "
                "alternatives %d of %zu (%d..%d per size)",
                s.explorations, s.calls, 100.0 * s.share(), 100.0 * s.maxSizeShare(), sizesTwo,
                s.callsPerSize.size(), fewest, most);
  return line;
}

std::string describe(const Score& s) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line,
                "efficiency NCCL %.4f, table %.4f, captured %.1f%%, worst size %llu B at %.4fx "
                "NCCL\n",
                s.effNccl, s.effTable, 100.0 * s.captured,
                static_cast<unsigned long long>(s.worstBytes), s.worst);
  out << line;
  for (const SizeScore& z : s.sizes) {
    std::snprintf(line, sizeof line,
                  "  %10llu B  nccl %-12s %10.2f  table %-12s %10.2f  fastest %-12s %10.2f\n",
                  static_cast<unsigned long long>(z.bytes), cellName(z.ncclCell).c_str(), z.ncclUs,
                  cellName(z.tableCell).c_str(), z.tableUs, cellName(z.fastestCell).c_str(),
                  z.fastestUs);
    out << line;
  }
  return out.str();
}

std::vector<LoopJob> runLoop(const Truth& truth, const JobOptions& base,
                             const LoopOptions& options) {
  std::vector<LoopJob> jobs;
  std::string metrics, table;
  for (int n = 1; n <= options.jobs; ++n) {
    LoopJob j;
    const std::string dir = base.outDir + "/job" + std::to_string(n);
    JobOptions o = base;
    o.outDir = dir;
    o.explore = options.explore;
    o.table = table;
    o.metricsDir = dir + "/metrics";
    o.seed = base.seed * 1000 + static_cast<uint64_t>(n);
    if ((::mkdir(base.outDir.c_str(), 0755) != 0 && errno != EEXIST) ||
        (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) ||
        ::mkdir(o.metricsDir.c_str(), 0755) != 0) {
      j.error = "cannot make " + o.metricsDir + ": " + std::strerror(errno);
      jobs.push_back(std::move(j));
      break;
    }
    j.job = runJob(truth, o);
    if (j.job.error.empty()) {
      const JobResult shadow = runShadow(truth, o);
      j.stats = compareRuns(truth, j.job, shadow);
      if (!shadow.error.empty()) j.error = "shadow: " + shadow.error;
    } else {
      j.error = j.job.error;
    }
    metrics += " " + o.metricsDir;
    j.table = dir + "/fitted.table";
    if (j.error.empty()) {
      const std::string command = options.fitCommand + " fit" + metrics + " -o " + j.table + " " +
                                  options.fitFlags + " 2>&1";
      FILE* p = popen(command.c_str(), "r");
      char buffer[4096];
      size_t got;
      while (p != nullptr && (got = fread(buffer, 1, sizeof buffer, p)) > 0) {
        j.fitOutput.append(buffer, got);
      }
      const int status = p == nullptr ? -1 : pclose(p);
      if (status != 0) j.error = "fit failed: " + command + "\n" + j.fitOutput;
    }
    if (j.error.empty()) {
      JobOptions s = base;
      s.outDir = dir + "/score";
      j.score = scoreTable(truth, s, j.table);
      if (!j.score.error.empty()) j.error = "score: " + j.score.error;
    }
    table = j.table;
    const bool failed = !j.error.empty();
    jobs.push_back(std::move(j));
    if (failed) break;
  }
  return jobs;
}

std::string describe(const LoopJob& j, int number) {
  char line[640];
  if (!j.error.empty()) return "job " + std::to_string(number) + ": " + j.error;
  const Score& s = j.score;
  std::snprintf(
      line, sizeof line,
      "job %d: %.4fx NCCL alone, %s%s; table after it: captured %.1f%% (efficiency "
      "NCCL %.4f, table %.4f), worst size %llu B at %.4fx NCCL, a job calling every "
      "size alike %.4fx NCCL (fastest %.4fx)",
      number, j.job.jobUs / j.job.ncclUs, describe(j.stats).c_str(),
      j.job.divergence.empty() ? "" : (", RANKS DECIDED APART: " + j.job.divergence).c_str(),
      100.0 * s.captured, s.effNccl, s.effTable, static_cast<unsigned long long>(s.worstBytes),
      s.worst, s.totalTableUs / s.totalNcclUs, s.totalFastestUs / s.totalNcclUs);
  return line;
}

}  // namespace sim
