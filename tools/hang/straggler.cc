#include "hang/straggler.h"

#include <map>
#include <utility>

namespace pilot::cli::hang {

std::optional<Straggler> stragglerOf(const CommGroup& g, const Timeline& timeline) {
  std::map<std::pair<std::string, uint64_t>, std::vector<monitor::RankTime>> groups;
  for (const auto& [rank, m] : g.ranks) {
    if (timeline.frozen(*m.file)) continue;  // its window is no longer the job's last
    for (const WindowKey& k : m.state->window) {
      if (k.calls > 0) groups[{k.op, k.bytes}].push_back({rank, k.calls, k.meanUs});
    }
  }
  std::vector<std::vector<monitor::RankTime>> times;
  for (auto& [key, ranks] : groups) times.push_back(std::move(ranks));
  const monitor::LateVote vote = monitor::lateArriverOf(times);
  if (vote.rank < 0) return std::nullopt;
  Straggler s;
  static_cast<CommKey&>(s) = g;
  static_cast<monitor::LateVote&>(s) = vote;
  return s;
}

bool measuredWindow(const CommGroup& g, const Timeline& timeline) {
  for (const auto& [rank, m] : g.ranks) {
    if (timeline.frozen(*m.file)) continue;
    for (const WindowKey& k : m.state->window)
      if (k.calls > 0) return true;
  }
  return false;
}

}  // namespace pilot::cli::hang
