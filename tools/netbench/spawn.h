// The default mode's peer: this same executable, started again (fork + exec of
// /proc/self/exe) as the receiving side, inheriting the bootstrap listening socket so no port
// can be taken in between. It dies with its parent (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "pilot/core/result.h"

namespace pilot::cli {

/// Starts `/proc/self/exe args...` with `inheritFd` left open across exec and stdout pointing
/// at stderr (stdout is the parent's data).
Expected<pid_t> spawnPeer(const std::vector<std::string>& args, int inheritFd);

/// Waits up to `timeoutS` for the peer, then kills it. Empty when it exited with status 0,
/// else what happened ("exited with status 1", "died of signal 11 (Segmentation fault)").
std::string reapPeer(pid_t pid, double timeoutS);

}  // namespace pilot::cli
