#include "netbench/worker.h"

#include <pthread.h>

namespace pilot::cli {

Worker::Worker(const std::string& name) : thread_([this] { loop(); }) {
  pthread_setname_np(thread_.native_handle(), name.substr(0, 15).c_str());
}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void Worker::loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace pilot::cli
