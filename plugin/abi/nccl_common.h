// Our own declarations of the NCCL types that every plugin ABI version shares, field for field
// as NCCL defines them (research/tuner.md §1; values checked against NCCL 2.21 .. 2.30).
// Only plugin/ includes this: the layers below never see NCCL's ABI.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pilot::nccl {

/// ncclResult_t: a C enum, int-sized.
enum ncclResult_t : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};

/// ncclDebugLogLevel.
enum ncclDebugLogLevel : int {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5,
};

/// ncclDebugLogger_t: (level, subsystem flags, file, line, printf format, ...).
using ncclDebugLogger_t = void (*)(ncclDebugLogLevel level, unsigned long flags, const char* file,
                                   int line, const char* fmt, ...);

/// ncclFunc_t: indices 0..4 are the same in every release we serve; later values (SendRecv,
/// AlltoAll, ...) differ between releases and are never tuned.
enum ncclFunc_t : int {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
};

}  // namespace pilot::nccl
