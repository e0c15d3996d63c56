// NVML's C entry points as plain function pointers: nvml.cc fills them from a dlopen'ed
// libnvidia-ml.so.1, tests from an in-process fake. Declared by hand (no nvml.h needed to build).
#pragma once

#include <memory>

#include "pilot/topology/sources.h"

namespace pilot::topology::detail {

struct NvmlDevice;       ///< what nvmlDevice_t points to (opaque)
using NvmlReturn = int;  ///< nvmlReturn_t; 0 = NVML_SUCCESS

/// nvmlPciInfo_t as NVML's public header lays it out since the v2 bus-id calls.
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};

struct NvmlApi {
  NvmlReturn (*init)() = nullptr;      ///< nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;  ///< nvmlShutdown
  NvmlReturn (*deviceByBusId)(const char*, NvmlDevice**) = nullptr;
  NvmlReturn (*computeCapability)(NvmlDevice*, int*, int*) = nullptr;
  NvmlReturn (*name)(NvmlDevice*, char*, unsigned) = nullptr;
  /// Optional (null = no NVLink detection). State: 1 = NVML_FEATURE_ENABLED.
  NvmlReturn (*nvlinkState)(NvmlDevice*, unsigned, int*) = nullptr;
  NvmlReturn (*nvlinkRemotePci)(NvmlDevice*, unsigned, NvmlPciInfo*) = nullptr;
};

/// A GpuInfoSource over an NVML that init() already succeeded on; calls shutdown() when destroyed.
std::unique_ptr<GpuInfoSource> makeNvmlSource(const NvmlApi& api);

}  // namespace pilot::topology::detail
