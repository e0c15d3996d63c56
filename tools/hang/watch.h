// A second look at a live job. One reading of the state files cannot tell a rank that stopped
// writing a moment ago from one whose next write is merely late, nor a frozen node from one
// whose clock runs behind: both leave files that look old against this machine's clock. A
// writer with an operation in flight promises a rewrite every second, so `hang` reads again
// once every such writer owed one: whoever rewrote is alive (and its new write time says how
// far its node's clock is from this machine's), whoever did not is frozen, whatever the clocks.
// Only where it helps: a job judged as of now (no --now, not stopped, not gathered), with an
// operation in flight.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hang/judge.h"
#include "hang/state_reader.h"

namespace pilot::cli::hang {

/// How long a watch waits for the writers' next rewrite (their promise plus a margin for a
/// loaded host), at most.
constexpr int64_t kWatchMarginMs = 1000;
constexpr int64_t kMostWatchMs = 1000 + kWatchMarginMs;

struct Watched {
  Inputs inputs;        ///< the inputs judged: the second reading when there was one
  HangReport report;    ///< the judgement of `inputs`
  bool looked = false;  ///< a second reading was made
};

/// Reads `paths`, judges them, and where a second look helps, waits for the writers' next
/// rewrite (`sleepMs`, this machine's clock in `clockMs`), reads and judges again with what it
/// saw. `options.readerNowMs` is ignored: the clock gives it.
Watched judgeWatching(const std::vector<std::string>& paths, HangOptions options,
                      const std::function<int64_t()>& clockMs,
                      const std::function<void(int64_t)>& sleepMs);

}  // namespace pilot::cli::hang
