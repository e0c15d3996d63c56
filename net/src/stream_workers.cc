#include "stream_workers.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <system_error>

namespace pilot::net {
namespace {

/// How long a worker sleeps in poll() before it looks at its queues (and the stop flag) again.
constexpr int kPollMs = 10;

}  // namespace

std::unique_ptr<StreamWorkers> StreamWorkers::start(int threads, StreamArray& streams, int count,
                                                    short pollEvents, void* comm, Move move) {
  if (threads <= 0 || count <= 0) return nullptr;
  std::unique_ptr<StreamWorkers> w(new StreamWorkers(streams, count, pollEvents, comm, move));
  const int n = std::min(threads, count);
  try {
    for (int t = 0; t < n; ++t) w->threads_.emplace_back([p = w.get(), t, n] { p->run(t, n); });
  } catch (const std::system_error&) {
    return nullptr;  // the destructor joins the threads that did start
  }
  return w;
}

StreamWorkers::~StreamWorkers() {
  stop_.store(true, std::memory_order_release);
  wake();
  for (std::thread& t : threads_) t.join();
}

void StreamWorkers::wake() {
  // Taking the lock orders this wake-up after a worker's check of its queues, so none is lost.
  { std::lock_guard<std::mutex> lock(mutex_); }
  wakeup_.notify_all();
}

std::string StreamWorkers::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

bool StreamWorkers::queued(int thread, int threads) const {
  for (int s = thread; s < count_; s += threads) {
    if (!streams_[s].empty()) return true;
  }
  return false;
}

void StreamWorkers::run(int thread, int threads) {
  pollfd polls[wire::kMaxStreams];
  while (!stop_.load(std::memory_order_acquire)) {
    int blocked = 0;
    bool work = false;
    for (int s = thread; s < count_; s += threads) {
      StreamCursor& stream = streams_[s];
      if (stream.empty()) continue;
      work = true;
      StreamPass pass = move_(comm_, stream);
      if (!pass.error.empty()) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!failed_.load(std::memory_order_relaxed)) error_ = std::move(pass.error);
        failed_.store(true, std::memory_order_release);
        return;
      }
      if (pass.blocked) polls[blocked++] = {stream.fd.get(), events_, 0};
    }
    if (!work) {
      std::unique_lock<std::mutex> lock(mutex_);
      wakeup_.wait_for(lock, std::chrono::milliseconds(kPollMs * 10), [&] {
        return stop_.load(std::memory_order_acquire) || queued(thread, threads);
      });
    } else if (blocked > 0) {
      (void)::poll(polls, static_cast<nfds_t>(blocked), kPollMs);  // EINTR: just go round
    }
  }
}

}  // namespace pilot::net
