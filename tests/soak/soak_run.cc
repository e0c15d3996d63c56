// The coordinator's run: the start, the faults of the plan in turn, the checks, the summary.
// Processes and events are in soak_processes.cc, the faults in soak_faults.cc.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "coordinator.h"
#include "net_test_support.h"

namespace soak {
namespace {

std::string describe(const std::map<std::string, std::string>& settings) {
  if (settings.empty()) return "defaults";
  std::string out;
  for (const auto& [k, v] : settings) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

}  // namespace

std::map<std::string, std::string> pairSettings(int pair) {
  switch (pair % 4) {
    case 1:
      return {{"NCCL_PILOT_SOCKET_NSTREAMS", "0"}};
    case 2:
      return {{"NCCL_PILOT_SOCKET_NSTREAMS", "4"},
              {"NCCL_PILOT_SOCKET_CHUNK", "128K"},
              {"NCCL_PILOT_SOCKET_NTHREADS", "2"}};
    case 3:
      return {{"NCCL_PILOT_SOCKET_NSTREAMS", "1"}, {"NCCL_PILOT_SOCKET_EAGER", "0"}};
    default:
      return {};
  }
}

std::string Soak::Process::name() const {
  return std::string(1, side == 0 ? 'A' : 'B') + std::to_string(pair);
}

Soak::Soak(const SoakOptions& options) : o_(options) {
  log_ = std::fopen((o_.logDir + "/coordinator.log").c_str(), "a");
  // A hang is an operation with neither result nor error for longer than any fault lasts plus
  // the timeout twice over (a stalled retransmission after the fault, then keepalive).
  hangMs_ = 2 * o_.timeoutMs + 6000;
  processes_.resize(static_cast<size_t>(o_.pairs) * 2);
  for (int pair = 0; pair < o_.pairs; ++pair) {
    for (int side = 0; side < 2; ++side) {
      process(pair, side).pair = pair;
      process(pair, side).side = side;
    }
  }
  comms_.resize(static_cast<size_t>(o_.pairs * o_.commsPerPair));
  for (size_t i = 0; i < comms_.size(); ++i) {
    comms_[i].id = static_cast<int>(i);
    comms_[i].pair = static_cast<int>(i) / o_.commsPerPair;
  }
}

Soak::~Soak() {
  for (Process& p : processes_) killPeer(p);
  if (log_ != nullptr) std::fclose(log_);
}

void Soak::note(const std::string& text) {
  if (log_ == nullptr) return;
  std::fprintf(log_, "%.3f %s\n", static_cast<double>(now() - startMs_) / 1000.0, text.c_str());
  std::fflush(log_);
}

int64_t Soak::now() const {
  return nettest::monotonicMs();
}

void Soak::failure(const std::string& what) {
  failures_.push_back(what);
  note("FAIL " + what);
  std::printf("soak: FAIL %s\n", what.c_str());
  std::fflush(stdout);
}

Soak::Snapshot Soak::snapshot() const {
  Snapshot s(comms_.size() * 2);
  for (const Comm& c : comms_) {
    for (int side = 0; side < 2; ++side) {
      const PeerStats& last = processes_[c.pair * 2 + side].last;
      const size_t k = static_cast<size_t>(c.id % o_.commsPerPair);
      if (k < last.steps.size()) s[c.id * 2 + side] = last.steps[k];
    }
  }
  return s;
}

bool Soak::movedSince(const Comm& c, const Snapshot& before) const {
  if (!c.up[0] || !c.up[1]) return false;
  const Snapshot nowSteps = snapshot();
  for (int side = 0; side < 2; ++side) {
    const auto& [epoch, steps] = nowSteps[c.id * 2 + side];
    const auto& [epochBefore, stepsBefore] = before[c.id * 2 + side];
    if (epoch != c.epoch) return false;
    if (steps <= (epochBefore == epoch ? stepsBefore : 0)) return false;
  }
  return true;
}

bool Soak::allUpAndMovedSince(const Snapshot& before) const {
  return std::all_of(comms_.begin(), comms_.end(),
                     [&](const Comm& c) { return movedSince(c, before); });
}

bool Soak::freshStats() {
  for (Process& p : processes_) {
    if (p.ready) {
      p.statsAsked = true;
      p.channel.send("stats");
    }
  }
  return pumpUntil(
      [&] {
        return std::none_of(processes_.begin(), processes_.end(),
                            [](const Process& p) { return p.ready && p.statsAsked; });
      },
      now() + 5000);
}

std::string Soak::resources(bool* ok) {
  auto atBaseline = [&] {
    return std::all_of(processes_.begin(), processes_.end(),
                       [](const Process& p) { return p.last.fds == p.baseline.fds; });
  };
  const int64_t deadline = now() + o_.timeoutMs + 1000;
  *ok = freshStats();
  while (*ok && !atBaseline() && now() < deadline) {
    pump(now() + 100);
    *ok = freshStats();
  }
  int fdsBefore = 0, fdsNow = 0;
  int64_t rssBefore = 0, rssNow = 0;
  for (const Process& p : processes_) {
    fdsBefore += p.baseline.fds;
    fdsNow += p.last.fds;
    rssBefore += p.baseline.rssKb;
    rssNow += p.last.rssKb;
    note(p.name() + ": " + std::to_string(p.last.fds) + " fds (" + std::to_string(p.baseline.fds) +
         " at the start), " + std::to_string(p.last.rssKb) + " KiB resident (" +
         std::to_string(p.baseline.rssKb) + ")");
    if (p.last.fds != p.baseline.fds) {
      *ok = false;
      failure("process " + p.name() + " holds " + std::to_string(p.last.fds) + " descriptors, " +
              std::to_string(p.baseline.fds) + " at the start");
    }
    if (p.last.rssKb > p.baseline.rssKb + kRssToleranceKb) {
      *ok = false;
      failure("process " + p.name() + " resident " + std::to_string(p.last.rssKb / 1024) +
              " MiB, " + std::to_string(p.baseline.rssKb / 1024) + " MiB at the start");
    }
  }
  char text[128];
  std::snprintf(text, sizeof(text), "fds %d->%d, rss %" PRId64 "->%" PRId64 " MiB", fdsBefore,
                fdsNow, rssBefore / 1024, rssNow / 1024);
  return text;
}

int Soak::run() {
  startMs_ = now();
  std::printf("soak: seed %" PRIu64
              ", %d s, %d process pairs x %d communicators, timeout %d ms, "
              "hang bound %d ms, logs in %s (kept when it fails)\n",
              o_.seed, o_.seconds, o_.pairs, o_.commsPerPair, o_.timeoutMs, hangMs_,
              o_.logDir.c_str());
  for (int pair = 0; pair < o_.pairs; ++pair) {
    std::printf("soak: pair %d (A%d in %s, B%d in %s): communicators %d-%d, %s\n", pair, pair,
                o_.ns[0].c_str(), pair, o_.ns[1].c_str(), pair * o_.commsPerPair,
                (pair + 1) * o_.commsPerPair - 1, describe(pairSettings(pair)).c_str());
  }
  std::fflush(stdout);
  for (Process& p : processes_) {
    if (!startPeer(p)) {
      failure("cannot start process " + p.name());
      return 1;
    }
  }
  auto allReady = [&] {
    return std::all_of(processes_.begin(), processes_.end(),
                       [](const Process& p) { return p.ready; });
  };
  const Snapshot none = snapshot();
  if (!pumpUntil(allReady, now() + 15000) ||
      !pumpUntil([&] { return allUpAndMovedSince(none); }, now() + 30000)) {
    failure("the communicators did not come up");
    return finish();
  }
  pump(now() + 2000);  // warm-up: every lane has moved, parking pools are made
  if (!freshStats()) failure("no stats from the processes");
  for (Process& p : processes_) p.baseline = p.last;

  const int64_t deadline = startMs_ + int64_t{o_.seconds} * 1000;
  const std::vector<Fault> plan =
      planFaults(o_.seed, o_.pairs, o_.commsPerPair, o_.timeoutMs, 10000);
  for (size_t i = 0; i < plan.size() && !fatal_; ++i) {
    const Fault& f = plan[i];
    // Only a fault that fits: it runs to the end of its recovery.
    if (now() + f.gapMs + f.durationMs + o_.timeoutMs + 6000 > deadline) break;
    pump(now() + f.gapMs);
    inject(f, static_cast<int>(i) + 1);
  }
  pump(deadline);
  return finish();
}

int Soak::finish() {
  std::string resourceText = "fds ?->?, rss ?->? MiB";
  if (!fatal_) {
    // The end state must be as good as after any fault: all up and moving, nothing leaked.
    std::string what;
    if (!settle(snapshot(), now(), &what)) failure("at the end: " + what);
    bool ok = false;
    resourceText = resources(&ok);
  }
  finishing_ = true;
  for (Process& p : processes_) {
    if (p.pid > 0) p.channel.send("finish");
  }
  const bool exited = pumpUntil(
      [&] {
        return std::all_of(processes_.begin(), processes_.end(),
                           [](const Process& p) { return p.pid <= 0; });
      },
      now() + 10000);
  if (!exited) failure("a process did not finish within 10 s");
  uint64_t transfers = 0, bytes = 0, corrupted = 0;
  for (Process& p : processes_) {
    p.gone.push_back(p.last);
    for (const PeerStats& s : p.gone) {
      transfers += s.transfers;
      bytes += s.bytes;
      corrupted += s.corrupted;
    }
  }
  corrupted = std::max<uint64_t>(corrupted, corrupted_);
  if (static_cast<int>(kindsInjected_.size()) < kFaultKinds) {
    failure("only " + std::to_string(kindsInjected_.size()) + " of the " +
            std::to_string(kFaultKinds) + " fault kinds fit in " + std::to_string(o_.seconds) +
            " s");
  }
  if (transfers == 0) failure("nothing was transferred");
  if (maxAfterPeerMs_ >= 0) {
    std::printf("soak: far ends of broken connections learnt it at most %" PRId64
                " ms after their near ends (bound %" PRId64 " ms)\n",
                maxAfterPeerMs_, int64_t{kCascadeTimeouts} * o_.timeoutMs);
  }
  std::printf("soak: %" PRIu64 " transfers, %" PRIu64 " bytes verified, %d faults, %" PRIu64
              " corrupted, %" PRIu64 " hung, max detect %" PRId64 " ms, %s\n",
              transfers, bytes, injected_, corrupted, hung_, maxDetectMs_, resourceText.c_str());
  std::fflush(stdout);
  return failures_.empty() ? 0 : 1;
}

int runSoak(const SoakOptions& options) {
  Soak soak(options);
  return soak.run();
}

}  // namespace soak
