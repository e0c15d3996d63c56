// The net plugin's per-process part: the topology work that runs once, at the first init of any
// ABI version, and the NCCL logger later entry points log through.
#pragma once

#include "abi/nccl_common.h"
#include "logger_bridge.h"

namespace pilot::plugin {

constexpr const char* kNetPrefix = "NET/Pilot";

/// Runs the topology work (and announces the transport mode) the first time it is called in
/// this process; later calls return at once. Concurrent first calls wait for the one that runs,
/// so every communicator's init returns after NCCL_TOPO_FILE is in place. Never throws. NCCL
/// serialises its own inits (netPluginMutex), but other hosts need not.
void startNetProcess(nccl::ncclDebugLogger_t logFn) noexcept;

/// A logger onto the NCCL logger of the first init (discards before any init).
NcclLogger netLogger() noexcept;

}  // namespace pilot::plugin
