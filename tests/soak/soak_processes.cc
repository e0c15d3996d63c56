// The coordinator's processes and their events: starting and killing peers, the event loop,
// and the relaying of handles that (re-)establishes every communicator.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "coordinator.h"
#include "net_test_support.h"
#include "network_faults.h"

namespace soak {
namespace {

/// Moves `fd` to `target` in a child about to exec, whatever fds the two already are.
void placeFd(int fd, int target) {
  if (fd != target) dup2(fd, target);
}

bool parseStats(const std::vector<std::string>& w, PeerStats* s) {
  if (w.size() < 8) return false;
  auto num = [](const std::string& x) { return std::strtoull(x.c_str(), nullptr, 10); };
  s->fds = static_cast<int>(num(w[1]));
  s->rssKb = static_cast<int64_t>(num(w[2]));
  s->transfers = num(w[3]);
  s->bytes = num(w[4]);
  s->corrupted = num(w[5]);
  s->dropped = num(w[6]);
  s->wrongSecret = num(w[7]);
  s->steps.clear();
  for (size_t i = 8; i < w.size(); ++i) {
    const size_t colon = w[i].find(':');
    if (colon == std::string::npos) return false;
    s->steps.emplace_back(static_cast<uint32_t>(num(w[i].substr(0, colon))),
                          num(w[i].substr(colon + 1)));
  }
  s->valid = true;
  return true;
}

/// "FIRST:T0,T1,..." (or "-") into b->firstSent, b->sentMs.
void parseSent(const std::string& text, BreakReport* b) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return;
  b->firstSent = std::strtoull(text.c_str(), nullptr, 10);
  for (size_t at = colon + 1; at < text.size();) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    b->sentMs.push_back(std::strtoll(text.substr(at, comma - at).c_str(), nullptr, 10));
    at = comma + 1;
  }
}

/// "STEP:POSTED", "STEP:-" (or "-") into b->waiting*.
void parseWaiting(const std::string& text, BreakReport* b) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return;
  b->waiting = true;
  b->waitingStep = std::strtoull(text.c_str(), nullptr, 10);
  if (text[colon + 1] != '-') b->waitingMs = std::strtoll(text.c_str() + colon + 1, nullptr, 10);
}

}  // namespace

bool Soak::startPeer(Process& p) {
  int down[2], up[2];
  if (pipe2(down, O_CLOEXEC) != 0 || pipe2(up, O_CLOEXEC) != 0) return false;
  const std::string log = o_.logDir + "/peer-" + p.name() + ".log";
  const int logFd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  std::vector<std::string> args = {
      o_.self,     "peer",
      "--side",    p.side == 0 ? "A" : "B",
      "--pair",    std::to_string(p.pair),
      "--comms",   std::to_string(o_.commsPerPair),
      "--seed",    std::to_string(o_.seed),
      "--hang-ms", std::to_string(hangMs_),
      "--rate",    std::to_string(static_cast<uint64_t>(o_.bytesPerSecond)),
      "--env",     "NCCL_SOCKET_IFNAME==" + o_.ifname[p.side],
      "--env",     "NCCL_PILOT_SOCKET_TIMEOUT_MS=" + std::to_string(o_.timeoutMs)};
  for (const auto& [k, v] : pairSettings(p.pair)) {
    args.push_back("--env");
    args.push_back(k + "=" + v);
  }
  p.pid = forkInNamespace(o_.ns[p.side], [&] {
    // Out of the way of 3 and 4 first, then exactly 0-4 open in the peer (its fd baseline).
    const int in = fcntl(down[0], F_DUPFD, 10), out = fcntl(up[1], F_DUPFD, 10);
    placeFd(in, 3);
    placeFd(out, 4);
    if (logFd >= 0) {
      placeFd(logFd, 1);
      placeFd(logFd, 2);
    }
    close_range(5, ~0U, 0);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    return 127;
  });
  close(down[0]);
  close(up[1]);
  if (logFd >= 0) close(logFd);
  if (p.pid < 0) {
    close(down[1]);
    close(up[0]);
    return false;
  }
  p.toPeer = down[1];
  p.fromPeer = up[0];
  p.channel = LineChannel(p.fromPeer, p.toPeer);
  p.ready = false;
  p.statsAsked = false;
  p.last = PeerStats{};
  return true;
}

void Soak::killPeer(Process& p) {
  if (p.pid > 0) {
    kill(p.pid, SIGKILL);
    while (waitpid(p.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (p.toPeer >= 0) close(p.toPeer);
  if (p.fromPeer >= 0) close(p.fromPeer);
  p.pid = -1;
  p.toPeer = p.fromPeer = -1;
  p.ready = false;
  p.statsAsked = false;
}

void Soak::pump(int64_t untilMs) {
  do {
    std::vector<pollfd> fds;
    std::vector<Process*> owners;
    for (Process& p : processes_) {
      if (p.pid > 0) {
        fds.push_back({p.fromPeer, POLLIN, 0});
        owners.push_back(&p);
      }
    }
    const int64_t wait = std::clamp<int64_t>(untilMs - now(), 0, 50);
    if (::poll(fds.data(), fds.size(), static_cast<int>(wait)) < 0 && errno != EINTR) return;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Process& p = *owners[i];
      std::vector<std::string> lines;
      const bool open = p.channel.receive(&lines);
      for (const std::string& line : lines) onLine(p, line);
      if (!open && p.pid > 0) {
        int status = 0;
        waitpid(p.pid, &status, 0);
        p.pid = -1;
        p.ready = false;
        if (finishing_ && WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        failure("process " + p.name() + " exited (status " + std::to_string(status) + "): see " +
                o_.logDir + "/peer-" + p.name() + ".log");
        fatal_ = true;
      }
    }
    reopenClosedComms();
  } while (now() < untilMs && !fatal_);
}

bool Soak::pumpUntil(const std::function<bool()>& done, int64_t deadlineMs) {
  for (;;) {
    if (done()) return true;
    if (fatal_ || now() >= deadlineMs) return false;
    pump(std::min(deadlineMs, now() + 20));
  }
}

void Soak::onLine(Process& p, const std::string& line) {
  const std::vector<std::string> w = words(line);
  if (w.empty()) return;
  const std::string& kind = w[0];
  if (kind == "ready") {
    p.ready = true;
    return;
  }
  if (kind == "fatal") {
    failure(p.name() + ": " + line);
    fatal_ = true;
    return;
  }
  if (kind != "tick" && kind != "stats") note(p.name() + ": " + line);
  if (kind == "tick" || kind == "stats" || kind == "done") {
    PeerStats s;
    if (parseStats(w, &s)) p.last = s;
    if (kind == "stats") p.statsAsked = false;
    return;
  }
  if (w.size() < 3) return;
  const int id = std::atoi(w[1].c_str());
  if (id < 0 || id >= static_cast<int>(comms_.size()) || comms_[id].pair != p.pair) return;
  Comm& c = comms_[id];
  if (std::strtoul(w[2].c_str(), nullptr, 10) != c.epoch) return;  // an earlier incarnation
  const int side = p.side;
  if (kind == "handle" && w.size() == 4) {
    c.handle[side] = w[3];
    c.hasHandle[side] = true;
    if (c.hasHandle[0] && c.hasHandle[1] && !c.manualRelay) relayHandles(c);
  } else if (kind == "up") {
    c.up[side] = true;
  } else if (kind == "closed") {
    c.up[side] = false;
    c.closed[side] = true;
  } else if (kind == "corrupt") {
    ++corrupted_;
    failure("corrupted on " + p.name() + ": " + rest(line, 3));
  } else if (kind == "broken" || kind == "hung") {
    onBreak(p, c, w, line);
  }
}

void Soak::onBreak(Process& p, Comm& c, const std::vector<std::string>& w,
                   const std::string& line) {
  c.up[p.side] = false;
  c.closed[p.side] = true;
  if (w.size() < 7) return;
  BreakReport b;
  b.comm = c.id;
  b.side = p.side;
  b.epoch = c.epoch;
  b.atMs = std::strtoll(w[3].c_str(), nullptr, 10);
  parseSent(w[4], &b);
  parseWaiting(w[5], &b);
  b.lane = w[6] == "send" ? 0 : w[6] == "recv" ? 1 : -1;
  const std::string what = w[6] + ": " + rest(line, 7);
  b.what = what;
  const std::string who = "comm " + std::to_string(c.id) + " on " + p.name();
  if (w[0] == "hung") {
    ++hung_;
    failure("hung: " + who + " " + what);
    return;
  }
  if (c.closing || finishing_) return;  // closed on purpose: the peer's own close broke it
  if (!current_.active || current_.mayBreak.count(c.id) == 0) {
    failure("a communicator no fault touched broke: " + who + " " + what);
    return;
  }
  current_.breakages.push_back(b);
}

void Soak::open(Comm& c) {
  ++c.epoch;
  for (int side = 0; side < 2; ++side) {
    c.up[side] = false;
    c.closed[side] = false;
    c.hasHandle[side] = false;
    process(c.pair, side)
        .channel.send("open " + std::to_string(c.id) + " " + std::to_string(c.epoch));
  }
}

void Soak::relayHandles(Comm& c) {
  for (int side = 0; side < 2; ++side) {
    process(c.pair, side)
        .channel.send("connect " + std::to_string(c.id) + " " + std::to_string(c.epoch) + " " +
                      c.handle[1 - side]);
  }
}

void Soak::reopenClosedComms() {
  if (!reopenAllowed_) return;
  for (Comm& c : comms_) {
    if (c.closing || c.manualRelay || !c.closed[0] || !c.closed[1]) continue;
    if (!process(c.pair, 0).ready || !process(c.pair, 1).ready) continue;
    open(c);
  }
}

}  // namespace soak
