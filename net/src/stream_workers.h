// Helper threads for a comm's data streams (NCCL_PILOT_SOCKET_NTHREADS > 0): stream s is moved
// by thread s % threads, which waits in poll() while its sockets would block and on a condition
// variable while nothing is queued on them. The progress thread (NCCL's, calling test) only
// queues work on a stream (StreamCursor::push, published with release/acquire) and wakes them;
// it learns about finished chunks through the messages' atomic chunk counts and about a failure
// through failed()/error(). The control socket never leaves the progress thread.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "stream_cursor.h"

namespace pilot::net {

class StreamWorkers {
 public:
  /// Moves one stream as far as it goes without blocking (from a worker thread).
  using Move = StreamPass (*)(void* comm, StreamCursor& stream);

  /// min(threads, count) threads over streams[0..count); nullptr when there is nothing to run
  /// or the threads cannot be started (the comm then moves its streams inline).
  static std::unique_ptr<StreamWorkers> start(int threads, StreamArray& streams, int count,
                                              short pollEvents, void* comm, Move move);
  /// Stops and joins every thread (they wake within one poll interval).
  ~StreamWorkers();
  StreamWorkers(const StreamWorkers&) = delete;
  StreamWorkers& operator=(const StreamWorkers&) = delete;

  /// After queuing on a stream.
  void wake();
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  /// The first error a worker met ("" while none did).
  std::string error() const;
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  StreamWorkers(StreamArray& streams, int count, short pollEvents, void* comm, Move move)
      : streams_(streams), count_(count), events_(pollEvents), comm_(comm), move_(move) {}
  void run(int thread, int threads);
  bool queued(int thread, int threads) const;

  StreamArray& streams_;
  const int count_;
  const short events_;
  void* const comm_;
  const Move move_;
  mutable std::mutex mutex_;
  std::condition_variable wakeup_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  std::string error_;  ///< guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace pilot::net
