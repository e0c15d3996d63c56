// `nccl-pilot hang`'s outputs: text (a block per stalled communicator: the lists, the suspects,
// why, a row per rank; then the stragglers) and one JSON object (tools/README.md has the
// schema). Notes are the caller's to print.
#pragma once

#include <string>

#include "hang/judge.h"

namespace pilot::cli::hang {

std::string reportText(const HangReport& report);
/// The stuck operation of a stall as both reports name it: "AllReduce #40, 4M bytes",
/// "Send/Recv #5 from rank 0 to rank 1, 1M bytes", or "operation unknown".
std::string stallOperationText(const Stall& stall);

/// What `hang` says when no straggler was found among `comms` communicators, of which
/// `measured` had a closed export window: "none" only where one was looked for.
std::string noStragglerText(size_t comms, size_t measured);
std::string reportJson(const HangReport& report);

}  // namespace pilot::cli::hang
