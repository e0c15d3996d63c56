// When `nccl-pilot hang` judges the files, and per node against which clock. The state files'
// times are each writer's wall clock, so:
//  - the reference is --now, else this machine's clock; when every file is older than that by
//    more than kGatheredMs (files gathered after the fact, a job that ended), the newest file's
//    time, said in a note;
//  - a node whose newest file is ahead of the reference by more than kAheadMs has a clock
//    ahead: noted, and its files are judged against its own newest, so it is never frozen for it;
//  - a node whose every file is overdue may be frozen, or its clock may be behind: the verdict
//    says both (behindS).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hang/state_file.h"

namespace pilot::cli::hang {

constexpr int64_t kGraceMs = 2000;      ///< a write later than next_due_ms by this: frozen
constexpr double kLaunchWriteS = 1;     ///< the writer rewrites within this of a launch
constexpr int64_t kAheadMs = 2000;      ///< a node's clock ahead by more: judged on its own
constexpr int64_t kGatheredMs = 60000;  ///< every file older by more: judged as of the newest

/// What `hang` saw of the writers while it watched them (watch.h): per process (node, pid)
/// whether it rewrote its state file when it owed a rewrite, and per node its clock's offset
/// from this machine's (ms), from a file it rewrote while watched. A writer judged by what it
/// did, not by clocks that may disagree.
struct Observations {
  std::map<std::pair<std::string, int64_t>, bool> rewrote;
  std::map<std::string, int64_t> nodeOffsetMs;
};

class Timeline {
 public:
  /// `nowMs`: --now; `readerNowMs`: this machine's clock (CLOCK_REALTIME, ms); `seen`: what a
  /// watch saw (none: clocks alone).
  Timeline(const std::vector<StateFile>& states, std::optional<int64_t> nowMs, int64_t readerNowMs,
           const Observations* seen = nullptr);

  int64_t referenceMs() const { return reference_; }
  /// The time `file` is judged at: the reference, or its node's newest write when that node's
  /// clock is ahead.
  int64_t nowFor(const StateFile& file) const;
  /// Seconds since `file` was written, as of nowFor(file).
  double silentS(const StateFile& file) const;
  /// Its writer missed its next write by more than the grace (a final file never is).
  bool frozen(const StateFile& file) const;
  /// > 0 when every file of the file's node is overdue: by how much its newest is (the node's
  /// clock may be this far behind rather than the node frozen).
  double behindS(const StateFile& file) const;
  /// The reference moved onto the writers' clocks: `file`'s write time on the reference's clock.
  int64_t writtenOnReference(const StateFile& file) const;
  const std::vector<std::string>& notes() const { return notes_; }
  /// No rank rewrote its state when due: judged as of the last writes.
  bool jobStopped() const { return jobStopped_; }

 private:
  int64_t reference_ = 0;
  std::map<std::string, int64_t> aheadNodeNow_;              ///< node -> its own newest write
  std::map<std::string, double> behind_;                     ///< node -> seconds its newest lags
  std::map<std::pair<std::string, int64_t>, bool> rewrote_;  ///< from a watch
  std::vector<std::string> notes_;
  bool jobStopped_ = false;
};

/// This machine's clock (CLOCK_REALTIME), unix ms: the reference without --now.
int64_t readerClockMs();

/// "2025-12-03 14:33:20 UTC" for a unix time in ms.
std::string utcText(int64_t unixMs);

}  // namespace pilot::cli::hang
