#include "monitor/late_arriver.h"

#include <algorithm>
#include <map>

namespace pilot::cli::monitor {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// (weighted difference, weight) of `rank` in `group`: the others' mean minus its own.
std::pair<double, double> lossIn(const std::vector<RankTime>& group, int rank) {
  double others = 0, own = 0, weight = 0;
  for (const RankTime& t : group) {
    if (t.rank == rank) {
      own = t.meanUs;
      weight = static_cast<double>(t.calls);
    } else {
      others += t.meanUs;
    }
  }
  if (weight == 0) return {0, 0};
  others /= static_cast<double>(group.size() - 1);
  return {(others - own) * weight, weight};
}

}  // namespace

GroupShortest shortestOf(const std::vector<RankTime>& ranks) {
  GroupShortest s;
  if (ranks.size() < 2) return s;
  std::vector<double> means;
  for (const RankTime& t : ranks) means.push_back(t.meanUs);
  const double mid = median(means);
  const auto shortest =
      std::min_element(ranks.begin(), ranks.end(),
                       [](const RankTime& a, const RankTime& b) { return a.meanUs < b.meanUs; });
  s.spread = mid > 0 ? (mid - shortest->meanUs) / mid : 0;
  if (s.spread >= kNoiseSpread) s.rank = shortest->rank;
  return s;
}

LateVote lateArriverOf(const std::vector<std::vector<RankTime>>& groups) {
  LateVote v;
  std::map<int, std::vector<double>> wins;
  for (const std::vector<RankTime>& g : groups) {
    if (g.size() < 2) continue;
    ++v.compared;
    const GroupShortest s = shortestOf(g);
    if (s.rank >= 0) wins[s.rank].push_back(s.spread);
  }
  for (const auto& [rank, spreads] : wins) {
    if (spreads.size() > v.wins) {
      v.wins = spreads.size();
      v.rank = rank;
      v.spread = median(spreads);
    }
  }
  if (v.wins * 2 <= v.compared) {  // no majority: nobody consistently
    v.rank = -1;
    return v;
  }
  double lost = 0, weight = 0;
  for (const std::vector<RankTime>& g : groups) {
    if (g.size() < 2) continue;
    const auto [l, w] = lossIn(g, v.rank);
    lost += l;
    weight += w;
  }
  v.lostMsPerOp = weight > 0 ? lost / weight / 1000 : 0;
  return v;
}

}  // namespace pilot::cli::monitor
