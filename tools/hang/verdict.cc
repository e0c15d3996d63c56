#include "hang/verdict.h"

#include <algorithm>
#include <tuple>

#include "hang/why.h"

namespace pilot::cli::hang {
namespace {

bool isP2p(const std::string& op) {
  return op == "Send" || op == "Recv";
}

/// One member as of now.
struct View {
  const Member* member = nullptr;
  bool frozen = false;
  double silentS = 0;
  double behindS = 0;  ///< its node's every file is overdue by this much
  double waitS = 0;    ///< waiting_s carried to now; 0 with nothing in flight
  bool waits = false;  ///< waits past its threshold
};

View viewOf(const Member& m, const Timeline& timeline, const JudgeOptions& options) {
  View v;
  v.member = &m;
  v.frozen = timeline.frozen(*m.file);
  v.silentS = std::max(0.0, timeline.silentS(*m.file));
  v.behindS = timeline.behindS(*m.file);
  const CommState& c = *m.state;
  if (c.inFlight == 0 || m.file->final) return v;
  v.waitS = c.waitingS + v.silentS;
  const double threshold = options.stallS.value_or(m.file->stallS);
  v.waits = (threshold > 0 && v.waitS >= threshold) || (!options.stallS && c.stalled);
  return v;
}

/// The stuck operation: kind, number, and for a Send/Recv the rank holding it and its peer.
struct StuckOp {
  std::string op;
  uint64_t seq = 0, bytes = 0;
  int holder = -1, peer = -1;
  bool known = false;
};

bool names(const InFlight& o, const StuckOp& s, int rank) {
  return o.op == s.op && o.seq == s.seq && (!isP2p(s.op) || (rank == s.holder && o.peer == s.peer));
}

/// The (operation, number) most waiting ranks name; ties: the longest wait, then the lowest
/// number (the earlier operation blocks the later).
StuckOp stuckOpOf(const std::map<int, View>& views, bool anyLive) {
  using Key = std::tuple<std::string, uint64_t, int, int>;
  struct Tally {
    size_t votes = 0;
    double longest = 0;
    uint64_t bytes = 0;
  };
  std::map<Key, Tally> tallies;
  for (const auto& [rank, v] : views) {
    const CommState& c = *v.member->state;
    if (!v.waits || !c.oldest || (anyLive && v.frozen)) continue;
    const bool p2p = isP2p(c.oldest->op);
    Tally& t = tallies[{c.oldest->op, c.oldest->seq, p2p ? rank : -1, p2p ? c.oldest->peer : -1}];
    ++t.votes;
    t.longest = std::max(t.longest, v.waitS);
    t.bytes = c.oldest->bytes;
  }
  StuckOp best;
  const Tally* top = nullptr;
  for (const auto& [key, t] : tallies) {
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

/// (launched, done) of the stuck operation by `rank`; nullopt: not a party to it.
std::optional<std::pair<bool, bool>> progressOf(const CommState& c, int rank, const StuckOp& s) {
  Counts n;
  if (!isP2p(s.op)) {
    auto it = c.ops.find(s.op);
    if (it != c.ops.end()) n = it->second;
  } else if (rank == s.holder || rank == s.peer) {
    // The holder's own count towards its peer; the peer's matching one (a Send meets a Recv).
    const bool sends = (rank == s.holder) == (s.op == "Send");
    const auto& perPeer = sends ? c.sends : c.recvs;
    auto it = perPeer.find(rank == s.holder ? s.peer : s.holder);
    if (it != perPeer.end()) n = it->second;
  } else {
    return std::nullopt;
  }
  return std::make_pair(n.launched > s.seq, n.done > s.seq);
}

RankDetail detailOf(int rank, const View& v, const StuckOp& s) {
  const CommState& c = *v.member->state;
  RankDetail d;
  d.rank = rank;
  d.node = v.member->file->node;
  d.pid = v.member->file->pid;
  d.silentS = v.silentS;
  d.behindS = v.behindS;
  d.waitS = v.waitS;
  if (c.last) {
    d.last = c.last;
    d.last->ageS += v.silentS;
  }
  if (c.oldest && names(*c.oldest, s, rank)) d.proxy = c.oldest->proxy;
  const auto progress = s.known ? progressOf(c, rank, s) : std::nullopt;
  d.launched = progress && progress->first;
  if (v.member->file->final) {
    d.state = RankState::Finalized;  // its process closed its last communicator
  } else if (v.frozen) {
    d.state = RankState::Frozen;
  } else if (!progress) {
    d.state = v.waits ? RankState::Stuck : s.known ? RankState::Uninvolved : RankState::Done;
  } else if (!progress->first) {
    d.state = RankState::NotLaunched;
  } else {
    d.state = progress->second ? RankState::Done : RankState::Stuck;
  }
  return d;
}

void list(Stall* s, const RankDetail& d) {
  switch (d.state) {
    case RankState::NotLaunched:
      s->notLaunched.push_back(d.rank);
      break;
    case RankState::Frozen:
      s->frozen.push_back(d.rank);
      break;
    case RankState::Stuck:
      s->stuck.push_back(d.rank);
      break;
    case RankState::Missing:
      s->missing.push_back(d.rank);
      break;
    case RankState::Finalized:
      s->finalized.push_back(d.rank);
      break;
    default:
      break;
  }
}

/// A rank with no state for the communicator: what the summaries say of it.
std::optional<RankDetail> absentRank(int rank, const CommGroup& g, const SummaryFacts& facts) {
  RankDetail d;
  d.rank = rank;
  auto finalized = facts.finalized.find({g.comm, rank});
  if (finalized != facts.finalized.end()) {
    d.state = RankState::Finalized;
    std::tie(d.node, d.pid) = finalized->second;
    return d;
  }
  auto seen = facts.seen.find({g.comm, rank});
  if (seen == facts.seen.end()) return std::nullopt;  // missing, and nothing more to say
  std::tie(d.node, d.pid) = seen->second;
  return d;
}

}  // namespace

const char* stateName(RankState s) {
  switch (s) {
    case RankState::NotLaunched:
      return "not_launched";
    case RankState::Frozen:
      return "frozen";
    case RankState::Stuck:
      return "stuck";
    case RankState::Missing:
      return "missing";
    case RankState::Finalized:
      return "finalized";
    case RankState::Done:
      return "done";
    case RankState::Uninvolved:
      return "uninvolved";
  }
  return "?";
}

std::string opLabel(const std::string& op, uint64_t seq, int peer) {
  std::string s = op + " #" + std::to_string(seq);
  if (op == "Send" && peer >= 0) s += " to rank " + std::to_string(peer);
  if (op == "Recv" && peer >= 0) s += " from rank " + std::to_string(peer);
  return s;
}

std::optional<Stall> judgeComm(const CommGroup& g, const Timeline& timeline,
                               const SummaryFacts& summaries, const JudgeOptions& options) {
  std::map<int, View> views;
  bool anyLive = false;
  for (const auto& [rank, m] : g.ranks) {
    views[rank] = viewOf(m, timeline, options);
    anyLive |= !views[rank].frozen;
  }
  bool stalled = false;
  for (const auto& [rank, v] : views) stalled |= v.waits && (!anyLive || !v.frozen);
  if (!stalled) return std::nullopt;

  const StuckOp op = stuckOpOf(views, anyLive);
  Stall s;
  static_cast<CommKey&>(s) = g;
  s.nRanks = g.nRanks;
  s.op = op.op;
  s.seq = op.seq;
  s.bytes = op.bytes;
  if (isP2p(op.op)) {
    s.sender = op.op == "Send" ? op.holder : op.peer;
    s.receiver = op.op == "Send" ? op.peer : op.holder;
  }
  for (int rank = 0; rank < g.nRanks; ++rank) {
    auto v = views.find(rank);
    std::optional<RankDetail> d =
        v != views.end() ? detailOf(rank, v->second, op) : absentRank(rank, g, summaries);
    if (!d) {
      s.missing.push_back(rank);
      continue;
    }
    list(&s, *d);
    if (v != views.end() && v->second.member->state->oldest &&
        names(*v->second.member->state->oldest, op, rank) && (!anyLive || !v->second.frozen))
      s.stalledS = std::max(s.stalledS, v->second.waitS);
    s.ranks.push_back(std::move(*d));
  }
  explain(&s);
  return s;
}

}  // namespace pilot::cli::hang
