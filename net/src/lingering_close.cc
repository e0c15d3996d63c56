#include "lingering_close.h"

#include <atomic>
#include <mutex>
#include <vector>

namespace pilot::net {
namespace {

/// Beyond this many the oldest is closed at once: a bound on fds, not a case NCCL reaches (it
/// closes comms when a communicator goes, and their receivers close theirs just as soon).
constexpr size_t kMaxLingering = 1024;

struct Lingering {
  Fd fd;
  int64_t deadlineMs = 0;
};

/// How often the progress path looks at the waiting sockets: a socket goes at most this long
/// after its peer closed or its deadline passed, and a sweep (one recv per waiting socket)
/// costs the progress thread nothing between two of them.
constexpr int64_t kSweepIntervalMs = 100;

struct Registry {
  std::mutex mutex;
  std::vector<Lingering> sockets;
  std::atomic<size_t> count{0};  ///< sockets.size(), for a look without the lock
  std::atomic<int64_t> nextSweepMs{0};
};

Registry& registry() {
  // Never destroyed: a comm may close during static destruction (NCCL unloading us at exit);
  // the fds go with the process.
  static Registry* r = new Registry();
  return *r;
}

/// True when the socket is done with: the peer closed, an error, or nothing more to wait for.
bool finished(const Lingering& l, int64_t now) {
  char discard[4096];
  for (;;) {
    const iovec iov{discard, sizeof(discard)};
    const IoResult r = recvSome(l.fd.get(), &iov, 1);
    if (r.kind == IoResult::Moved) continue;
    if (r.kind == IoResult::WouldBlock) return now >= l.deadlineMs;
    return true;  // Closed (the peer's FIN) or Failed
  }
}

/// With the registry's lock held.
void sweep(Registry& r, int64_t now) {
  std::vector<Lingering>& sockets = r.sockets;
  size_t kept = 0;
  for (size_t i = 0; i < sockets.size(); ++i) {
    if (finished(sockets[i], now)) continue;  // its Fd closes as the slot is overwritten
    if (kept != i) sockets[kept] = std::move(sockets[i]);
    ++kept;
  }
  sockets.resize(kept);
  r.count.store(kept, std::memory_order_relaxed);
  r.nextSweepMs.store(now + kSweepIntervalMs, std::memory_order_relaxed);
}

}  // namespace

void closeWhenPeerCloses(Fd fd, int64_t deadlineMs) noexcept {
  try {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const int64_t now = nowMs();
    sweep(r, now);
    Lingering l{std::move(fd), deadlineMs};
    if (finished(l, now)) return;
    if (r.sockets.size() >= kMaxLingering) r.sockets.erase(r.sockets.begin());
    r.sockets.push_back(std::move(l));
    r.count.store(r.sockets.size(), std::memory_order_relaxed);
  } catch (...) {
    // Out of memory for the list: the fd closes here, as it did before lingering existed.
  }
}

void sweepLingeringSockets() noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  sweep(r, nowMs());
}

void sweepLingeringSocketsWhenDue() noexcept {
  Registry& r = registry();
  if (r.count.load(std::memory_order_relaxed) == 0) return;
  const int64_t now = nowMs();
  if (now < r.nextSweepMs.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(r.mutex, std::try_to_lock);
  if (lock.owns_lock()) sweep(r, now);  // else another thread is at it: never wait here
}

int lingeringSockets() noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return static_cast<int>(r.sockets.size());
}

}  // namespace pilot::net
