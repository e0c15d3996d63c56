#include "peer.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <vector>

#include "communicator.h"
#include "control.h"
#include "net_test_support.h"
#include "pilot/net/socket.h"

namespace soak {
namespace {

using namespace pilot;
using namespace pilot::net;

/// The transport's lines go to this process's log (the coordinator points stderr at a file);
/// the listener's drops are counted, so the coordinator can see strangers turned away.
class PeerLogger final : public Logger {
 public:
  void write(LogLevel level, unsigned long, const char*, int, const std::string& m) override {
    if (m.find("listener dropped connection") != std::string::npos) {
      dropped.fetch_add(1, std::memory_order_relaxed);
      if (m.find("wrong secret") != std::string::npos) {
        wrongSecret.fetch_add(1, std::memory_order_relaxed);
      }
    }
    std::fprintf(stderr, "%lld %s %s\n", static_cast<long long>(nettest::monotonicMs()),
                 level == LogLevel::Warn ? "WARN" : "INFO", m.c_str());
  }
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> wrongSecret{0};
};

std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

class Peer {
 public:
  Peer(const PeerOptions& options, Transport& transport, PeerLogger& log)
      : options_(options), t_(transport), log_(log), limit_(options.bytesPerSecond) {
    // Each lane's arena holds the largest step and its slack.
    const size_t arena = kMaxStepBytes + kMaxGroup * (kMaxSlack + 64);
    for (int k = 0; k < options.commsPerPair; ++k) {
      comms_.push_back(
          std::make_unique<Communicator>(options.pair * options.commsPerPair + k, arena));
    }
  }

  int run(LineChannel& control) {
    control_ = &control;
    control.send("ready " + std::to_string(getpid()));
    int64_t nextTick = 0;
    size_t first = 0;
    for (;;) {
      const int64_t now = nettest::monotonicMs();
      std::vector<std::string> lines;
      const bool open = control.receive(&lines);
      for (const std::string& line : lines) {
        if (line == "finish") return finish();
        command(line, now);
      }
      if (!open) return 1;
      bool moved = false;
      // A different communicator goes first each pass: they share the rate limit.
      for (size_t i = 0; i < comms_.size(); ++i)
        moved |= drive(*comms_[(first + i) % comms_.size()], now);
      first = (first + 1) % comms_.size();
      if (now >= nextTick) {
        control.send("tick " + stats());
        nextTick = now + 200;
      }
      if (!moved) {
        const timespec pause{0, 1000000};
        nanosleep(&pause, nullptr);
      }
    }
  }

 private:
  Communicator* find(int id) {
    for (auto& c : comms_) {
      if (c->id() == id) return c.get();
    }
    return nullptr;
  }

  void command(const std::string& line, int64_t now) {
    const std::vector<std::string> w = words(line);
    if (w.empty()) return;
    if (w[0] == "stats") {
      control_->send("stats " + stats());
      return;
    }
    if (w.size() < 3) return;
    Communicator* c = find(std::atoi(w[1].c_str()));
    const uint32_t epoch = static_cast<uint32_t>(std::strtoul(w[2].c_str(), nullptr, 10));
    if (c == nullptr) return;
    const std::string id = w[1] + " " + w[2];
    if (w[0] == "open") {
      unsigned char handle[kHandleBytes];
      std::string error = c->open(t_, epoch, handle, now);
      if (!error.empty()) {
        control_->send("broken " + id + " " + std::to_string(now) + " " + std::to_string(now) +
                       " listen " + oneLine(error));
        return;
      }
      control_->send("handle " + id + " " + toHex(handle, kHandleBytes));
    } else if (w[0] == "connect" && w.size() == 4 && epoch == c->epoch()) {
      unsigned char handle[kHandleBytes];
      if (fromHex(w[3], handle, kHandleBytes)) c->connectTo(handle, now);
    } else if (w[0] == "close" && epoch == c->epoch()) {
      c->close(t_);
      control_->send("closed " + id);
    }
  }

  bool drive(Communicator& c, int64_t now) {
    const int dir = options_.side == 'A' ? 0 : 1;
    const LaneId send{options_.seed, c.id(), c.epoch(), dir};
    const LaneId recv{options_.seed, c.id(), c.epoch(), 1 - dir};
    Communicator::Outcome o = c.drive(t_, limit_, totals_, send, recv, options_.hangMs, now);
    const std::string id = std::to_string(c.id()) + " " + std::to_string(c.epoch());
    if (o.upAfterMs >= 0) control_->send("up " + id + " " + std::to_string(o.upAfterMs));
    if (!o.corruption.empty()) control_->send("corrupt " + id + " " + oneLine(o.corruption));
    if (o.broken) {
      const Breakage& b = o.breakage;
      control_->send(std::string(b.hung ? "hung " : "broken ") + id + " " + std::to_string(b.atMs) +
                     " " + b.sendSteps + " " + b.recvWaiting + " " + b.where + " " +
                     oneLine(b.message));
    }
    return o.moved;
  }

  /// fds, RSS (KiB), messages and bytes verified, corrupted, strangers dropped (all, and for a
  /// wrong secret), then per communicator its epoch and the steps received in it.
  std::string stats() const {
    std::string s = std::to_string(nettest::openFdCount()) + " " + std::to_string(residentKb()) +
                    " " + std::to_string(totals_.transfers) + " " + std::to_string(totals_.bytes) +
                    " " + std::to_string(totals_.corrupted) + " " +
                    std::to_string(log_.dropped.load()) + " " +
                    std::to_string(log_.wrongSecret.load());
    for (const auto& c : comms_) {
      s += " " + std::to_string(c->epoch()) + ":" + std::to_string(c->receivedSteps());
    }
    return s;
  }

  int finish() {
    for (auto& c : comms_) c->close(t_);
    control_->send("done " + stats());
    return 0;
  }

  const PeerOptions& options_;
  Transport& t_;
  PeerLogger& log_;
  RateLimit limit_;
  TrafficTotals totals_;
  std::vector<std::unique_ptr<Communicator>> comms_;
  LineChannel* control_ = nullptr;
};

}  // namespace

int runPeer(const PeerOptions& options) {
  signal(SIGPIPE, SIG_IGN);
  LineChannel control(3, 4);
  PeerLogger log;
  auto transport = makeSocketTransport(nettest::mapEnv(options.env), log);
  if (!transport.ok() || (*transport)->deviceCount() < 1) {
    control.send("fatal no transport: " +
                 (transport.ok() ? std::string("no usable interface") : transport.error()));
    return 3;
  }
  Peer peer(options, **transport, log);
  return peer.run(control);
}

}  // namespace soak
