// Who to look at first and why, in one sentence a person can act on. The suspects, by what
// explains a stall best: the ranks that never launched the operation or left the communicator
// (they are elsewhere in the program), else the frozen ones (their process or host), else the
// missing ones (never created it, or their files were not gathered), else, when every rank
// launched it and none finishes, the two ends of the open network transfers with the least
// progress (the network), else nobody.
#pragma once

#include <string>
#include <vector>

#include "hang/verdict.h"

namespace pilot::cli::hang {

/// Sets stall->suspects and stall->why from its lists and rank details.
void explain(Stall* stall);

/// The detail of `rank` in the stall (its ranks ascend: a search), nullptr when none.
const RankDetail* rankDetail(const Stall& s, int rank);

/// " (pid 4242 on host-a)", "" when nothing says where the rank ran.
std::string processText(const RankDetail* d);

/// py-spy's arguments for the rank's process: " --pid 4242 on host-a", or "".
std::string pidText(const RankDetail* d);

/// "3", "3 and 5", "0-2, 4 and 6" (runs as ranges; past 12 items "... and N more").
std::string rankText(const std::vector<int>& ranks);

}  // namespace pilot::cli::hang
