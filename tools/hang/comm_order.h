// The classic deadlock across communicators: most ranks call AllReduce on tp then on dp, one
// calls dp first. Each communicator's stall then waits for ranks that are in the other one:
// with blocking calls they never launched it; with enqueued ones (PyTorch) they launched it
// but its kernel queues behind the other on their GPU (no channel of it started). Seen from
// one communicator alone this is "never launched" or "the data stopped moving"; seen from the
// processes that hold both, it is an order: the ranks that run them the other way round (the
// fewer) are the suspects of both stalls.
#pragma once

#include <vector>

#include "hang/verdict.h"

namespace pilot::cli::hang {

/// Rewrites the suspects, kind ("order") and why of every pair of stalls whose ranks run them
/// in opposite orders. Linear in the ranks listed (a process counts at most 16 stalls).
void findOrderInversions(std::vector<Stall>* stalls);

}  // namespace pilot::cli::hang
