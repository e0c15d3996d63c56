// The faults: each is injected, watched until everything it broke is re-established and moving
// again, and then checked (detection times, descriptors, memory).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ack_deadline.h"
#include "coordinator.h"
#include "network_faults.h"
#include "socket_setup.h"

namespace soak {
namespace {

constexpr int kMaxPendingSockets = pilot::net::SocketListenComm::kMaxPendingSockets;

/// When the bytes a connection failed on entered the network, where its error says how long
/// they waited ("no acknowledgement from the peer for N ms", the transport's ack deadline); -1
/// otherwise. The soak sees the step posted, not when a data stream's bytes went out behind it:
/// after a link came back, the kernel may hold new bytes (in retransmission backoff or behind a
/// neighbour being resolved again) for longer than the timeout, measured up to 1.6 s after the
/// step's post.
int64_t waitedSince(const BreakReport& b) {
  static const std::string kKey = pilot::net::AckDeadline::kNoAcknowledgement;
  const size_t at = b.what.find(kKey);
  if (at == std::string::npos) return -1;
  char* end = nullptr;
  const long long waited = std::strtoll(b.what.c_str() + at + kKey.size(), &end, 10);
  if (end == b.what.c_str() + at + kKey.size() || std::strncmp(end, " ms", 3) != 0 || waited < 0)
    return -1;
  return b.atMs - waited;
}

}  // namespace

void Soak::inject(const Fault& f, int number) {
  current_ = Current{};
  current_.active = true;
  current_.startMs = now();
  const double at = static_cast<double>(current_.startMs - startMs_) / 1000.0;
  std::string what;
  switch (f.kind) {
    case FaultKind::Drop:
      dropFault(f, &what);
      break;
    case FaultKind::LinkFlap:
      linkFault(f, &what);
      break;
    case FaultKind::Kill:
      killFault(f, &what);
      break;
    case FaultKind::Flood:
    case FaultKind::WrongSecret:
      attackFault(f, &what);
      break;
  }
  ++injected_;
  kindsInjected_.insert(static_cast<int>(f.kind));
  timeDetections();
  // A connection's detection is its first end's; the other end's lag behind it is its own.
  int64_t maxDetect = -1, maxAfterPeer = -1;
  std::set<int> broken;
  int sides = 0;
  for (const Detection& d : current_.detections) {
    if (d.afterPeerMs < 0) maxDetect = std::max(maxDetect, d.ms);
    maxAfterPeer = std::max(maxAfterPeer, d.afterPeerMs);
    if (!d.stranger) {
      broken.insert(d.comm);
      ++sides;
    }
    // The end that failed first within the timeout; the other, if it learnt from that end's
    // close, soon after it.
    if (d.afterPeerMs < 0 && d.ms > o_.timeoutMs + kDetectSlackMs) {
      failure("fault " + std::to_string(number) + ": comm " + std::to_string(d.comm) +
              " noticed after " + std::to_string(d.ms) + " ms: " + d.what);
    }
    if (d.afterPeerMs > int64_t{kCascadeTimeouts} * o_.timeoutMs) {
      failure("fault " + std::to_string(number) + ": comm " + std::to_string(d.comm) + " noticed " +
              std::to_string(d.afterPeerMs) + " ms after its peer: " + d.what);
    }
  }
  maxDetectMs_ = std::max(maxDetectMs_, maxDetect);
  maxAfterPeerMs_ = std::max(maxAfterPeerMs_, maxAfterPeer);
  current_.active = false;
  std::string brokeText = "none";
  if (!broken.empty()) {
    brokeText.clear();
    for (int c : broken) brokeText += (brokeText.empty() ? "" : ",") + std::to_string(c);
    brokeText += " (" + std::to_string(sides) + " sides)";
  }
  bool ok = false;
  const std::string resourceText = fatal_ ? "" : resources(&ok);
  std::string detectText = maxDetect < 0 ? "-" : std::to_string(maxDetect) + " ms";
  if (maxAfterPeer >= 0) detectText += " (far ends " + std::to_string(maxAfterPeer) + " ms later)";
  std::printf("soak: fault %d %s at %.1f s: %s; broke %s; detect %s; back after %.1f s; %s\n",
              number, faultName(f.kind), at, what.c_str(), brokeText.c_str(), detectText.c_str(),
              static_cast<double>(now() - current_.startMs) / 1000.0, resourceText.c_str());
  std::fflush(stdout);
}

int64_t Soak::stuckSince(const BreakReport& b) const {
  if (b.lane < 0) return current_.startMs;  // in set-up: from the fault
  const BreakReport* peer = nullptr;
  for (const BreakReport& r : current_.breakages) {
    if (r.comm == b.comm && r.epoch == b.epoch && r.side != b.side) peer = &r;
  }
  const BreakReport* sender = b.lane == 0 ? &b : peer;
  const BreakReport* receiver = b.lane == 1 ? &b : peer;
  // A side that did not report (a killed process): from the fault.
  if (sender == nullptr || receiver == nullptr || !receiver->waiting) return current_.startMs;
  const uint64_t step = receiver->waitingStep;
  if (step < sender->firstSent) return current_.startMs;  // posted before what it remembers
  if (step - sender->firstSent < sender->sentMs.size()) {
    return sender->sentMs[step - sender->firstSent];
  }
  // Never sent: only the receive's CTS record was on its way, if it was posted.
  return receiver->waitingMs >= 0 ? receiver->waitingMs : current_.startMs;
}

void Soak::timeDetections() {
  for (const BreakReport& b : current_.breakages) {
    const int64_t since = std::max({current_.startMs, stuckSince(b), waitedSince(b)});
    Detection d{b.comm, b.side, b.atMs - since, b.what};
    // Learnt from the peer's close, after the peer failed first (by a killed peer's close it is
    // the fault's own detection).
    const bool closedByPeer = b.what.find("closed the connection") != std::string::npos ||
                              b.what.find("closed by the peer") != std::string::npos ||
                              b.what.find("reset by peer") != std::string::npos ||
                              b.what.find("Broken pipe") != std::string::npos;
    for (const BreakReport& peer : current_.breakages) {
      if (closedByPeer && peer.comm == b.comm && peer.epoch == b.epoch && peer.side != b.side &&
          peer.atMs <= b.atMs) {
        d.afterPeerMs = b.atMs - peer.atMs;
      }
    }
    note("detect " + std::to_string(d.ms) + " ms: comm " + std::to_string(b.comm) + " on " +
         processes_[comms_[b.comm].pair * 2 + b.side].name() + " (timed from " +
         std::to_string(since - current_.startMs) + " ms into the fault" +
         (d.afterPeerMs >= 0 ? ", " + std::to_string(d.afterPeerMs) + " ms after its peer" : "") +
         ") " + b.what);
    current_.detections.push_back(d);
  }
}

bool Soak::settle(const Snapshot& before, int64_t quietUntilMs, std::string* what) {
  const int64_t deadline = std::max(now(), quietUntilMs) + hangMs_ + o_.timeoutMs + 5000;
  if (pumpUntil([&] { return now() >= quietUntilMs && allUpAndMovedSince(before); }, deadline)) {
    return true;
  }
  std::string stuck;
  for (const Comm& c : comms_) {
    if (!movedSince(c, before)) stuck += " " + std::to_string(c.id);
  }
  *what += "; not back: communicators" + stuck;
  failure("communicators not re-established and moving:" + stuck);
  return false;
}

void Soak::dropFault(const Fault& f, std::string* what) {
  for (const Comm& c : comms_) current_.mayBreak.insert(c.id);
  reopenAllowed_ = false;  // nothing would connect before it ends
  current_.startMs = now();
  if (!dropEverything(o_.ns[0], true)) failure("nft could not install the drop rules");
  const int64_t took = now() - current_.startMs;  // detection is timed from before it
  pump(current_.startMs + f.durationMs);
  if (!dropEverything(o_.ns[0], false)) failure("nft could not remove the drop rules");
  const int64_t end = now();
  reopenAllowed_ = true;
  *what = "nftables dropped every packet of " + o_.ns[0] + " for " +
          std::to_string(end - current_.startMs) + " ms (nft took " + std::to_string(took) + " ms)";
  // Until a timeout after the end, what stalled may still (rightly) time out.
  settle(snapshot(), end + o_.timeoutMs + 1000, what);
}

void Soak::linkFault(const Fault& f, std::string* what) {
  for (const Comm& c : comms_) current_.mayBreak.insert(c.id);
  reopenAllowed_ = false;
  current_.startMs = now();
  if (!setLink(o_.ns[0], o_.ifname[0], false)) failure("ip could not set the link down");
  const int64_t took = now() - current_.startMs;  // detection is timed from before it
  pump(current_.startMs + f.durationMs);
  if (!setLink(o_.ns[0], o_.ifname[0], true)) failure("ip could not set the link up");
  const int64_t down = now() - current_.startMs;
  if (!pumpUntil(
          [&] {
            return linkHasCarrier(o_.ns[0], o_.ifname[0]) && linkHasCarrier(o_.ns[1], o_.ifname[1]);
          },
          now() + 10000)) {
    failure("the veth pair has no carrier 10 s after it was set up");
  }
  const int64_t end = now();
  reopenAllowed_ = true;
  *what = o_.ifname[0] + " down for " + std::to_string(down) + " ms (ip took " +
          std::to_string(took) + " ms), carrier back after " +
          std::to_string(end - current_.startMs - down) + " ms";
  settle(snapshot(), end + o_.timeoutMs + 1000, what);
}

void Soak::killFault(const Fault& f, std::string* what) {
  Process& victim = process(f.pair, f.side);
  const int survivor = 1 - f.side;
  for (const Comm& c : comms_) {
    if (c.pair == f.pair) current_.mayBreak.insert(c.id);
  }
  freshStats();
  const Snapshot before = snapshot();
  victim.gone.push_back(victim.last);
  current_.startMs = now();
  killPeer(victim);
  for (Comm& c : comms_) {
    if (c.pair != f.pair) continue;
    c.up[f.side] = false;
    c.closed[f.side] = true;
  }
  // The survivor must find out by itself, on every communicator it shared with the victim.
  auto survivorKnows = [&] {
    return std::all_of(comms_.begin(), comms_.end(),
                       [&](const Comm& c) { return c.pair != f.pair || c.closed[survivor]; });
  };
  if (!pumpUntil(survivorKnows, current_.startMs + hangMs_ + 2000)) {
    failure("the survivor of " + victim.name() + " did not notice the kill");
  }
  // Everyone else carries on while the process is down.
  auto othersMoved = [&] {
    return std::all_of(comms_.begin(), comms_.end(),
                       [&](const Comm& c) { return c.pair == f.pair || movedSince(c, before); });
  };
  if (!pumpUntil(othersMoved, current_.startMs + hangMs_)) {
    failure("communicators of other pairs stalled while " + victim.name() + " was down");
  }
  const int64_t down = now() - current_.startMs;
  if (!startPeer(victim) || !pumpUntil([&] { return victim.ready; }, now() + 10000)) {
    failure("process " + victim.name() + " did not restart");
    fatal_ = true;
    return;
  }
  *what = "SIGKILL to " + victim.name() + " (communicators " +
          std::to_string(f.pair * o_.commsPerPair) + "-" +
          std::to_string((f.pair + 1) * o_.commsPerPair - 1) + "), restarted after " +
          std::to_string(down) + " ms, the other pairs moved meanwhile";
  // The others moved already; the victim's communicators must move in their new epoch.
  settle(before, now(), what);
}

bool Soak::recreate(Comm& c) {
  c.closing = true;
  c.manualRelay = true;
  for (int side = 0; side < 2; ++side) {
    process(c.pair, side)
        .channel.send("close " + std::to_string(c.id) + " " + std::to_string(c.epoch));
  }
  const bool closed = pumpUntil([&] { return c.closed[0] && c.closed[1]; }, now() + 5000);
  c.closing = false;
  if (!closed) return false;
  open(c);
  return pumpUntil([&] { return c.hasHandle[0] && c.hasHandle[1]; }, now() + 5000);
}

void Soak::attackFault(const Fault& f, std::string* what) {
  Comm& c = comms_[f.comm];
  const int listener = f.side, connector = 1 - f.side;
  Process& owner = process(c.pair, listener);
  freshStats();
  const Snapshot before = snapshot();
  const PeerStats ownerBefore = owner.last;
  current_.startMs = now();
  if (!recreate(c)) {
    failure("communicator " + std::to_string(c.id) + " could not be re-created");
    c.manualRelay = false;
    return;
  }
  unsigned char handle[pilot::net::kHandleBytes];
  fromHex(c.handle[listener], handle, sizeof(handle));
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    failure("no pipe for the " + std::string(faultName(f.kind)));
    c.manualRelay = false;
    return;
  }
  const bool flood = f.kind == FaultKind::Flood;
  std::map<std::string, std::string> env = {
      {"NCCL_SOCKET_IFNAME", "=" + o_.ifname[connector]},
      {"NCCL_PILOT_SOCKET_TIMEOUT_MS", std::to_string(o_.timeoutMs)}};
  const pid_t helper = forkInNamespace(o_.ns[connector], [&] {
    dup2(report[1], 3);
    close_range(4, ~0U, 0);
    return flood ? floodListener(handle, f.strangers, 3)
                 : wrongSecretPeer(handle, env, o_.timeoutMs, 3);
  });
  close(report[1]);
  LineChannel reports(report[0], -1);
  std::vector<std::string> lines;
  const std::string who = "communicator " + std::to_string(c.id) + " on " + owner.name();
  // The flood is in place, the rogue's connection made, before the real peer comes.
  pumpUntil([&] { return !reports.receive(&lines) || !lines.empty(); },
            now() + o_.timeoutMs + 5000);
  const std::string expected = flood ? "flooding" : "rogue-connected";
  if (lines.empty() || lines[0].rfind(expected, 0) != 0) {
    failure(std::string(flood ? "flooder: " : "wrong-secret peer: ") +
            (lines.empty() ? std::string("no report") : lines[0]));
  }
  if (!lines.empty()) lines.erase(lines.begin());
  int fdsDuring = -1;
  if (flood) {
    pump(now() + 500);  // the listener takes them off the queue, drops what it must
    freshStats();
    fdsDuring = owner.last.fds;
    // At most the listener, its bounded pending sockets: strangers cost nothing beyond that.
    const int bound = owner.baseline.fds + 1 + kMaxPendingSockets;
    if (fdsDuring > bound) {
      failure("under the flood " + owner.name() + " held " + std::to_string(fdsDuring) +
              " descriptors (bound " + std::to_string(bound) + ")");
    }
    const uint64_t dropped = owner.last.dropped - ownerBefore.dropped;
    if (dropped + kMaxPendingSockets < static_cast<uint64_t>(f.strangers)) {
      failure("the listener dropped " + std::to_string(dropped) + " of " +
              std::to_string(f.strangers) + " strangers");
    }
  }
  relayHandles(c);
  const int64_t relayed = now();
  const bool up = pumpUntil([&] { return c.up[0] && c.up[1]; }, relayed + o_.timeoutMs + 2000);
  const int64_t upMs = now() - relayed;
  if (!up) failure(who + " did not come up past the " + std::string(faultName(f.kind)));
  if (!flood) {
    pumpUntil([&] { return !reports.receive(&lines) || !lines.empty(); },
              now() + o_.timeoutMs + 3000);
    const std::vector<std::string> w = lines.empty() ? std::vector<std::string>{} : words(lines[0]);
    if (w.size() >= 2 && w[0] == "rogue") {
      current_.detections.push_back({c.id, connector, std::strtoll(w[1].c_str(), nullptr, 10),
                                     "the wrong-secret peer: " + rest(lines[0], 2), true});
    } else {
      failure("wrong-secret peer: " + (lines.empty() ? std::string("no report") : lines[0]));
    }
  }
  kill(helper, SIGKILL);
  while (waitpid(helper, nullptr, 0) < 0 && errno == EINTR) {
  }
  close(report[0]);
  c.manualRelay = false;
  auto othersMoved = [&] {
    return std::all_of(comms_.begin(), comms_.end(),
                       [&](const Comm& o) { return o.id == c.id || movedSince(o, before); });
  };
  if (!pumpUntil(othersMoved, current_.startMs + hangMs_)) {
    failure("other communicators stalled during the " + std::string(faultName(f.kind)));
  }
  freshStats();
  if (!flood && owner.last.wrongSecret == ownerBefore.wrongSecret) {
    failure(owner.name() + "'s listener logged no wrong secret");
  }
  if (flood) {
    *what = std::to_string(f.strangers) + " strangers on the new listener of " + who + " (" +
            std::to_string(owner.last.dropped - ownerBefore.dropped) + " dropped, " +
            std::to_string(fdsDuring) + " fds held), up " + std::to_string(upMs) + " ms later";
  } else {
    *what = "a peer with the wrong secret on the new listener of " + who + " (" +
            std::to_string(owner.last.wrongSecret - ownerBefore.wrongSecret) +
            " sockets refused), the real one up in " + std::to_string(upMs) + " ms";
  }
  settle(before, now(), what);
}

}  // namespace soak
