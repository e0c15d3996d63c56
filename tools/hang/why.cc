#include "hang/why.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "pilot/core/text.h"

namespace pilot::cli::hang {
namespace {

std::string num(double v) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

std::string commText(const Stall& s) {
  return "comm " + (s.commName.empty() ? s.comm : s.commName);
}

/// The stuck operation as `rank` runs it: a collective's name, or its side of the Send/Recv.
std::string opFor(const Stall& s, int rank) {
  if (s.sender < 0) return opLabel(s.op, s.seq, -1);
  if (rank == s.receiver) return opLabel("Recv", s.seq, s.sender);
  return opLabel("Send", s.seq, s.receiver);
}

/// What the others wait in: "the others wait in AllReduce #40", "rank 2 waits in Send #12 ...".
std::string waitingIn(const Stall& s, int suspect) {
  if (s.sender < 0) return "the others wait in " + opLabel(s.op, s.seq, -1);
  const int other = suspect == s.sender ? s.receiver : s.sender;
  return "rank " + std::to_string(other) + " waits in " + opFor(s, other);
}

const RankDetail* detail(const Stall& s, int rank) {
  return rankDetail(s, rank);
}

std::string lastText(const RankDetail* d) {
  if (d == nullptr || !d->last) return "it had launched nothing there";
  return "its last operation there was " + opLabel(d->last->op, d->last->seq, d->last->peer) +
         (d->last->ageS >= 0 ? ", " + num(d->last->ageS) + " s ago" : "");
}

/// Every rank of the communicator ran on this host and every process is gone: the job was
/// killed as a whole (after it hung), which explains nobody's part in the hang.
bool everyProcessGone(const Stall& s) {
  return s.ranks.size() >= 2 && std::all_of(s.ranks.begin(), s.ranks.end(),
                                            [](const RankDetail& d) { return d.fate == "dead"; });
}

/// The fate every one of `ranks` shares ("" when this host cannot tell for one of them, they
/// differ, or the whole job is gone).
std::string commonFate(const Stall& s, const std::vector<int>& ranks) {
  if (everyProcessGone(s)) return "";
  std::string fate;
  for (int r : ranks) {
    const RankDetail* d = detail(s, r);
    if (d == nullptr || d->fate.empty() || (!fate.empty() && d->fate != fate)) return "";
    fate = d->fate;
  }
  return fate;
}

/// "8 MiB" (text::formatBytes writes "8M").
std::string bytesText(uint64_t bytes) {
  std::string b = text::formatBytes(bytes);
  const char unit = b.empty() ? ' ' : b.back();
  if (unit == 'K' || unit == 'M' || unit == 'G' || unit == 'T') {
    b.pop_back();
    return b + " " + unit + "iB";
  }
  return b + " B";
}

std::string sized(const OpRef& o) {
  return opLabel(o.op, o.seq, o.peer) + " (" + bytesText(o.bytes) + ")";
}

std::string mismatch(const Stall& s) {
  const int first = s.mismatched.front();
  const RankDetail* d = detail(s, first);
  const OpRef theirs = d != nullptr && d->oldest ? *d->oldest : OpRef{};
  const OpRef stuck{s.op, s.seq, s.bytes, -1, 0};
  const bool sizeOnly = theirs.op == s.op && theirs.seq == s.seq;
  const bool one = s.mismatched.size() == 1;
  std::string why = one ? "rank " + std::to_string(first) + " waits in "
                        : "ranks " + rankText(s.mismatched) + " wait in other calls (rank " +
                              std::to_string(first) + ": ";
  why += sizeOnly ? opLabel(theirs.op, theirs.seq, -1) + " with " + bytesText(theirs.bytes)
                  : sized(theirs);
  if (!one) why += ")";
  const std::string others =
      s.stuck.size() == 1 ? "the other rank" : "the other " + std::to_string(s.stuck.size());
  why += " on " + commText(s) + " where " + others + " wait" + (s.stuck.size() == 1 ? "s" : "") +
         " in " +
         (sizeOnly ? opLabel(s.op, s.seq, -1) + " with " + bytesText(s.bytes) : sized(stuck));
  why += sizeOnly ? ": a size mismatch in the program"
                  : ": the ranks called different collectives, a mismatch in the program";
  return why +
         " (NCCL pairs calls by their order alone, so each side waits for the other) — find "
         "where " +
         (one ? "rank " + std::to_string(first) + "'s" : "their") +
         " code path differs (TORCH_DISTRIBUTED_DEBUG=DETAIL checks each collective's kind and "
         "size across ranks)";
}

std::string cycle(const Stall& s) {
  std::string edges;
  size_t shown = 0;
  for (int r : s.cycle) {
    const RankDetail* d = detail(s, r);
    if (d == nullptr || !d->oldest) continue;
    if (shown == 4) {
      edges += ", ...";
      break;
    }
    edges += std::string(shown++ ? ", " : "") + "rank " + std::to_string(r) + " waits in " +
             opLabel(d->oldest->op, d->oldest->seq, d->oldest->peer);
  }
  return "ranks " + rankText(s.cycle) + " wait on each other on " + commText(s) + " (" + edges +
         "): none has posted the side its peer waits for — a Send/Recv order cycle in the "
         "program; post one side's sends first, or put both in one group (batch_isend_irecv, "
         "ncclGroupStart/End)";
}

std::string notLaunched(const Stall& s) {
  const std::vector<int>& ranks = s.notLaunched;
  const int first = ranks.front();
  const RankDetail* d = detail(s, first);
  std::string why =
      ranks.size() == 1 ? "rank " + std::to_string(first) : "ranks " + rankText(ranks);
  why += " never launched " + opFor(s, first) + " on " + commText(s);
  if (s.sender >= 0) why += " (" + waitingIn(s, first) + ")";
  if (commonFate(s, ranks) == "dead") {
    return why + ": " +
           (ranks.size() == 1 ? "its process" + processText(d) + " is" : "their processes are") +
           " gone (dead: killed, crashed or OOM-killed before it launched it; " + lastText(d) +
           ") — read " + (ranks.size() == 1 ? "its" : "their") + " log and the host's dmesg";
  }
  if (everyProcessGone(s)) {
    // No process is left to dump: its log says where it was.
    why += ": " + lastText(d) + "; " + (ranks.size() == 1 ? "it was" : "they were") +
           " elsewhere in the program (a data loader, a checkpoint, an exception) — " +
           (ranks.size() == 1 ? "its" : "their") + " log says where";
  } else if (ranks.size() == 1) {
    why += ": " + lastText(d) +
           "; it is elsewhere in the program (a data loader, a checkpoint, "
           "an exception) — look at rank " +
           std::to_string(first) + "'s stack (py-spy dump" + pidText(d) + ")";
  } else {
    why += " (rank " + std::to_string(first) + ": " + lastText(d) +
           "): they are elsewhere in the program (a data loader, a checkpoint, an exception) — "
           "look at their stacks (py-spy dump)";
  }
  if (!s.finalized.empty()) {
    why += std::string("; ") + (s.finalized.size() == 1 ? "rank " : "ranks ") +
           rankText(s.finalized) + " finalized the communicator";
  }
  return why;
}

std::string finalized(const Stall& s) {
  const std::string who = (s.finalized.size() == 1 ? "rank " : "ranks ") + rankText(s.finalized);
  return who + " finalized (destroyed) " + commText(s) + " while " +
         waitingIn(s, s.finalized.front()) +
         " on it: " + (s.finalized.size() == 1 ? "it" : "they") +
         " left the communicator early — find out why in " + who +
         "'s log (an exception, an early exit, a destroy_process_group the others did not reach)";
}

std::string frozen(const Stall& s) {
  const int first = s.frozen.front();
  static const RankDetail kNone;
  const RankDetail* d = detail(s, first) ? detail(s, first) : &kNone;
  const bool one = s.frozen.size() == 1;
  std::string why = one ? "rank " + std::to_string(first) + " stopped refreshing its state "
                        : "ranks " + rankText(s.frozen) + " stopped refreshing their state (rank " +
                              std::to_string(first) + "'s ";
  why += num(d->silentS) + " s ago";
  if (d->behindS > 0) why += " (or " + d->node + "'s clock is " + num(d->behindS) + " s behind)";
  if (!one) why += ")";
  why += " while " + waitingIn(s, first) + " on " + commText(s);
  const std::string who = one ? "it" : "rank " + std::to_string(first);
  if (d->unshownS > 0) {
    // Its file was written before launches the others completed with it: stopped since.
    why += " (" + who + " wrote its state before operations the others completed with it " +
           num(d->unshownS) + " s ago)";
  } else if (!s.op.empty()) {
    why += " (" + who + (d->launched ? " had launched it)" : " had not launched it)");
  }
  const std::string fate = commonFate(s, s.frozen);
  if (fate == "dead") {
    return why + ": " + (one ? "its process" + processText(d) + " is" : "their processes are") +
           " gone (dead: killed, crashed or OOM-killed) — read " + (one ? "its" : "their") +
           " log and the host's dmesg";
  }
  if (fate == "stopped") {
    return why + ": " + (one ? "its process" + processText(d) + " is" : "their processes are") +
           " stopped (state T: SIGSTOP, a debugger, a suspended job step) — find who stopped " +
           (one ? "it" : "them") + ", or kill -CONT";
  }
  if (fate == "disk_wait") {
    return why + ": " + (one ? "its process" + processText(d) + " is" : "their processes are") +
           " in uninterruptible sleep (state D: blocked in the kernel by a driver, a filesystem "
           "or a GPU hang) — read the host's dmesg";
  }
  if (fate == "alive") {
    return why + ": " + (one ? "its process" + processText(d) + " is" : "their processes are") +
           " alive but no longer refresh their state (wedged) — look at the stack (py-spy dump" +
           (one ? pidText(d) : std::string()) + ")";
  }
  if (one) {
    return why +
           ": dead or frozen (the process stopped, died or is wedged, or its host is gone; "
           "this host cannot see it) — check rank " +
           std::to_string(first) + "'s process" + processText(d) + " and host";
  }
  std::set<std::string> hosts;
  for (int r : s.frozen)
    if (const RankDetail* f = detail(s, r)) hosts.insert(f->node);
  std::string list;
  for (const std::string& h : hosts) list += (list.empty() ? "" : ", ") + h;
  return why +
         ": dead or frozen (the processes stopped, died or are wedged, or their hosts are "
         "gone) — check their processes and hosts (" +
         list + ")";
}

std::string missing(const Stall& s) {
  const bool one = s.missing.size() == 1;
  return (one ? "rank " : "ranks ") + rankText(s.missing) + " of " + commText(s) +
         (one ? " wrote no state and no summary says it finalized it, while "
              : " wrote no state and no summary says they finalized it, while ") +
         waitingIn(s, s.missing.front()) + ": " + (one ? "it" : "they") +
         " never created the communicator, or the files are not among the inputs — check that " +
         (one ? "rank" : "those ranks") + " started and gather every node's NCCL_PILOT_METRICS_DIR";
}

struct OpenTransfer {
  int rank = 0;
  ProxyEntry entry;
  double progress = -1;  ///< steps of their total; -1: unknown (ProxyStep events off)
};

/// The open transfers of the stuck operation with the least progress. Without step counts
/// (NCCL_PILOT_METRICS_PROXY=ops) every open one: the finished ones are closed, so the open
/// ones are what the operation still waits for.
std::vector<OpenTransfer> leastProgress(const Stall& s) {
  std::vector<OpenTransfer> all;
  for (const RankDetail& d : s.ranks) {
    if (d.state != RankState::Stuck) continue;
    for (const ProxyEntry& e : d.proxy) {
      const bool known = e.steps >= 0 && e.of > 0;
      all.push_back(
          {d.rank, e, known ? static_cast<double>(e.steps) / static_cast<double>(e.of) : -1});
    }
  }
  double least = -1;
  for (const OpenTransfer& t : all)
    if (t.progress >= 0 && (least < 0 || t.progress < least)) least = t.progress;
  if (least < 0) return all;
  all.erase(std::remove_if(
                all.begin(), all.end(),
                [&](const OpenTransfer& t) { return t.progress < 0 || t.progress > least + 1e-9; }),
            all.end());
  return all;
}

std::string nodeOf(const Stall& s, int rank) {
  const RankDetail* d = detail(s, rank);
  return d != nullptr && !d->node.empty() ? " (" + d->node + ")" : "";
}

std::string network(Stall* s) {
  const std::string launched =
      s->sender < 0
          ? "every rank launched " + opLabel(s->op, s->seq, -1) + " on " + commText(*s)
          : "both sides of " + opFor(*s, s->sender) + " on " + commText(*s) + " were launched";
  const std::vector<OpenTransfer> least = leastProgress(*s);
  if (least.empty()) {
    return launched +
           " and none finishes: the data stopped moving (a network path or a GPU) — "
           "run with NCCL_PILOT_METRICS_PROXY=steps to name the peer and channel, and check the "
           "NICs and links (ibstat, dmesg)";
  }
  std::set<int> ends;
  for (const OpenTransfer& t : least) ends.insert({t.rank, t.entry.peer});
  s->suspects.assign(ends.begin(), ends.end());
  const OpenTransfer& t = least.front();
  const bool known = t.progress >= 0;
  std::string why =
      launched +
      (known ? " and none finishes: the least progress is rank "
             : " and none finishes: still open is rank ") +
      std::to_string(t.rank) + (t.entry.send ? " sending to" : " receiving from") + " rank " +
      std::to_string(t.entry.peer) + " on channel " + std::to_string(t.entry.channel) +
      (known
           ? " (" + std::to_string(t.entry.steps) + " of " + std::to_string(t.entry.of) + " steps)"
           : "");
  if (least.size() > 1) {
    why += " and " + std::to_string(least.size() - 1) +
           (known ? " more transfer(s) as low" : " more transfer(s)");
  }
  return why + " — check the network between rank " + std::to_string(t.rank) + nodeOf(*s, t.rank) +
         " and rank " + std::to_string(t.entry.peer) + nodeOf(*s, t.entry.peer) +
         ": NICs, cables, switch ports (ibstat, ibdiagnet; NCCL_DEBUG=INFO's NET lines)";
}

}  // namespace

const RankDetail* rankDetail(const Stall& s, int rank) {
  // s.ranks ascends by rank: a search, not a scan (a verdict looks up every frozen rank).
  auto it = std::lower_bound(s.ranks.begin(), s.ranks.end(), rank,
                             [](const RankDetail& d, int r) { return d.rank < r; });
  return it != s.ranks.end() && it->rank == rank ? &*it : nullptr;
}

std::string processText(const RankDetail* d) {
  if (d == nullptr || d->node.empty()) return "";
  return " (pid " + std::to_string(d->pid) + " on " + d->node + ")";
}

std::string pidText(const RankDetail* d) {
  if (d == nullptr || d->node.empty()) return "";
  return " --pid " + std::to_string(d->pid) + " on " + d->node;
}

std::string rankText(const std::vector<int>& ranks) {
  std::vector<std::string> items;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    items.push_back(j - i >= 2 ? std::to_string(ranks[i]) + "-" + std::to_string(ranks[j])
                               : std::to_string(ranks[i]));
    if (j - i == 1) items.push_back(std::to_string(ranks[j]));
    i = j + 1;
  }
  constexpr size_t kMost = 12;
  std::string out;
  const size_t shown = std::min(items.size(), kMost);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out += (i + 1 == shown && items.size() <= kMost) ? " and " : ", ";
    out += items[i];
  }
  if (items.size() > kMost) out += " and " + std::to_string(items.size() - kMost) + " more";
  return out;
}

void explain(Stall* s) {
  s->suspects.clear();
  if (!s->cycle.empty()) {
    s->suspects = s->cycle;
    s->kind = "p2p_cycle";
    s->why = cycle(*s);
  } else if (!s->mismatched.empty()) {
    s->suspects = s->mismatched;
    s->kind = "mismatch";
    s->why = mismatch(*s);
  } else if (!s->notLaunched.empty() || !s->finalized.empty()) {
    std::set<int> left(s->notLaunched.begin(), s->notLaunched.end());
    left.insert(s->finalized.begin(), s->finalized.end());
    s->suspects.assign(left.begin(), left.end());
    s->kind = s->notLaunched.empty()                     ? "finalized"
              : commonFate(*s, s->notLaunched) == "dead" ? "dead"
                                                         : "not_launched";
    s->why = s->notLaunched.empty() ? finalized(*s) : notLaunched(*s);
  } else if (!s->frozen.empty()) {
    s->suspects = s->frozen;
    s->kind = commonFate(*s, s->frozen) == "dead" ? "dead" : "frozen";
    s->why = frozen(*s);
  } else if (!s->missing.empty()) {
    s->suspects = s->missing;
    s->kind = "missing";
    s->why = missing(*s);
  } else if (s->op.empty()) {
    s->kind = "unknown";
    s->why = "ranks of " + commText(*s) +
             " wait past their threshold, but their files name no "
             "operation in flight";
  } else {
    s->kind = "network";
    s->why = network(s);
  }
  if (everyProcessGone(*s)) {
    s->why +=
        "; every rank's process is gone since: the job was killed as a whole after it hung "
        "(judged as of its last writes)";
  }
}

}  // namespace pilot::cli::hang
