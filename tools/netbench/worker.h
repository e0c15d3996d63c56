// A thread that runs submitted tasks in order: netbench's stand-ins for NCCL's proxy service
// thread (listen/connect/accept/regMr/close) and proxy progress thread (isend/irecv/test), so
// the plugin sees the calls from the threads NCCL would make them on.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>

namespace pilot::cli {

class Worker {
 public:
  /// `name` shows in top/gdb (15 characters at most).
  explicit Worker(const std::string& name);
  /// Finishes the queued tasks, then joins.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  template <typename F>
  auto submit(F task) -> std::future<std::invoke_result_t<F>> {
    auto packaged =
        std::make_shared<std::packaged_task<std::invoke_result_t<F>()>>(std::move(task));
    auto future = packaged->get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.emplace_back([packaged] { (*packaged)(); });
    }
    wake_.notify_one();
    return future;
  }

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pilot::cli
