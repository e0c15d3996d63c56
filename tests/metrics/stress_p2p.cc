// Send and Recv as the stress test starts them (event_stress.h), in the groups NCCL brackets a
// kernel plan's tasks with (src/enqueue.cc hostStreamPlanTask, src/plugin/profiler.cc): on the
// application thread startEvent(Group), a startEvent(P2p) per Send and Recv with the group as
// parentGroup, their stops, the group's stop; their kernel channels later on the proxies, on the
// channel ids NCCL gives a peer's parts (ncclP2pChannelForPart: a base plus the part's index
// with its bits reversed, over the p2p channels), not 0 .. n - 1. A launch is an all-to-all (a
// Send and a Recv with every other rank, with itself too now and then, in any order), a group
// of a few operations (itself or a rank outside the communicator among the peers now and then),
// or operations outside any group.
//
// The ledger predicts each group's outcome from what the host saw: the operations that joined
// it (parsed, sampled in, the open group as parent), which of them were measured (a slot, every
// channel timed), whether the group found an entry. A group is sampled whole by its ticket,
// which the host reads from the handle: groups without Send/Recv (a plan of collectives) come
// between until the ticket is sampled in, or out. An operation outside a group is sampled by
// the communicator's count of Send/Recv, which only its own host thread moves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>

#include "event_stress.h"

namespace pilot::metrics::stress {
namespace {

using detail::GroupTable;

// Each a power of two, so an all-to-all's size per peer is one as well; with kChannelCounts
// 16 Send/Recv keys and 8 AlltoAll keys, which with the collectives' 24 stay below
// CommMonitor::kMaxKeys (and keep the exports, which render every key, short under TSan).
constexpr uint64_t kSizes[] = {4096, 1 << 20};
constexpr unsigned kChannelCounts[] = {1, 2, 4, 8};
constexpr unsigned kP2pChannelBits = 6;  // the p2p channels: MAXCHANNELS, a power of two

struct Datatype {
  const char* name;
  unsigned bytes;
};
constexpr Datatype kDatatypes[] = {{"ncclInt8", 1}, {"ncclBfloat16", 2}, {"ncclFloat32", 4}};

unsigned reverseBits(unsigned v, unsigned bits) {
  unsigned r = 0;
  for (unsigned b = 0; b < bits; ++b) r |= ((v >> b) & 1u) << (bits - 1 - b);
  return r;
}

/// The channel ids of an operation's `n` parts: a base (NCCL's depends on the peer and the
/// round) plus the part's index with its bits reversed, so that the parts spread out.
std::vector<unsigned> channelIdsOf(unsigned n, Rng& rng) {
  constexpr unsigned kMask = (1u << kP2pChannelBits) - 1;
  const unsigned base = below(rng, kMask + 1);
  std::vector<unsigned> ids(n);
  for (unsigned part = 0; part < n; ++part) {
    ids[part] = (base + reverseBits(part, kP2pChannelBits)) & kMask;
  }
  return ids;
}

/// One Send or Recv as the host plans it.
struct Op {
  Operation op = Operation::Send;
  int peer = 0;
  uint64_t bytes = 0;
  unsigned channels = 1;
  enum Parent { Open, Stale, None } parent = Open;
};

unsigned channelCount(Rng& rng) {
  return kChannelCounts[below(rng, std::size(kChannelCounts))];
}

int outsidePeer(int nRanks, Rng& rng) {
  return oneIn(rng, 2) ? -1 : nRanks + static_cast<int>(below(rng, 3));
}

/// A Send and a Recv with every other rank (and with itself now and then, as PyTorch's
/// all_to_all_single does), in any order; one in six is not quite that: a peer missing, one
/// outside the communicator, or one twice.
std::vector<Op> allToAll(int nRanks, int rank, Rng& rng) {
  const uint64_t bytes = kSizes[below(rng, std::size(kSizes))];
  const bool self = oneIn(rng, 2);
  std::vector<Op> ops;
  for (int peer = 0; peer < nRanks; ++peer) {
    if (peer == rank && !self) continue;
    ops.push_back({Operation::Send, peer, bytes, channelCount(rng)});
    ops.push_back({Operation::Recv, peer, bytes, channelCount(rng)});
  }
  if (oneIn(rng, 6)) {
    const size_t k = below(rng, ops.size());
    switch (below(rng, 3)) {
      case 0:
        ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(k));
        break;
      case 1:
        ops[k].peer = outsidePeer(nRanks, rng);
        break;
      default:
        ops[k].peer = (ops[k].peer + 1) % nRanks;
    }
  }
  std::shuffle(ops.begin(), ops.end(), rng);
  return ops;
}

int anyRank(int nRanks, Rng& rng) {
  return static_cast<int>(below(rng, static_cast<uint64_t>(nRanks)));
}

/// `count` operations with peers at random (a pipeline's: the ranks before and after this one),
/// itself among them now and then, a rank outside the communicator one time in eight.
std::vector<Op> somePeers(int nRanks, int rank, bool pipeline, unsigned count, Rng& rng) {
  std::vector<Op> ops(count);
  for (Op& o : ops) {
    o.op = oneIn(rng, 2) ? Operation::Send : Operation::Recv;
    if (oneIn(rng, 8)) {
      o.peer = outsidePeer(nRanks, rng);
    } else if (pipeline) {
      o.peer = (rank + (oneIn(rng, 2) ? 1 : nRanks - 1)) % nRanks;
    } else {
      o.peer = anyRank(nRanks, rng);
    }
    o.bytes = kSizes[below(rng, std::size(kSizes))];
    o.channels = channelCount(rng);
  }
  return ops;
}

struct P2pDescription {
  P2pEvent event;
  std::optional<Skip> defect;
  std::vector<unsigned> ids;  // the channels NCCL reports
};

P2pDescription describe(const Op& o, void* parent, Rng& rng) {
  const Datatype& t = kDatatypes[below(rng, std::size(kDatatypes))];
  P2pDescription d;
  d.event.func = o.op == Operation::Send ? "Send" : "Recv";
  d.event.datatype = t.name;
  d.event.count = o.bytes / t.bytes;
  d.event.peer = o.peer;
  d.event.nChannels = o.channels;
  d.event.group = parent;
  d.ids = channelIdsOf(o.channels, rng);
  return d;
}

/// One defect, as the collectives get them.
void withDefect(P2pDescription* d, Rng& rng) {
  switch (below(rng, 8)) {
    case 0:
      d->event.func = "SendRecv";  // a name NCCL has, not an operation measured as P2P
      d->defect = Skip::Unknown;
      break;
    case 1:
      d->event.func = nullptr;
      d->defect = Skip::Unknown;
      break;
    case 2:
      d->event.func = "AllReduce";  // a collective's name in a P2p event
      d->defect = Skip::Unknown;
      break;
    case 3:
      d->event.datatype = "Unknown";
      d->defect = Skip::Unknown;
      break;
    case 4:
      d->event.count = 0;
      d->defect = Skip::BelowMinBytes;
      break;
    case 5:
      d->event.datatype = "ncclInt8";
      d->event.count = kMinBytes - 1;
      d->defect = Skip::BelowMinBytes;
      break;
    case 6:
      d->event.nChannels = 0;
      d->ids.clear();
      d->defect = Skip::NoChannels;
      break;
    default:
      d->event.nChannels = EventPath::kMaxChannels + 1 + below(rng, 255 - EventPath::kMaxChannels);
      d->ids.clear();  // NCCL has no such channels to report
      d->defect = Skip::NoChannels;
  }
}

/// Sent to and received from every other rank exactly once (operations with itself aside).
bool isExchange(const std::vector<const Op*>& ops, int nRanks, int rank) {
  std::map<int, int> sends, recvs;
  for (const Op* o : ops) {
    if (o->peer == rank) continue;
    ++(o->op == Operation::Send ? sends : recvs)[o->peer];
  }
  const size_t others = static_cast<size_t>(nRanks - 1);
  if (others == 0 || sends.size() != others || recvs.size() != others) return false;
  for (const auto* m : {&sends, &recvs}) {
    for (const auto& [peer, n] : *m) {
      if (peer < 0 || peer >= nRanks || peer == rank || n != 1) return false;
    }
  }
  return true;
}

/// The groups of this application thread (each thread of a round is a new one).
struct HostGroups {
  void* last = nullptr;   // the last group it opened
  bool leftOpen = false;  // its stop was lost: open until the thread's next group
};
thread_local HostGroups tHost;

void* openGroup(EventPath& path, CommMonitor& comm, Launch* launch) {
  void* g = path.startGroup(comm);
  ++launch->events;
  launch->groups.push_back(g);
  tHost.last = g;
  tHost.leftOpen = false;  // the library closed it
  return g;
}

}  // namespace

Launch PointToPoint::start(EventPath& path, CommMonitor& comm, Rng& rng, CommLedger& ledger,
                           bool flood) const {
  const int nRanks = comm.identity().nRanks, rank = comm.identity().rank;
  // Half the communicators are a pipeline's: no all-to-all, and the peers measured are the
  // neighbours only, so that the peer count tells which operations noted their peer (those
  // sampled out do, the unknown ones do not: they name any rank).
  const bool pipeline = comm.identity().commId % 2 == 1;
  Launch launch;
  std::vector<Op> ops;
  bool grouped = true;
  if (flood) {
    ops = somePeers(nRanks, rank, true, 1, rng);  // a pipeline's Send or Recv: a group each
  } else if (const unsigned shape = below(rng, 10); shape < 4 && !pipeline) {
    ops = allToAll(nRanks, rank, rng);
  } else if (shape < 9) {
    ops = somePeers(nRanks, rank, pipeline, 1 + below(rng, 6), rng);
  } else {
    ops = somePeers(nRanks, rank, pipeline, 1 + below(rng, 3), rng);
    grouped = false;
    for (Op& o : ops) o.parent = Op::None;
  }

  void* group = nullptr;
  void* stale = nullptr;  // the group this thread opened before, closed since
  if (grouped) {
    // Sampled whole by its ticket: one group in ten is sampled out.
    const bool sampledIn = flood || !oneIn(rng, 10);
    for (;;) {
      void* before = tHost.last;
      void* g = openGroup(path, comm, &launch);
      if ((GroupTable::ticketOf(g) % kSample == 0) == sampledIn) {
        group = g;
        stale = before;
        break;
      }
      path.stop(g);  // a plan without Send/Recv
      ++launch.events;
    }
    if (stale != nullptr && !flood && oneIn(rng, 8)) {
      ops[below(rng, ops.size())].parent = Op::Stale;
    }
  }

  // Only this thread starts the communicator's Send/Recv: its Untracked count moves only if
  // this group found no entry, and its count of Send/Recv seen is the ledger's.
  const uint64_t untrackedBefore = comm.groups(GroupOutcome::Untracked);
  uint64_t seen = ledger.of(TaskKind::P2p).started;
  std::vector<size_t> joined;  // tasks that joined the open group
  launch.tasks.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    Op& o = ops[i];
    void* parent = o.parent == Op::Open ? group : o.parent == Op::Stale ? stale : nullptr;
    P2pDescription d = describe(o, parent, rng);
    ++seen;
    const uint64_t sequence = parent != nullptr ? GroupTable::ticketOf(parent) : seen;
    const bool sampledIn = sequence % kSample == 0;
    // A defect only where the operation is sampled in: its one reason to be skipped then
    // does not depend on the order of the library's checks.
    if (sampledIn && oneIn(rng, 12)) withDefect(&d, rng);
    if (pipeline && (!sampledIn || d.defect == Skip::Unknown) && !oneIn(rng, 8)) {
      o.peer = d.event.peer = anyRank(nRanks, rng);
    }
    Started& s = launch.tasks.emplace_back();
    s.kind = TaskKind::P2p;
    s.key = {o.op, o.bytes, kUnknownAlgorithm, kUnknownProtocol, static_cast<uint8_t>(o.channels)};
    s.handle = path.startP2p(comm, d.event);
    ++launch.events;
    planChannels(d.ids, rng, &s);
    if (d.defect == Skip::Unknown) {
      s.skip = Skip::Unknown;
      continue;  // not a Send/Recv of ours: no peer, no group
    }
    if (o.peer >= 0 && o.peer < nRanks && o.peer != rank) {
      (o.op == Operation::Send ? ledger.sentTo : ledger.receivedFrom).insert(o.peer);
    }
    if (!sampledIn) {
      s.skip = Skip::SampledOut;
      continue;
    }
    s.skip = d.defect;
    if (o.parent == Op::Open) joined.push_back(i);
  }

  const bool untracked = comm.groups(GroupOutcome::Untracked) != untrackedBefore;
  if (joined.empty()) {
    EXPECT_FALSE(untracked) << "a group no Send/Recv joined claimed an entry";
  } else if (untracked) {
    ++ledger.groupsJoined;
    ++ledger.groupsUntracked;
  } else {
    ++ledger.groupsJoined;
    // One AlltoAll when every other rank was reached both ways and every operation that
    // joined was measured; its span is the first kernel start to the last stop of them all.
    std::vector<const Op*> members;
    bool measured = true;
    uint64_t sent = 0, first = UINT64_MAX, last = 0;
    unsigned channels = 0;
    for (size_t i : joined) {
      Started& s = launch.tasks[i];
      s.inGroup = true;
      members.push_back(&ops[i]);
      measured = measured && !s.skip && s.handle != nullptr && s.timed;
      if (ops[i].op == Operation::Send && ops[i].peer != rank) sent += ops[i].bytes;
      channels = std::max(channels, ops[i].channels);
      for (const ChannelPlan& c : s.channels) {
        first = std::min(first, c.start);
        last = std::max(last, c.stop);
      }
    }
    if (measured && isExchange(members, nRanks, rank)) {
      ++ledger.alltoalls;
      const uint64_t perPeer = sent / static_cast<uint64_t>(nRanks - 1);
      ledger
          .keys[{Operation::AlltoAll, perPeer, kGroupedP2pAlgorithm, kUnknownProtocol,
                 static_cast<uint8_t>(channels)}]
          .add(last - first, perPeer);
    }
  }

  // The host's stops, as NCCL sends them: the operations', then the group's (now and then
  // twice, or lost: stopped on a proxy instead, and closed by this thread's next group). Half
  // the launches send them after the proxies have the operations, racing their kernels.
  std::vector<void*> handles;
  for (const Started& s : launch.tasks) {
    if (s.handle != nullptr) handles.push_back(s.handle);
  }
  enum { Once, Twice, Lost } groupStop = Once;
  if (grouped && oneIn(rng, 6)) groupStop = oneIn(rng, 2) ? Twice : Lost;
  auto stops = [handles, group, groupStop](EventPath& p) -> uint64_t {
    for (void* h : handles) p.stop(h);
    uint64_t events = handles.size();
    if (group != nullptr && groupStop != Lost) {
      for (int k = groupStop == Twice ? 2 : 1; k > 0; --k, ++events) p.stop(group);
    }
    return events;
  };
  const bool later = !flood && oneIn(rng, 2);
  for (Started& s : launch.tasks) (later ? s.stopPending : s.stopped) = s.handle != nullptr;
  if (later) {
    launch.afterHandOver = stops;
  } else {
    launch.events += stops(path);
  }
  if (groupStop == Lost) {
    launch.strayGroupStop = group;
    tHost.leftOpen = true;
  }
  return launch;
}

uint64_t PointToPoint::beforeFinalize(EventPath& path, CommMonitor& comm, Rng& rng,
                                      bool last) const {
  // A group whose stop was lost stays open (its entry taken) until this thread opens another;
  // now and then past its communicator's finalize, always before the thread ends.
  if (!tHost.leftOpen || (!last && oneIn(rng, 2))) return 0;
  Launch empty;
  path.stop(openGroup(path, comm, &empty));
  return empty.events + 1;
}

}  // namespace pilot::metrics::stress
