// One communicator judged: is it stalled, on which operation, and where is every rank of it.
//  - stalled: a rank still writing its state waits in an operation for stall_s (its own
//    "stalled", or its wait now: waiting_s plus its file's age), or, when no rank of it still
//    writes, a frozen one does; nothing in flight is never a stall (a long compute phase);
//  - the stuck operation: the (operation, number) most waiting ranks name as their oldest in
//    flight (a Send/Recv: that rank's, with its peer);
//  - each rank: launched the operation or not (a collective: its count of that kind; a
//    Send/Recv: the peer's count towards that rank), done, frozen (its file is overdue: the
//    process is stopped, dead or wedged), finalized (a summary says it destroyed the
//    communicator), missing (no file holds the communicator for it).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hang/comm_groups.h"
#include "hang/process_fate.h"
#include "hang/timeline.h"

namespace pilot::cli::hang {

enum class RankState {
  NotLaunched,
  Mismatched,
  Frozen,
  Stuck,
  Missing,
  Finalized,
  Done,
  Uninvolved
};
/// "not_launched", "mismatched" (it waits in another collective or size than the others),
/// "frozen", "stuck", "missing", "finalized", "done", "uninvolved" (a rank outside a stuck
/// Send/Recv that waits on nothing itself).
const char* stateName(RankState s);

struct RankDetail {
  int rank = 0;
  RankState state = RankState::Missing;
  std::string node;  ///< "" when nothing says
  int64_t pid = 0;
  bool launched = false;  ///< had launched the stuck operation (as of its last write)
  double silentS = 0;     ///< since its state file was written
  double behindS = 0;     ///< > 0: every file of its node is overdue (clock behind?)
  /// > 0: the others completed with it, this long ago, launches its file does not show
  double unshownS = 0;
  std::optional<OpRef> last;      ///< its last launched operation, age_s as of now
  double waitS = 0;               ///< how long it waits now (0: nothing in flight)
  std::vector<ProxyEntry> proxy;  ///< open proxy entries of the stuck operation
  /// Its oldest operation in flight on this communicator, age_s: how long it waits in it (a
  /// mismatch or a cycle shows here: another collective, size or peer than the stuck one).
  std::optional<OpRef> oldest;
  /// Its oldest names the stuck operation and its kernel has started a channel of it; false
  /// with the operation queued behind another on its GPU (or not launched).
  bool kernelStarted = false;
  /// What this host sees of the rank's process ("" when it runs elsewhere; see process_fate.h).
  std::string fate;
};

/// What a summary says of a rank that has no state for a communicator.
struct SummaryFacts {
  std::map<std::pair<std::string, int>, std::pair<std::string, int64_t>> finalized, seen;
};

struct Stall : CommKey {
  int nRanks = 0;
  std::string op;  ///< the stuck operation's kind
  uint64_t seq = 0, bytes = 0;
  int sender = -1, receiver = -1;  ///< a Send/Recv's two ranks; -1 for a collective
  double stalledS = 0;
  std::vector<int> notLaunched, frozen, stuck, missing, finalized;
  /// Ranks in another collective or size than the others (mismatch), ranks that wait on each
  /// other in a ring of Send/Recv (cycle).
  std::vector<int> mismatched, cycle;
  std::vector<int> suspects;
  /// Which kind of hang the why describes: "not_launched", "order", "mismatch", "p2p_cycle",
  /// "finalized", "frozen", "dead", "missing", "network", "unknown".
  std::string kind;
  std::string why;
  std::vector<RankDetail> ranks;  ///< every rank but the missing ones, ascending
};

/// A verdict lists every rank of its communicator, and a hostile file may name 65536
/// communicators of 2^20 ranks each: past this many ranks listed, a stall is named, not judged.
constexpr uint64_t kMostRanksListed = uint64_t{1} << 24;

struct JudgeOptions {
  std::optional<double> stallS;           ///< --stall-s: overrides each file's stall_s
  uint64_t mostRanks = kMostRanksListed;  ///< a larger stalled communicator is not judged
  ProcessProbe probe;                     ///< what this host sees of its own ranks' processes
};

/// The stall of `g`, or nothing when no rank of it waits past its threshold. Past
/// options.mostRanks ranks, the stall says so in `why` and lists nobody.
std::optional<Stall> judgeComm(const CommGroup& g, const Timeline& timeline,
                               const SummaryFacts& summaries, const JudgeOptions& options);

/// "AllReduce #40", "Send #12 to rank 3", "Recv #12 from rank 2".
std::string opLabel(const std::string& op, uint64_t seq, int peer);

}  // namespace pilot::cli::hang
