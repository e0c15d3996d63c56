// What this host can tell of a rank's process: a frozen rank's state file stopped being
// rewritten, which a dead process and a stopped one both explain; a rank that never launched
// the operation has a stack to look at only while it lives. Where the rank ran on this host
// (its node is this host's name), /proc says which: gone (or another process now holds its
// pid: one started after the rank's last write), a zombie (dead, not yet reaped), stopped
// (SIGSTOP, a debugger), in uninterruptible sleep (the kernel, a driver, a GPU), or alive.
// Elsewhere it cannot tell, and says nothing.
#pragma once

#include <cstdint>
#include <string>

namespace pilot::cli::hang {

enum class Fate { Unknown, Dead, Stopped, DiskWait, Alive };

/// "" (unknown), "dead", "stopped", "disk_wait", "alive".
const char* fateName(Fate f);

struct ProcessProbe {
  std::string hostName;  ///< this host's name as a state file writes its node; "" probes nothing
  std::string procRoot = "/proc";
};

/// This host's name, as the profiler writes its node (gethostname).
std::string thisHostName();

/// The fate of process `pid` of `node`, whose state file was last written at `writtenMs`
/// (unix ms, this host's clock): Unknown unless `node` is this host.
Fate fateOf(const ProcessProbe& probe, const std::string& node, int64_t pid, int64_t writtenMs);

}  // namespace pilot::cli::hang
