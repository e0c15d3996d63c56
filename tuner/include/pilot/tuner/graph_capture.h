// Communicators that captured a collective into a CUDA graph. A captured collective replays
// the decision made at its capture on every launch of the graph, so an exploration there would
// run the alternative for the rest of the job: exploration stops on such a communicator.
//
// The tuner is not told about graphs; the profiler is (profiler ABI v5+: the CollApi event's
// graphCaptured, sent at the API call, before NCCL asks the tuner at the group's end). So the
// profiler notes the communicator here and the tuner reads it. Both see this only when they are
// the same loaded copy of the library (NCCL_TUNER_PLUGIN and NCCL_PROFILER_PLUGIN unset or
// naming the same file); every rank notes the same collective, so the schedule stays alike.
#pragma once

#include <cstdint>

namespace pilot::tuner {

/// Lock-free; a table of 256 communicators, past which every communicator counts as captured.
void noteGraphCapture(uint64_t commId) noexcept;
bool graphCaptured(uint64_t commId) noexcept;

}  // namespace pilot::tuner
