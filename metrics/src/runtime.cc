#include "pilot/metrics/runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <time.h>
#include <algorithm>
#include <atomic>
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
#include "pilot/metrics/state_file.h"
#include "pilot/metrics/summary.h"
#include "pilot/version.h"

namespace pilot::metrics {

struct MetricsRuntime::Exporter {
  std::thread thread;
  int wake[2] = {-1, -1};
  std::unique_ptr<detail::HttpEndpoint> http;
  std::atomic<bool> closed{false};    // a communicator was finalized: write soon
  std::atomic<bool> stopping{false};  // leave the loop (writing once more if finalExport)
  std::atomic<bool> finalExport{false};
  void wakeUp() {
    const char byte = 1;
    while (::write(wake[1], &byte, 1) < 0 && errno == EINTR) {
    }
  }
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

uint64_t realtimeMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

/// What a state write showed of a communicator: its launches and its last completion.
uint64_t writtenMark(const InFlightView& v) {
  uint64_t launched = 0;
  for (const LaunchCount& k : v.kinds) launched += k.launched;
  return launched * 0x9e3779b97f4a7c15ull ^ v.lastDoneNs;
}

std::string percent(double ratio) {
  return std::to_string(static_cast<int>(ratio * 100.0 + 0.5)) + "%";
}

std::string microseconds(double ns) {
  return text::formatDecimal(static_cast<double>(static_cast<int64_t>(ns / 100.0)) / 10.0);
}

}  // namespace

MetricsRuntime::Comm::~Comm() {
  if (monitor != nullptr) monitor->release();
}

MetricsRuntime::MetricsRuntime(EnvLookup env, bool abandonAtFinalize)
    : env_(env), abandonAtFinalize_(abandonAtFinalize), tables_(std::move(env)) {}

MetricsRuntime::~MetricsRuntime() {
  // At exit NCCL's threads may still deliver events: stop our thread, free nothing they use
  // (the communicators' monitors are left to the process).
  stopExporter(/*evenWithComms=*/true, /*finalExport=*/false);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto* list : {&comms_, &closing_}) {
    for (const std::shared_ptr<Comm>& c : *list) c->monitor = nullptr;
  }
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

MetricsSettings::Proxy MetricsRuntime::proxyEvents() {
  std::lock_guard<std::mutex> lock(mutex_);
  return settings_ ? settings_->proxy : MetricsSettings::Proxy::Off;
}

bool MetricsRuntime::enabled(Logger& log) {
  std::lock_guard<std::mutex> lock(mutex_);
  return loadSettings(log).enabled;
}

CommMonitor* MetricsRuntime::open(CommIdentity identity, std::unique_ptr<Logger> logger) {
  if (!logger) logger = std::make_unique<NullLogger>();
  bool first = false;
  CommMonitor* monitor = nullptr;
  {
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
    auto comm = std::make_shared<Comm>();
    comm->monitor = new CommMonitor(identity, s, std::move(table));
    comm->logger = std::move(logger);
    PILOT_LOG(*comm->logger, Info, kFlags, "comm %s rank %d of %d (%s): measuring; %s",
              commIdText(identity.commId).c_str(), identity.rank, identity.nRanks,
              identity.name.empty() ? "unnamed" : identity.name.c_str(), source.c_str());
    monitor = comm->monitor;
    Logger& log = *comm->logger;
    first = comms_.empty() && closing_.empty();
    comms_.push_back(std::move(comm));
    if (first && !s.dir.empty()) {
      if (Status made = makeDirectories(s.dir); !made.ok()) {
        PILOT_LOG(log, Warn, kFlags, "%s; no metrics files", made.error().c_str());
      }
    }
    if (!exporter_) startExporter(log);
  }
  if (first) exportNow();  // the files exist from the first communicator on
  return monitor;
}

void MetricsRuntime::close(CommMonitor* monitor) {
  if (monitor == nullptr) return;
  std::shared_ptr<Comm> comm;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(comms_.begin(), comms_.end(),
                           [&](const std::shared_ptr<Comm>& c) { return c->monitor == monitor; });
    if (it == comms_.end()) return;
    comm = *it;
    comm->monitor = nullptr;  // its reference is this function's now
    comms_.erase(it);
  }
  // Its last figures, read here (a constant amount of work: its keys and samples) so that the
  // monitor goes at once; they count what abandon() let go of.
  if (abandonAtFinalize_) EventPath::process().abandon(*monitor);
  comm->final = std::make_unique<CommReport>(snapshotOf(*monitor, /*finalized=*/true));
  monitor->release();
  bool last = false, exporting = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_.push_back(std::move(comm));
    last = comms_.empty();
    if (exporter_ && !last) {
      exporter_->closed.store(true, std::memory_order_release);
      exporter_->wakeUp();
      exporting = true;
    }
  }
  if (last) {
    stopExporter(/*evenWithComms=*/false, /*finalExport=*/true);
  } else if (!exporting) {
    exportNow();  // no exporter thread: write here
  }
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

void MetricsRuntime::stopExporter(bool evenWithComms, bool finalExport) {
  std::unique_ptr<Exporter> exporter;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!evenWithComms && !comms_.empty()) {
      // A communicator opened meanwhile: the thread goes on and writes the closed one soon.
      if (exporter_) {
        exporter_->closed.store(true, std::memory_order_release);
        exporter_->wakeUp();
      }
      return;
    }
    exporter = std::move(exporter_);
    httpPort_ = 0;
  }
  if (!exporter) {
    if (finalExport) exportNow();
    return;
  }
  exporter->finalExport.store(finalExport, std::memory_order_relaxed);
  exporter->stopping.store(true, std::memory_order_release);
  exporter->wakeUp();
  if (exporter->thread.joinable()) exporter->thread.join();
}

void MetricsRuntime::exporterLoop(Exporter& exporter) {
  using Clock = std::chrono::steady_clock;
  const auto interval = std::chrono::seconds(settings_->intervalSeconds);
  const auto closeDelay = std::chrono::milliseconds(kCloseExportDelayMs);
  const auto stateRefresh = std::chrono::milliseconds(kStateRefreshMs);
  auto next = Clock::now() + interval;
  auto last = Clock::now();
  auto nextState = Clock::now() + stateRefresh;
  for (;;) {
    auto due = std::min(next, nextState);
    if (exporter.closed.load(std::memory_order_acquire)) due = std::min(due, last + closeDelay);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(due - Clock::now());
    pollfd fds[2] = {{exporter.wake[0], POLLIN, 0}, {-1, POLLIN, 0}};
    if (exporter.http) fds[1].fd = exporter.http->fd();
    const int n =
        ::poll(fds, exporter.http ? 2 : 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (n < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) {
      char drain[64];
      while (::read(exporter.wake[0], drain, sizeof drain) > 0) {
      }
      if (exporter.stopping.load(std::memory_order_acquire)) {
        if (exporter.finalExport.load(std::memory_order_relaxed)) exportNow();
        return;
      }
    }
    if (exporter.http && (fds[1].revents & POLLIN)) {
      exporter.http->serveOne([this] { return lastTextfile(); });
    }
    const auto now = Clock::now();
    const bool closed = exporter.closed.load(std::memory_order_acquire) && now >= last + closeDelay;
    if (closed || now >= next) {
      exporter.closed.store(false, std::memory_order_release);
      exportNow();
      last = now;
      nextState = now + stateRefresh;
      if (now >= next) {
        next += interval;
        if (next < now) next = now + interval;
      }
    } else if (now >= nextState) {
      // While something is in flight the state file is at most a second old, so a reader can
      // tell a rank that waits from one that stopped (state_file.h).
      refreshState(/*always=*/false);
      nextState = now + stateRefresh;
    }
  }
}

CommReport MetricsRuntime::snapshotOf(const CommMonitor& m, bool finalized) {
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
    k.index = v.index;
    if (!v.other) {
      k.decision = m.decisionLabel(v.fields.decision);
      k.band = m.decisionBand(v.fields.decision);
    }
    k.total = v.totals;
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

void MetricsRuntime::addIntervals(Comm& comm, CommReport& r) {
  for (KeyReport& k : r.keys) {
    if (k.index >= comm.previous.size()) comm.previous.resize(k.index + 1);
    KeyTotals& previous = comm.previous[k.index];
    k.interval = k.total.since(previous);
    previous = k.total;
  }
}

void MetricsRuntime::warnDrift(Comm& comm, const CommReport& report) {
  struct Band {
    uint64_t calls = 0, liveNs = 0;
    double expectedNs = 0;
    std::string operations, label, range;
  };
  std::map<uint16_t, Band> bands;
  for (const KeyReport& k : report.keys) {
    if (k.other || k.fields.decision == KeyFields::kNcclDecided || k.total.expectedCalls == 0) {
      continue;
    }
    Band& b = bands[k.fields.decision];
    b.label = k.decision;
    b.range = k.band;
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
              commIdText(id.commId).c_str(), id.rank, b.operations.c_str(), b.label.c_str(),
              b.range.c_str(), percent(ratio).c_str(), static_cast<unsigned long long>(b.calls),
              microseconds(static_cast<double>(b.liveNs) / calls).c_str(),
              microseconds(b.expectedNs / calls).c_str());
  }
}

LiveState MetricsRuntime::liveStateOf(Comm& comm, const CommMonitor& m, uint64_t nowNs) {
  LiveState l;
  l.view = m.inFlight().view();
  if (l.view.hasOldest) {
    OperationView& op = l.view.oldest;
    EventPath::process().channelsOf(op.task, &op.started, &op.stopped);
  }
  l.nowNs = nowNs;
  l.waitingS = waitingSeconds(l.view, nowNs);
  l.stalled = l.waitingS >= static_cast<double>(settings_->stallSeconds);
  l.window = comm.window;
  l.windowS = comm.windowS;
  l.proxyEvents = settings_->proxy != MetricsSettings::Proxy::Off;
  if (l.proxyEvents && l.view.hasOldest) {
    l.proxy = EventPath::process().openProxyOps(m, l.view.oldest.ordinal);
  }
  const CommIdentity& id = m.identity();
  if (l.stalled && l.view.hasOldest && comm.stallWarnedLaunchNs != l.view.oldest.launchNs) {
    const OperationView& op = l.view.oldest;
    comm.stallWarnedLaunchNs = op.launchNs;
    comm.stallWarnedWhat = describeOperation(op);
    const int started = __builtin_popcountll(op.started);
    const int stopped = __builtin_popcountll(op.stopped);
    const std::string waitsOn =
        started == 0 ? "no kernel channel of it has started (the GPU is busy before it, or "
                       "NCCL has not launched its kernel)"
                     : std::to_string(op.channels - static_cast<unsigned>(stopped)) + " of " +
                           std::to_string(op.channels) +
                           " kernel channels still running (peers that never joined, or the "
                           "network)";
    std::string network;
    for (size_t i = 0; i < l.proxy.size() && i < 4; ++i) {
      const ProxyOpView& p = l.proxy[i];
      network += (i == 0 ? "; open on the network: " : ", ") +
                 std::string(p.send ? "send to rank " : "receive from rank ") +
                 std::to_string(p.peer) + " on channel " + std::to_string(p.channel);
      if (p.steps >= 0) {
        network += " (step " + std::to_string(p.steps) + " of " + std::to_string(p.nSteps) + ")";
      }
    }
    if (l.proxy.size() > 4) network += " and " + std::to_string(l.proxy.size() - 4) + " more";
    const std::string where = settings_->dir.empty() ? "the metrics directory" : settings_->dir;
    PILOT_LOG(*comm.logger, Warn, kFlags,
              "stall: comm %s (%s) rank %d of %d: %s launched %.0f s ago, nothing completed on "
              "this communicator for %.0f s; %s%s. Which rank: nccl-pilot hang %s",
              commIdText(id.commId).c_str(), id.name.empty() ? "unnamed" : id.name.c_str(), id.rank,
              id.nRanks, comm.stallWarnedWhat.c_str(),
              static_cast<double>(nowNs - std::min(nowNs, op.launchNs)) / 1e9, l.waitingS,
              waitsOn.c_str(), network.c_str(), where.c_str());
  } else if (!l.stalled && comm.stallWarnedLaunchNs != 0 &&
             (!l.view.hasOldest || l.view.oldest.launchNs != comm.stallWarnedLaunchNs)) {
    PILOT_LOG(*comm.logger, Info, kFlags, "stall over: comm %s rank %d: %s completed",
              commIdText(id.commId).c_str(), id.rank, comm.stallWarnedWhat.c_str());
    comm.stallWarnedLaunchNs = 0;
  }
  return l;
}

void MetricsRuntime::writeState(std::vector<StateComm> comms, bool busy, const std::string& node,
                                uint64_t takenMs) {
  const MetricsSettings& s = *settings_;
  if (s.dir.empty()) return;
  StateReport r;
  r.node = node;
  r.job = s.slurmJobId;
  r.version = kVersion;
  r.pid = static_cast<long>(::getpid());
  r.writtenMs = takenMs;  // when the states were taken: what the file says is as of then
  r.nextDueMs = r.writtenMs + (busy ? static_cast<uint64_t>(kStateRefreshMs)
                                    : uint64_t{s.intervalSeconds} * 1000);
  r.stallSeconds = s.stallSeconds;
  r.final = comms.empty();
  r.comms = std::move(comms);
  // A failure here is the textfile's too: its one warning says so.
  (void)writeFileAtomically(fileStem(s.dir, node) + ".state.json", renderState(r));
}

bool MetricsRuntime::refreshState(bool always) {
  std::lock_guard<std::mutex> exportLock(exportMutex_);
  std::vector<std::pair<std::shared_ptr<Comm>, CommMonitor*>> live;
  std::string node;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!settings_ || !settings_->enabled) return false;
    for (const std::shared_ptr<Comm>& c : comms_) {
      c->monitor->retain();
      live.emplace_back(c, c->monitor);
    }
    node = node_;
  }
  const uint64_t nowNs = monotonicNs();
  const uint64_t takenMs = realtimeMs();
  std::vector<StateComm> states;
  bool busy = false, changed = always;
  for (auto& [comm, monitor] : live) {
    states.push_back({monitor->identity(), liveStateOf(*comm, *monitor, nowNs)});
    monitor->release();
    const InFlightView& v = states.back().live.view;
    busy = busy || v.inFlight > 0;
    const uint64_t mark = writtenMark(v);
    changed = changed || mark != comm->writtenMark;
    comm->writtenMark = mark;
  }
  if ((busy || changed) && !states.empty()) writeState(std::move(states), busy, node, takenMs);
  return busy;
}

void MetricsRuntime::exportNow() {
  std::lock_guard<std::mutex> exportLock(exportMutex_);
  struct Live {
    std::shared_ptr<Comm> comm;
    CommMonitor* monitor;  // retained: a finalize may let go of the communicator's meanwhile
  };
  std::vector<Live> live;
  std::vector<std::shared_ptr<Comm>> closing;
  std::string node;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!settings_ || !settings_->enabled) return;
    live.reserve(comms_.size());
    for (const std::shared_ptr<Comm>& c : comms_) {
      c->monitor->retain();
      live.push_back({c, c->monitor});
    }
    closing.swap(closing_);
    node = node_;
  }
  const MetricsSettings& s = *settings_;  // set once, before any communicator
  EventPath& events = EventPath::process();
  events.sweepGroups();
  ProcessReport p;
  p.node = node;
  p.slurmJobId = s.slurmJobId;
  p.version = kVersion;
  p.pid = static_cast<long>(::getpid());
  p.slots = events.capacity();
  p.slotsInUse = events.slotsInUse();
  p.groupsInUse = events.groupsInUse();
  p.stallSeconds = s.stallSeconds;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    p.recordJson = recordJson_;
    p.recordSeries = recordSeries_;
  }
  for (int o = 0; o < static_cast<int>(Orphan::Count); ++o) {
    p.orphans[o] = events.orphans(static_cast<Orphan>(o));
  }
  // A finalized communicator's last figures go into this textfile (up to kMaxClosedInTextfile
  // of them: finalizes faster than exports go to the summary alone), then into its record.
  for (const auto& comm : closing) {
    CommReport& r = *comm->final;
    addIntervals(*comm, r);
    warnDrift(*comm, r);
    finished_.add(r, p);
    if (p.comms.size() < kMaxClosedInTextfile) p.comms.push_back(std::move(r));
  }
  const auto closedReports = static_cast<std::ptrdiff_t>(p.comms.size());
  const uint64_t nowNs = monotonicNs();
  const uint64_t takenMs = realtimeMs();
  std::vector<StateComm> states;
  bool busy = false;
  for (const Live& l : live) {
    CommReport r = snapshotOf(*l.monitor, /*finalized=*/false);
    addIntervals(*l.comm, r);
    Comm& c = *l.comm;
    c.window = windowKeys(r.keys);
    c.windowS = c.lastExportNs != 0 ? static_cast<double>(nowNs - c.lastExportNs) / 1e9 : 0.0;
    c.lastExportNs = nowNs;
    r.hasLive = true;
    r.live = liveStateOf(c, *l.monitor, nowNs);
    c.writtenMark = writtenMark(r.live.view);
    l.monitor->release();
    busy = busy || r.live.view.inFlight > 0;
    states.push_back({r.identity, r.live});
    warnDrift(*l.comm, r);
    p.comms.push_back(std::move(r));
  }
  p.communicators = finished_.counts();
  p.communicators.live = live.size();
  std::string textfile = renderTextfile(p);
  // The summary: the process line, the live communicators, then the finished records' text.
  p.comms.erase(p.comms.begin(), p.comms.begin() + closedReports);
  std::string summaryText = renderSummary(p);
  finished_.appendSummary(&summaryText);
  if (!s.dir.empty()) {
    const std::string stem = fileStem(s.dir, node);
    Status wrote = writeFileAtomically(stem + ".prom", textfile);
    if (wrote.ok()) wrote = writeFileAtomically(stem + ".jsonl", summaryText);
    Comm* any = !live.empty()      ? live.front().comm.get()
                : !closing.empty() ? closing.front().get()
                                   : nullptr;
    writeState(std::move(states), busy, node, takenMs);
    if (!wrote.ok() && !writeWarned_ && any != nullptr) {
      writeWarned_ = true;
      PILOT_LOG(*any->logger, Warn, kFlags, "%s; later failures are not logged",
                wrote.error().c_str());
    }
  }
  std::lock_guard<std::mutex> lock(textfileMutex_);
  textfile_.swap(textfile);
}

std::string MetricsRuntime::lastTextfile() {
  std::lock_guard<std::mutex> lock(textfileMutex_);
  return textfile_;
}

std::vector<CommReport> MetricsRuntime::finishedRecords() {
  std::lock_guard<std::mutex> lock(exportMutex_);
  std::vector<CommReport> out;
  for (const CommReport* r : finished_.records()) out.push_back(*r);
  return out;
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

void MetricsRuntime::publishRecord(provenance::ProcessRecord record, bool first, Logger& log) {
  std::string line, path;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const MetricsSettings& s = loadSettings(log);
    record.node = node_;
    record.pid = ::getpid();
    record.writtenMs = realtimeMs();
    line = provenance::renderRecordJson(record);
    recordJson_ = line;
    recordSeries_ = provenance::renderRecordPrometheus(record);
    if (!s.enabled || s.dir.empty()) return;
    path = fileStem(s.dir, node_) + ".provenance.json";
  }
  // One write of one line with O_APPEND: copies of the library in one process (NCCL dlopens
  // each plugin name on its own) add their lines without a lock, each line whole. The first
  // record of the process starts the file, so a file a process with the same pid left behind
  // is never merged with this one.
  (void)makeDirectories(path.substr(0, path.rfind('/')));
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (first ? O_TRUNC : O_APPEND);
  const int fd = ::open(path.c_str(), flags, 0644);
  bool ok = fd >= 0;
  if (ok) {
    const std::string text = line + "\n";
    ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ok = ::close(fd) == 0 && ok;
  }
  if (!ok) {
    PILOT_LOG(log, Warn, kFlags, "cannot write %s: %s; the summary still carries the record",
              path.c_str(), std::strerror(errno));
  }
}

std::string MetricsRuntime::recordPath() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!settings_ || settings_->dir.empty()) return "";
  return fileStem(settings_->dir, node_) + ".provenance.json";
}

std::string MetricsRuntime::statePath() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!settings_ || settings_->dir.empty()) return "";
  return fileStem(settings_->dir, node_) + ".state.json";
}

int MetricsRuntime::httpPort() {
  std::lock_guard<std::mutex> lock(mutex_);
  return httpPort_;
}

}  // namespace pilot::metrics
