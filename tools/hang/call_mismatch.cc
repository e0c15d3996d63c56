#include "hang/call_mismatch.h"

#include <algorithm>
#include <set>
#include <vector>

namespace pilot::cli::hang {

void markMismatches(Stall* s) {
  if (s->op.empty() || s->sender >= 0) return;
  auto namesStuck = [&](const OpRef& o) { return o.op == s->op && o.seq == s->seq; };
  std::map<uint64_t, size_t> sizes;  // the stuck operation's sizes, by how many ranks give it
  for (const RankDetail& d : s->ranks) {
    if (d.state == RankState::Stuck && d.oldest && namesStuck(*d.oldest)) ++sizes[d.oldest->bytes];
  }
  if (!sizes.empty()) {
    s->bytes = std::max_element(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) {
                 return a.second < b.second;
               })->first;
  }
  for (RankDetail& d : s->ranks) {
    if (!d.oldest || isPointToPoint(d.oldest->op)) continue;
    const bool otherCollective = d.state == RankState::NotLaunched && d.oldest->op != s->op;
    const bool otherSize =
        d.state == RankState::Stuck && namesStuck(*d.oldest) && d.oldest->bytes != s->bytes;
    if (otherCollective || otherSize) d.state = RankState::Mismatched;
  }
}

void markCycle(Stall* s, const std::map<int, View>& views) {
  // Each waiting rank points at the peer that owes it the matching side while waiting in a
  // Send/Recv of its own: a ring of those is a cycle (one out-edge per rank: linear).
  std::map<int, int> owedBy;
  for (const auto& [rank, v] : views) {
    const CommState& c = *v.member->state;
    if (!v.waits || !c.oldest || !isPointToPoint(c.oldest->op)) continue;
    const int peer = c.oldest->peer;
    auto p = views.find(peer);
    if (p == views.end() || peer == rank || !p->second.waits) continue;
    const CommState& pc = *p->second.member->state;
    if (!pc.oldest || !isPointToPoint(pc.oldest->op)) continue;
    StuckOp mine;
    mine.op = c.oldest->op;
    mine.seq = c.oldest->seq;
    mine.holder = rank;
    mine.peer = peer;
    mine.known = true;
    const std::optional<Counts> theirs = sideOf(pc, peer, mine);
    if (theirs && theirs->launched <= mine.seq) owedBy[rank] = peer;
  }
  std::vector<std::vector<int>> cycles;
  std::map<int, int> seenIn;  // rank -> the walk that reached it first
  int walk = 0;
  for (const auto& [start, unused] : owedBy) {
    ++walk;
    int at = start;
    while (owedBy.count(at) != 0 && seenIn.count(at) == 0) {
      seenIn[at] = walk;
      at = owedBy[at];
    }
    if (seenIn.count(at) == 0 || seenIn[at] != walk) continue;  // ends, or joins an old walk
    std::vector<int> ring{at};
    for (int r = owedBy[at]; r != at; r = owedBy[r]) ring.push_back(r);
    std::sort(ring.begin(), ring.end());
    cycles.push_back(std::move(ring));
  }
  if (cycles.empty()) return;
  s->cycle = cycles.front();
  for (const std::vector<int>& ring : cycles) {
    if (std::count(ring.begin(), ring.end(), s->sender) +
            std::count(ring.begin(), ring.end(), s->receiver) >
        0) {
      s->cycle = ring;
      break;
    }
  }
}

}  // namespace pilot::cli::hang
