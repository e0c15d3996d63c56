// Slow, not hung: per communicator, the rank the others wait for in the last export window,
// by monitor's clock-free late-arriver method (monitor/late_arriver.h) on each rank's window
// keys (mean kernel time per operation and size), with the time the others lost per operation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hang/comm_groups.h"
#include "hang/timeline.h"
#include "monitor/late_arriver.h"

namespace pilot::cli::hang {

struct Straggler : CommKey, monitor::LateVote {};

/// The straggler of `g` from the windows of its ranks still writing; nullopt when there is
/// none (no group on two ranks, or no rank the shortest in most of them beyond the noise).
std::optional<Straggler> stragglerOf(const CommGroup& g, const Timeline& timeline);

/// Some rank of `g` still writing has a closed export window with calls in it: a straggler was
/// looked for (before the first window closes, "no straggler" would say nothing).
bool measuredWindow(const CommGroup& g, const Timeline& timeline);

}  // namespace pilot::cli::hang
