#include "pilot/metrics/runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "host_facts.h"
#include "http_endpoint.h"
#include "pilot/core/file.h"
#include "pilot/core/text.h"
#include "pilot/metrics/event_path.h"
#include "pilot/metrics/prometheus.h"
#include "pilot/metrics/summary.h"
#include "pilot/version.h"

namespace pilot::metrics {

struct MetricsRuntime::Exporter {
  std::thread thread;
  int wake[2] = {-1, -1};
  std::unique_ptr<detail::HttpEndpoint> http;
  ~Exporter() {
    for (int fd : wake)
      if (fd >= 0) ::close(fd);
  }
};

namespace {

constexpr unsigned long kFlags = subsys::Init | subsys::Profile;

/// Local rank from the launcher (torchrun, Slurm, Open MPI, MPICH), so ranks on one host get
/// distinct ports; 0 when none says.
int localRankOf(const EnvLookup& env) {
  for (const char* name :
       {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}) {
    if (auto v = readText(env, name)) {
      auto n = text::parseUnsigned(*v);
      if (n && *n < 1024) return static_cast<int>(*n);
    }
  }
  return 0;
}

std::string fileStem(const std::string& dir, const std::string& node) {
  return dir + "/nccl_pilot_" + node + "_" + std::to_string(::getpid());
}

std::string percent(double ratio) {
  return std::to_string(static_cast<int>(ratio * 100.0 + 0.5)) + "%";
}

std::string microseconds(double ns) {
  return text::formatDecimal(static_cast<double>(static_cast<int64_t>(ns / 100.0)) / 10.0);
}

}  // namespace

MetricsRuntime::MetricsRuntime(EnvLookup env) : env_(env), tables_(std::move(env)) {}

MetricsRuntime::~MetricsRuntime() {
  // At exit NCCL's threads may still deliver events: stop our thread, free nothing they use.
  stopExporter(/*evenWithComms=*/true);
}

MetricsRuntime& MetricsRuntime::process() {
  static MetricsRuntime runtime(processEnv());
  return runtime;
}

const MetricsSettings& MetricsRuntime::loadSettings(Logger& log) {
  if (settings_) return *settings_;
  std::vector<std::string> warnings;
  settings_ = metricsSettingsFromEnv(env_, &warnings);
  for (const std::string& w : warnings) PILOT_LOG(log, Warn, kFlags | subsys::Env, "%s", w.c_str());
  node_ = detail::hostName();
  localRank_ = localRankOf(env_);
  const MetricsSettings& s = *settings_;
  if (!s.enabled) {
    PILOT_LOG(log, Info, kFlags, "metrics off (set %s=1 or %s): NCCL sends the profiler no events",
              setting::kMetrics, setting::kDir);
    return s;
  }
  std::string where = s.dir.empty() ? "no files" : "files in " + s.dir;
  if (s.port > 0) {
    where += ", HTTP on " + s.bind + ":" + std::to_string(s.port + localRank_) + "/metrics";
  }
  PILOT_LOG(log, Info, kFlags,
            "measuring collectives (%s, every %u s; 1 in %llu from %llu bytes; drift warning "
            "below %s of calibrated over %llu calls)",
            where.c_str(), s.intervalSeconds, static_cast<unsigned long long>(s.sample),
            static_cast<unsigned long long>(s.minBytes), percent(1.0 - s.driftThreshold).c_str(),
            static_cast<unsigned long long>(s.driftMinCalls));
  return s;
}

bool MetricsRuntime::enabled(Logger& log) {
  std::lock_guard<std::mutex> lock(mutex_);
  return loadSettings(log).enabled;
}

CommMonitor* MetricsRuntime::open(CommIdentity identity, std::unique_ptr<Logger> logger) {
  if (!logger) logger = std::make_unique<NullLogger>();
  std::lock_guard<std::mutex> lock(mutex_);
  const MetricsSettings& s = loadSettings(*logger);
  if (!s.enabled) return nullptr;
  if (!EventPath::process().reserve()) {
    PILOT_LOG(*logger, Warn, kFlags, "no memory for in-flight collectives; not measured");
    return nullptr;
  }
  identity.name = detail::printableName(identity.name.c_str());
  if (identity.gpu.empty()) identity.gpu = detail::currentGpu();
  tuner::ContextParams params;
  params.nRanks = static_cast<uint64_t>(std::max(identity.nRanks, 1));
  params.nNodes = static_cast<uint64_t>(std::max(identity.nNodes, 1));
  params.facts = identity.facts;
  auto table = tables_.compiledFor(params, nullLogger());
  const std::string source = table.compiled
                                 ? std::to_string(table.compiled->ruleCount()) + " rules of " +
                                       table.table->source + " apply to this communicator"
                                 : std::string("no tuning table: every decision is NCCL's");
  auto comm = std::make_unique<Comm>();
  comm->monitor = new CommMonitor(identity, s, std::move(table));
  comm->logger = std::move(logger);
  comm->previous.resize(CommMonitor::kMaxKeys + 1);
  PILOT_LOG(*comm->logger, Info, kFlags, "comm %s rank %d of %d (%s): measuring; %s",
            commIdText(identity.commId).c_str(), identity.rank, identity.nRanks,
            identity.name.empty() ? "unnamed" : identity.name.c_str(), source.c_str());
  CommMonitor* monitor = comm->monitor;
  Logger& log = *comm->logger;
  const bool first = comms_.empty();
  comms_.push_back(std::move(comm));
  if (first && !s.dir.empty()) {
    if (Status made = makeDirectories(s.dir); !made.ok()) {
      PILOT_LOG(log, Warn, kFlags, "%s; no metrics files", made.error().c_str());
    }
  }
  if (!exporter_) startExporter(log);
  if (first) exportLocked(nullptr);  // the files exist from the first communicator on
  return monitor;
}

void MetricsRuntime::close(CommMonitor* monitor) {
  if (monitor == nullptr) return;
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(comms_.begin(), comms_.end(),
                           [&](const std::unique_ptr<Comm>& c) { return c->monitor == monitor; });
    if (it == comms_.end()) return;
    exportLocked(it->get());
    comms_.erase(it);
    last = comms_.empty();
  }
  monitor->release();
  if (last) stopExporter(/*evenWithComms=*/false);
}

void MetricsRuntime::startExporter(Logger& log) {
  auto exporter = std::make_unique<Exporter>();
  if (::pipe2(exporter->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    PILOT_LOG(log, Warn, kFlags, "cannot start the exporter (pipe: %s); files only at finalize",
              std::strerror(errno));
    return;
  }
  const MetricsSettings& s = *settings_;
  if (s.port > 0) {
    auto http = detail::HttpEndpoint::listen(s.bind, s.port + localRank_);
    if (http.ok()) {
      exporter->http = std::move(http.value());
      httpPort_ = exporter->http->port();
    } else if (!httpWarned_) {
      httpWarned_ = true;
      PILOT_LOG(log, Warn, kFlags, "HTTP endpoint: %s; metrics go to files only",
                http.error().c_str());
    }
  }
  Exporter* raw = exporter.get();
  exporter->thread = std::thread([this, raw] { exporterLoop(*raw); });
  exporter_ = std::move(exporter);
}

void MetricsRuntime::stopExporter(bool evenWithComms) {
  std::unique_ptr<Exporter> exporter;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!evenWithComms && !comms_.empty()) return;  // a communicator opened meanwhile
    exporter = std::move(exporter_);
    httpPort_ = 0;
  }
  if (!exporter) return;
  const char stop = 1;
  while (::write(exporter->wake[1], &stop, 1) < 0 && errno == EINTR) {
  }
  if (exporter->thread.joinable()) exporter->thread.join();
}

void MetricsRuntime::exporterLoop(Exporter& exporter) {
  using Clock = std::chrono::steady_clock;
  const auto interval = std::chrono::seconds(settings_->intervalSeconds);
  auto next = Clock::now() + interval;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    pollfd fds[2] = {{exporter.wake[0], POLLIN, 0}, {-1, POLLIN, 0}};
    if (exporter.http) fds[1].fd = exporter.http->fd();
    const int n =
        ::poll(fds, exporter.http ? 2 : 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (n < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
    if (exporter.http && (fds[1].revents & POLLIN)) {
      exporter.http->serveOne([this] { return lastTextfile(); });
    }
    if (Clock::now() >= next) {
      exportNow();
      next += interval;
      if (next < Clock::now()) next = Clock::now() + interval;
    }
  }
}

CommReport MetricsRuntime::reportOf(Comm& comm, bool finalized) {
  CommMonitor& m = *comm.monitor;
  CommReport r;
  r.identity = m.identity();
  r.finalized = finalized;
  for (TaskKind kind : {TaskKind::Collective, TaskKind::P2p}) {
    TaskCounts& counts = kind == TaskKind::Collective ? r.collectives : r.p2p;
    counts.seen = m.seen(kind);
    counts.measured = m.measured(kind);
    for (int s = 0; s < static_cast<int>(Skip::Count); ++s) {
      counts.skipped[s] = m.skipped(static_cast<Skip>(s), kind);
    }
  }
  for (int g = 0; g < static_cast<int>(GroupOutcome::Count); ++g) {
    r.groups[g] = m.groups(static_cast<GroupOutcome>(g));
  }
  r.peersSentTo = m.peers(Operation::Send);
  r.peersReceivedFrom = m.peers(Operation::Recv);
  for (const CommMonitor::KeyView& v : m.keys()) {
    KeyReport k;
    k.fields = v.fields;
    k.other = v.other;
    if (!v.other) {
      k.decision = m.decisionLabel(v.fields.decision);
      k.band = m.decisionBand(v.fields.decision);
    }
    k.total = v.totals;
    KeyTotals& previous = comm.previous[v.index];
    k.interval = v.totals.since(previous);
    previous = v.totals;
    r.keys.push_back(std::move(k));
  }
  r.samples = m.samples().snapshot();
  for (const CallSamples::View& v : r.samples) {
    const SampleKey& k = v.key;
    r.sampleDecisions.push_back(m.decisionLabel(
        m.decide(k.op, k.messageBytes, k.algorithm, k.protocol, static_cast<int>(k.channels))));
  }
  r.samplesOverflow = m.samples().overflow();
  r.tableSha256 = m.tableSha256();
  return r;
}

void MetricsRuntime::warnDrift(Comm& comm, const CommReport& report) {
  struct Band {
    uint64_t calls = 0, liveNs = 0;
    double expectedNs = 0;
    std::string operations;
  };
  std::map<uint16_t, Band> bands;
  for (const KeyReport& k : report.keys) {
    if (k.other || k.fields.decision == KeyFields::kNcclDecided || k.total.expectedCalls == 0) {
      continue;
    }
    Band& b = bands[k.fields.decision];
    b.calls += k.total.expectedCalls;
    b.liveNs += k.total.expectedLiveNs;
    b.expectedNs += k.total.expectedNs;
    const std::string op = operationName(k.fields.op);
    if (b.operations.find(op) == std::string::npos) {
      b.operations += (b.operations.empty() ? "" : "/") + op;
    }
  }
  const MetricsSettings& s = *settings_;
  for (const auto& [decision, b] : bands) {
    if (b.calls < s.driftMinCalls || b.liveNs == 0 || comm.driftWarned.count(decision)) continue;
    const double ratio = b.expectedNs / static_cast<double>(b.liveNs);
    if (ratio >= 1.0 - s.driftThreshold) continue;
    comm.driftWarned.insert(decision);
    const CommIdentity& id = report.identity;
    const double calls = static_cast<double>(b.calls);
    PILOT_LOG(*comm.logger, Warn, kFlags,
              "drift: comm %s rank %d %s under %s (%s): live bus bandwidth is %s of the "
              "calibrated one over %llu calls (%s us per call, %s us expected); the table may "
              "no longer fit this machine (re-run nccl-pilot fit)",
              commIdText(id.commId).c_str(), id.rank, b.operations.c_str(),
              comm.monitor->decisionLabel(decision).c_str(),
              comm.monitor->decisionBand(decision).c_str(), percent(ratio).c_str(),
              static_cast<unsigned long long>(b.calls),
              microseconds(static_cast<double>(b.liveNs) / calls).c_str(),
              microseconds(b.expectedNs / calls).c_str());
  }
}

void MetricsRuntime::exportLocked(const Comm* closing) {
  ProcessReport p;
  p.node = node_;
  p.slurmJobId = settings_->slurmJobId;
  p.version = kVersion;
  p.pid = static_cast<long>(::getpid());
  EventPath& events = EventPath::process();
  for (int o = 0; o < static_cast<int>(Orphan::Count); ++o) {
    p.orphans[o] = events.orphans(static_cast<Orphan>(o));
  }
  p.slots = events.capacity();
  p.slotsInUse = events.slotsInUse();
  p.groupsInUse = events.groupsInUse();
  ProcessReport summary = p;
  for (auto& comm : comms_) {
    const bool isClosing = comm.get() == closing;
    CommReport r = reportOf(*comm, isClosing);
    warnDrift(*comm, r);
    if (isClosing) {
      if (finished_.size() == kMaxFinishedComms) finished_.erase(finished_.begin());
      finished_.push_back(r);
    } else {
      summary.comms.push_back(r);
    }
    p.comms.push_back(std::move(r));
  }
  summary.comms.insert(summary.comms.begin(), finished_.begin(), finished_.end());
  textfile_ = renderTextfile(p);
  const MetricsSettings& s = *settings_;
  if (s.dir.empty()) return;
  const std::string stem = fileStem(s.dir, node_);
  Status wrote = writeFileAtomically(stem + ".prom", textfile_);
  if (wrote.ok()) wrote = writeFileAtomically(stem + ".jsonl", renderSummary(summary));
  if (!wrote.ok() && !writeWarned_ && !comms_.empty()) {
    writeWarned_ = true;
    PILOT_LOG(*comms_.front()->logger, Warn, kFlags, "%s; later failures are not logged",
              wrote.error().c_str());
  }
}

void MetricsRuntime::exportNow() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (settings_ && settings_->enabled) exportLocked(nullptr);
}

std::string MetricsRuntime::lastTextfile() {
  std::lock_guard<std::mutex> lock(mutex_);
  return textfile_;
}

std::string MetricsRuntime::textfilePath() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!settings_ || settings_->dir.empty()) return "";
  return fileStem(settings_->dir, node_) + ".prom";
}

std::string MetricsRuntime::summaryPath() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!settings_ || settings_->dir.empty()) return "";
  return fileStem(settings_->dir, node_) + ".jsonl";
}

int MetricsRuntime::httpPort() {
  std::lock_guard<std::mutex> lock(mutex_);
  return httpPort_;
}

}  // namespace pilot::metrics
