#include "hang/watch.h"

#include <algorithm>
#include <map>
#include <utility>

namespace pilot::cli::hang {
namespace {

/// The longest a writer with something in flight promised between two writes, capped.
int64_t longestPromiseMs(const Inputs& in) {
  int64_t most = 0;
  for (const StateFile& s : in.states)
    if (busyWriter(s)) most = std::max(most, std::min<int64_t>(s.nextDueMs - s.writtenMs, 1000));
  return most;
}

}  // namespace

Watched judgeWatching(const std::vector<std::string>& paths, HangOptions options,
                      const std::function<int64_t()>& clockMs,
                      const std::function<void(int64_t)>& sleepMs) {
  Watched w;
  w.inputs = readInputs(paths);
  const int64_t firstMs = clockMs();
  options.readerNowMs = firstMs;
  w.report = judge(w.inputs, options);
  const Timeline first(w.inputs.states, options.nowMs, firstMs);
  const bool live = !options.nowMs && first.referenceMs() == firstMs;  // not stopped, gathered
  const int64_t promiseMs = longestPromiseMs(w.inputs);
  const bool anyOverdue =
      std::any_of(w.inputs.states.begin(), w.inputs.states.end(),
                  [&](const StateFile& s) { return busyWriter(s) && first.frozen(s); });
  if (!live || promiseMs <= 0 || (w.report.stalls.empty() && !anyOverdue)) return w;

  sleepMs(std::min(promiseMs + kWatchMarginMs, kMostWatchMs));
  Inputs second = readInputs(paths);
  const int64_t secondMs = clockMs();
  const int64_t watchedMs = secondMs - firstMs;
  std::map<std::pair<std::string, int64_t>, const StateFile*> before;
  for (const StateFile& s : w.inputs.states) before[{s.node, s.pid}] = &s;
  Observations seen;
  for (const StateFile& s : second.states) {
    auto was = before.find({s.node, s.pid});
    if (was == before.end() || s.final) continue;
    const StateFile& old = *was->second;
    if (s.writtenMs != old.writtenMs) {
      seen.rewrote[{s.node, s.pid}] = true;
      // Written between the two readings, most likely late in the watch: its write time
      // against this machine's clock, the newest of the node's, is its clock's offset.
      const int64_t offset = s.writtenMs - secondMs;
      auto [it, fresh] = seen.nodeOffsetMs.try_emplace(s.node, offset);
      if (!fresh) it->second = std::max(it->second, offset);
    } else if (busyWriter(old) && old.nextDueMs - old.writtenMs + kWatchMarginMs <= watchedMs) {
      seen.rewrote[{s.node, s.pid}] = false;  // it owed a rewrite within the watch
    }
  }
  options.readerNowMs = secondMs;
  options.seen = &seen;
  w.report = judge(second, options);
  w.report.notes.push_back("watched the state files for " + std::to_string(watchedMs) + " ms: " +
                           std::to_string(std::count_if(seen.rewrote.begin(), seen.rewrote.end(),
                                                        [](const auto& e) { return e.second; })) +
                           " process(es) rewrote theirs, " +
                           std::to_string(std::count_if(seen.rewrote.begin(), seen.rewrote.end(),
                                                        [](const auto& e) { return !e.second; })) +
                           " owed a rewrite and made none");
  w.inputs = std::move(second);
  w.looked = true;
  return w;
}

}  // namespace pilot::cli::hang
