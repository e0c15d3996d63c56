#include "hang/verdict.h"

#include <algorithm>
#include <tuple>

#include "hang/call_mismatch.h"
#include "hang/stuck_op.h"
#include "hang/why.h"

namespace pilot::cli::hang {
namespace {

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

RankDetail detailOf(int rank, const View& v, const StuckOp& s, const JudgeOptions& options) {
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
    if (d.last->ageS >= 0) d.last->ageS += v.silentS;  // < 0: when is unknown
  }
  if (c.oldest && names(*c.oldest, s, rank)) {
    d.proxy = c.oldest->proxy;
    d.kernelStarted = !c.oldest->started.empty();
  }
  if (c.oldest && c.inFlight > 0 && !v.member->file->final) {
    d.oldest = static_cast<const OpRef&>(*c.oldest);
    d.oldest->ageS = v.waitS;
  }
  const std::optional<Counts> side = s.known ? sideOf(c, rank, s) : std::nullopt;
  d.launched = side && side->launched > s.seq;
  d.unshownS = v.unshownS;
  if (v.member->file->final) {
    d.state = RankState::Finalized;  // its process closed its last communicator
  } else if (v.frozen) {
    d.state = RankState::Frozen;
  } else if (!side) {
    d.state = v.waits ? RankState::Stuck : s.known ? RankState::Uninvolved : RankState::Done;
  } else if (!d.launched) {
    d.state = RankState::NotLaunched;
  } else {
    d.state = side->done > s.seq ? RankState::Done : RankState::Stuck;
  }
  d.fate = fateName(fateOf(options.probe, d.node, d.pid, v.member->file->writtenMs));
  return d;
}

void list(Stall* s, const RankDetail& d) {
  switch (d.state) {
    case RankState::NotLaunched:
      s->notLaunched.push_back(d.rank);
      break;
    case RankState::Mismatched:
      s->mismatched.push_back(d.rank);
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
    case RankState::Mismatched:
      return "mismatched";
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
  if (static_cast<uint64_t>(g.nRanks) > options.mostRanks) {
    Stall s;
    static_cast<CommKey&>(s) = g;
    s.nRanks = g.nRanks;
    s.why =
        "ranks of it wait past their threshold; not judged: the stalled communicators name "
        "more than " +
        std::to_string(kMostRanksListed) + " ranks in all";
    return s;
  }

  const StuckOp op = stuckOpOf(views, anyLive);
  // A file that misses launches the others completed with it was written before them; its
  // writer owed a new one within kLaunchWriteS of them: past that and the grace, it is frozen.
  const std::map<int, double> unshown = unshownAgesS(views, op);
  for (auto& [rank, v] : views) {
    auto age = unshown.find(rank);
    v.unshownS = age == unshown.end() ? 0 : age->second;
    v.frozen |= !v.member->file->final && v.unshownS > kLaunchWriteS + kGraceMs / 1000.0;
  }
  Stall s;
  static_cast<CommKey&>(s) = g;
  s.nRanks = g.nRanks;
  s.op = op.op;
  s.seq = op.seq;
  s.bytes = op.bytes;
  if (isPointToPoint(op.op)) {
    s.sender = op.op == "Send" ? op.holder : op.peer;
    s.receiver = op.op == "Send" ? op.peer : op.holder;
  }
  for (int rank = 0; rank < g.nRanks; ++rank) {
    auto v = views.find(rank);
    std::optional<RankDetail> d =
        v != views.end() ? detailOf(rank, v->second, op, options) : absentRank(rank, g, summaries);
    if (!d) {
      s.missing.push_back(rank);
      continue;
    }
    if (v != views.end() && v->second.member->state->oldest &&
        names(*v->second.member->state->oldest, op, rank) && (!anyLive || !v->second.frozen))
      s.stalledS = std::max(s.stalledS, v->second.waitS);
    s.ranks.push_back(std::move(*d));
  }
  // What the program itself got wrong on this communicator: another collective or size on
  // some ranks, or Send/Recv that wait on each other in a ring.
  markMismatches(&s);
  markCycle(&s, views);
  for (const RankDetail& d : s.ranks) list(&s, d);
  std::sort(s.missing.begin(), s.missing.end());
  explain(&s);
  return s;
}

}  // namespace pilot::cli::hang
