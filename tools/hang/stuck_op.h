// The operation a stalled communicator is stuck in, and each rank's part in it: the
// (operation, number) most waiting ranks name as their oldest in flight; a rank's launch and
// completion counts towards it (a collective: its kind; a Send/Recv: the pair's counts towards
// each other, a Send meeting a Recv); and what the others' counts prove about a rank's state:
// no rank completes an operation that another never launched, so a rank whose file shows fewer
// launches than another's completions wrote that file before those launches.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "hang/comm_groups.h"

namespace pilot::cli::hang {

/// One member of a communicator as of the reference time.
struct View {
  const Member* member = nullptr;
  bool frozen = false;
  double silentS = 0;   ///< since its file was written
  double behindS = 0;   ///< its node's every file is overdue by this much
  double waitS = 0;     ///< waiting_s carried to now; 0 with nothing in flight
  bool waits = false;   ///< waits past its threshold
  double unshownS = 0;  ///< > 0: the others completed with it, this long ago, launches its
                        ///< file does not show
};

struct StuckOp {
  std::string op;
  uint64_t seq = 0, bytes = 0;
  int holder = -1, peer = -1;  ///< a Send/Recv: the waiting rank and its peer
  bool known = false;
};

bool isPointToPoint(const std::string& op);

/// The (operation, number) most waiting ranks name (frozen ones only when none is live); ties:
/// the longest wait, then the lowest number.
StuckOp stuckOpOf(const std::map<int, View>& views, bool anyLive);

/// Whether `o`, the oldest in flight of `rank`, is the stuck operation.
bool names(const InFlight& o, const StuckOp& s, int rank);

/// `rank`'s counts towards the stuck operation; nullopt: it is no party to it.
std::optional<Counts> sideOf(const CommState& c, int rank, const StuckOp& s);

/// For every member: at least how long ago another party completed an operation its file does
/// not show it launching (the other's last completion, carried to now); 0 when its file shows
/// them all. In O(n log n): the others' completion counts sorted once, not compared pairwise.
std::map<int, double> unshownAgesS(const std::map<int, View>& views, const StuckOp& s);

}  // namespace pilot::cli::hang
