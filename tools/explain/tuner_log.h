// The ncclDebugLogger_t that the CLI hands the plugin's init: WARN lines go to stderr, INFO and
// TRACE only when asked (--verbose). NCCL's logger type carries no user data, so the settings
// are process-wide.
#pragma once

#include <string>
#include <vector>

#include "abi/nccl_common.h"

namespace pilot::cli {

struct TunerLogOptions {
  bool verbose = false;
  /// Messages containing one of these are dropped: explain prints the table's diagnostics
  /// itself and the plugin would report the same lines again.
  std::vector<std::string> suppress;
};
void configureTunerLog(TunerLogOptions options);

void tunerLog(nccl::ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
              const char* fmt, ...) __attribute__((format(printf, 5, 6)));

}  // namespace pilot::cli
