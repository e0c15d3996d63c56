#include "hang/timeline.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace pilot::cli::hang {
namespace {

std::string seconds(int64_t ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.0f", static_cast<double>(ms) / 1000);
  return buffer;
}

}  // namespace

int64_t readerClockMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string utcText(int64_t unixMs) {
  const std::time_t t = static_cast<std::time_t>(unixMs / 1000);
  std::tm tm{};
  char buffer[40] = "?";
  if (::gmtime_r(&t, &tm) != nullptr) std::strftime(buffer, sizeof buffer, "%F %T UTC", &tm);
  return buffer;
}

Timeline::Timeline(const std::vector<StateFile>& states, std::optional<int64_t> nowMs,
                   int64_t readerNowMs, const Observations* seen) {
  reference_ = nowMs ? *nowMs : readerNowMs;
  if (seen != nullptr) {
    rewrote_ = seen->rewrote;
    // A node whose files, rewritten while watched, carry times off this machine's clock: its
    // files are judged on its own clock (behind or ahead).
    for (const auto& [node, offset] : seen->nodeOffsetMs) {
      if (offset >= -kAheadMs && offset <= kAheadMs) continue;
      aheadNodeNow_[node] = reference_ + offset;
      notes_.push_back("node " + node + "'s clock is " + seconds(offset < 0 ? -offset : offset) +
                       " s " + (offset < 0 ? "behind" : "ahead of") +
                       " this machine's (its state files, rewritten while watched, say so): its "
                       "files are judged on its own clock");
    }
  }
  std::map<std::string, int64_t> newest;
  for (const StateFile& s : states) {
    auto [it, fresh] = newest.try_emplace(s.node, s.writtenMs);
    if (!fresh) it->second = std::max(it->second, s.writtenMs);
  }
  for (const auto& [node, ms] : newest) {
    if (ms - reference_ <= kAheadMs || aheadNodeNow_.count(node) != 0) continue;
    aheadNodeNow_[node] = ms;
    notes_.push_back("node " + node + "'s clock is " + seconds(ms - reference_) +
                     " s ahead of the reference: its files are judged against its own newest");
  }
  std::optional<int64_t> newestOnTime;
  for (const auto& [node, ms] : newest) {
    if (aheadNodeNow_.count(node) == 0) newestOnTime = std::max(newestOnTime.value_or(ms), ms);
  }
  // No rank rewrites its state when due: the whole job stopped (a watchdog's SIGKILL, a
  // scheduler's stop), ended, or the files were gathered. Judged against the reader's clock
  // every waiting rank would be frozen and nothing said of where they stood, so judged as of
  // the newest. What decides are the ranks with something in flight: they promise a write
  // every second, while an idle rank (elsewhere in the program) promises one per export
  // interval and its last may lie well before the stop, so its promise proves nothing.
  bool noneWriting = newestOnTime.has_value();
  for (const auto& [process, rewrote] : rewrote_) noneWriting = noneWriting && !rewrote;
  bool anyInFlight = false;
  for (const StateFile& s : states) {
    if (aheadNodeNow_.count(s.node) != 0 || s.final) continue;
    const bool busy = busyWriter(s);
    anyInFlight |= busy;
    auto watched = rewrote_.find({s.node, s.pid});
    const bool overdue =
        watched != rewrote_.end() ? !watched->second : reference_ > s.nextDueMs + kGraceMs;
    if (busy && !overdue) noneWriting = false;
  }
  if (!anyInFlight) {  // nothing in flight anywhere: every file must be overdue
    for (const StateFile& s : states) {
      if (aheadNodeNow_.count(s.node) == 0 && (s.final || reference_ <= s.nextDueMs + kGraceMs))
        noneWriting = false;
    }
  }
  if (!nowMs && newestOnTime && reference_ - *newestOnTime > kGatheredMs) {
    notes_.push_back("every state file is older than this machine's clock by more than " +
                     seconds(kGatheredMs) + " s (the newest by " +
                     seconds(reference_ - *newestOnTime) +
                     " s: gathered after the fact, or the job ended): judged as of the newest, " +
                     utcText(*newestOnTime));
    reference_ = *newestOnTime;
    jobStopped_ = true;
  } else if (!nowMs && noneWriting) {
    notes_.push_back("no rank rewrote its state when due (the newest is " +
                     seconds(reference_ - *newestOnTime) +
                     " s old, and the ranks with an operation in flight promised one every "
                     "second): the whole job stopped (killed or stopped as a whole) or ended, or "
                     "the files were copied; judged as of its last writes, " +
                     utcText(*newestOnTime));
    jobStopped_ = true;
    reference_ = *newestOnTime;
  }
  std::map<std::string, bool> allOverdue;
  for (const StateFile& s : states) {
    auto [it, fresh] = allOverdue.try_emplace(s.node, true);
    it->second = it->second && frozen(s);
  }
  for (const auto& [node, overdue] : allOverdue) {
    if (overdue && aheadNodeNow_.count(node) == 0)
      behind_[node] = static_cast<double>(reference_ - newest[node]) / 1000;
  }
}

int64_t Timeline::nowFor(const StateFile& file) const {
  auto it = aheadNodeNow_.find(file.node);
  return it == aheadNodeNow_.end() ? reference_ : it->second;
}

double Timeline::silentS(const StateFile& file) const {
  return static_cast<double>(nowFor(file) - file.writtenMs) / 1000;
}

bool Timeline::frozen(const StateFile& file) const {
  if (file.final) return false;
  // What it did while watched, not what the clocks say; but a job that stopped as a whole is
  // judged as of its last writes, where nobody is late yet.
  auto seen = rewrote_.find({file.node, file.pid});
  if (seen != rewrote_.end() && !jobStopped_) return !seen->second;
  return nowFor(file) > file.nextDueMs + kGraceMs;
}

double Timeline::behindS(const StateFile& file) const {
  auto it = behind_.find(file.node);
  return it == behind_.end() ? 0 : it->second;
}

int64_t Timeline::writtenOnReference(const StateFile& file) const {
  return file.writtenMs - (nowFor(file) - reference_);
}

}  // namespace pilot::cli::hang
