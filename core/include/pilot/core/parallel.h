// Many files at once (the tool's readers; the library starts no thread this way). `hang`,
// `monitor` and `doctor --job` read a file or three per rank: a hundred thousand on the largest
// jobs, each parsed on its own. They are parsed on every core
// (at most kMostReaderThreads), each result into its own slot, and merged in order by the
// caller: the output is the one thread's. A few hundred files take one thread: no pool for the
// jobs of the test suite.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace pilot {

constexpr size_t kMostReaderThreads = 16;
constexpr size_t kFilesPerReaderThread = 512;

/// Calls fn(i) for every i in [0, n), on several threads when n is large; fn must not throw
/// and may touch nothing but slot i of what it fills.
template <typename Fn>
void forEachIndex(size_t n, Fn fn) {
  const size_t cores = std::max<size_t>(1, std::thread::hardware_concurrency());
  const size_t threads = std::min({cores, kMostReaderThreads, n / kFilesPerReaderThread});
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace pilot
