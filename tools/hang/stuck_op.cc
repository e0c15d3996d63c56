#include "hang/stuck_op.h"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <vector>

namespace pilot::cli::hang {

bool isPointToPoint(const std::string& op) {
  return op == "Send" || op == "Recv";
}

bool names(const InFlight& o, const StuckOp& s, int rank) {
  return o.op == s.op && o.seq == s.seq &&
         (!isPointToPoint(s.op) || (rank == s.holder && o.peer == s.peer));
}

StuckOp stuckOpOf(const std::map<int, View>& views, bool anyLive) {
  using OpKey = std::tuple<std::string, uint64_t, int, int>;
  struct Tally {
    size_t votes = 0;
    double longest = 0;
    uint64_t bytes = 0;
  };
  std::map<OpKey, Tally> tallies;
  for (const auto& [rank, v] : views) {
    const CommState& c = *v.member->state;
    if (!v.waits || !c.oldest || (anyLive && v.frozen)) continue;
    const bool p2p = isPointToPoint(c.oldest->op);
    Tally& t = tallies[{c.oldest->op, c.oldest->seq, p2p ? rank : -1, p2p ? c.oldest->peer : -1}];
    ++t.votes;
    t.longest = std::max(t.longest, v.waitS);
    t.bytes = c.oldest->bytes;
  }
  StuckOp best;
  const Tally* top = nullptr;
  for (const auto& [key, t] : tallies) {  // ascending: the lowest number first among equals
    if (top == nullptr || t.votes > top->votes ||
        (t.votes == top->votes && t.longest > top->longest)) {
      top = &t;
      std::tie(best.op, best.seq, best.holder, best.peer) = key;
      best.bytes = t.bytes;
      best.known = true;
    }
  }
  return best;
}

std::optional<Counts> sideOf(const CommState& c, int rank, const StuckOp& s) {
  if (!isPointToPoint(s.op)) {
    auto it = c.ops.find(s.op);
    return it != c.ops.end() ? it->second : Counts{};
  }
  if (rank != s.holder && rank != s.peer) return std::nullopt;
  // The holder's own count towards its peer; the peer's matching one (a Send meets a Recv).
  const bool sends = (rank == s.holder) == (s.op == "Send");
  const auto& perPeer = sends ? c.sends : c.recvs;
  auto it = perPeer.find(rank == s.holder ? s.peer : s.holder);
  return it != perPeer.end() ? it->second : Counts{};
}

std::map<int, double> unshownAgesS(const std::map<int, View>& views, const StuckOp& s) {
  std::map<int, double> ages;
  if (!s.known) return ages;
  // Each party's completions towards the operation and how long ago it last completed; by
  // completions, most first, each carrying the longest age among those with at least as many.
  std::vector<std::pair<uint64_t, double>> doneAge;
  std::map<int, uint64_t> launched;
  for (const auto& [rank, v] : views) {
    const CommState& c = *v.member->state;
    const std::optional<Counts> side = sideOf(c, rank, s);
    if (!side) continue;
    launched[rank] = side->launched;
    doneAge.emplace_back(side->done, c.lastDoneAgeS.value_or(0) + v.silentS);
  }
  std::sort(doneAge.begin(), doneAge.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 1; i < doneAge.size(); ++i)
    doneAge[i].second = std::max(doneAge[i].second, doneAge[i - 1].second);
  for (const auto& entry : launched) {
    const uint64_t mine = entry.second;
    // The parties that completed more than this one launched (never itself: done <= launched).
    auto end = std::partition_point(doneAge.begin(), doneAge.end(),
                                    [mine](const auto& d) { return d.first > mine; });
    ages[entry.first] = end == doneAge.begin() ? 0 : std::prev(end)->second;
  }
  return ages;
}

}  // namespace pilot::cli::hang
