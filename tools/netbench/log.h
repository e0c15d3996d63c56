// The logger netbench hands the net plugin's init, and netbench's own stderr messages. NCCL's
// logger type carries no user data, so the settings are process-wide. A spawned peer tags
// its lines so they read apart from the parent's on the shared stderr.
#pragma once

#include <string>

#include "abi/nccl_common.h"

namespace pilot::cli {

struct NetbenchLogOptions {
  bool verbose = false;  ///< also the plugin's INFO (and TRACE) lines
  std::string tag;       ///< e.g. "peer" -> "[peer] warning: ..."
};
void configureNetbenchLog(NetbenchLogOptions options);

void netbenchLog(nccl::ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                 const char* fmt, ...) __attribute__((format(printf, 5, 6)));

/// "warning: MESSAGE" / "info: MESSAGE" (info only when verbose).
void netbenchWarn(const std::string& message);
void netbenchInfo(const std::string& message);

}  // namespace pilot::cli
