// What every profiler ABI version shares (NCCL's src/include/plugin/nccl_profiler.h, checked
// against NCCL 2.27 .. 2.30): the event type bits a plugin asks for in init's activation mask,
// and the event states recordEventState reports.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "abi/nccl_common.h"

namespace pilot::nccl {

/// ncclPid_t on Linux (NCCL's os/linux.h).
using ncclPid_t = pid_t;

enum : uint64_t {
  ncclProfileGroup = 1u << 0,
  ncclProfileColl = 1u << 1,
  ncclProfileP2p = 1u << 2,
  ncclProfileProxyOp = 1u << 3,
  ncclProfileProxyStep = 1u << 4,
  ncclProfileProxyCtrl = 1u << 5,
  ncclProfileKernelCh = 1u << 6,
  ncclProfileNetPlugin = 1u << 7,
  ncclProfileGroupApi = 1u << 8,       // v5
  ncclProfileCollApi = 1u << 9,        // v5
  ncclProfileP2pApi = 1u << 10,        // v5
  ncclProfileKernelLaunch = 1u << 11,  // v5
  ncclProfileCeColl = 1u << 12,        // v6
  ncclProfileCeSync = 1u << 13,        // v6
  ncclProfileCeBatch = 1u << 14,       // v6
};

/// ncclProfilerEventState_t (an int-sized C enum); only the value we act on is named.
using ncclProfilerEventState_t = int;
constexpr ncclProfilerEventState_t ncclProfilerKernelChStop = 22;

}  // namespace pilot::nccl
