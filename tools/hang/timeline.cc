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
                   int64_t readerNowMs) {
  reference_ = nowMs ? *nowMs : readerNowMs;
  std::map<std::string, int64_t> newest;
  for (const StateFile& s : states) {
    auto [it, fresh] = newest.try_emplace(s.node, s.writtenMs);
    if (!fresh) it->second = std::max(it->second, s.writtenMs);
  }
  for (const auto& [node, ms] : newest) {
    if (ms - reference_ <= kAheadMs) continue;
    aheadNodeNow_[node] = ms;
    notes_.push_back("node " + node + "'s clock is " + seconds(ms - reference_) +
                     " s ahead of the reference: its files are judged against its own newest");
  }
  std::optional<int64_t> newestOnTime;
  for (const auto& [node, ms] : newest) {
    if (aheadNodeNow_.count(node) == 0) newestOnTime = std::max(newestOnTime.value_or(ms), ms);
  }
  // No file is written anymore (each past the next write it promised): the whole job stopped,
  // ended or the files were gathered; judged against the reader's clock every rank would be
  // frozen and nothing said of where they stood, so judged as of the newest.
  bool noneWriting = newestOnTime.has_value();
  for (const StateFile& s : states) {
    if (aheadNodeNow_.count(s.node) == 0 && (s.final || reference_ <= s.nextDueMs + kGraceMs)) {
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
  } else if (!nowMs && noneWriting) {
    notes_.push_back("no rank rewrote its state when due (the newest is " +
                     seconds(reference_ - *newestOnTime) +
                     " s old: the whole job stopped or ended, or the files were copied): judged "
                     "as of the newest, " +
                     utcText(*newestOnTime));
    reference_ = *newestOnTime;
  }
  std::map<std::string, bool> allOverdue;
  for (const StateFile& s : states) {
    auto [it, fresh] = allOverdue.try_emplace(s.node, true);
    it->second = it->second && frozen(s);
  }
  for (const auto& [node, overdue] : allOverdue) {
    if (overdue) behind_[node] = static_cast<double>(reference_ - newest[node]) / 1000;
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
  return !file.final && nowFor(file) > file.nextDueMs + kGraceMs;
}

double Timeline::behindS(const StateFile& file) const {
  auto it = behind_.find(file.node);
  return it == behind_.end() ? 0 : it->second;
}

int64_t Timeline::writtenOnReference(const StateFile& file) const {
  return file.writtenMs - (nowFor(file) - reference_);
}

}  // namespace pilot::cli::hang
