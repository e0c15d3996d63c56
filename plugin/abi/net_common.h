// Our own declarations of what every net ABI version (v6 .. v12) shares: limits, pointer-type
// flags, the device-offload handle and the profiler callback type (research/net.md §1.2-1.3;
// layouts checked against NCCL 2.30.7's src/include/plugin/nccl_net.h and net_device.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "abi/nccl_common.h"

namespace pilot::nccl {

// Every offset asserted in net_v*.h assumes LP64, the only model NCCL builds for.
static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8, "NCCL plugins are LP64");

/// Bytes of the connection handle listen() fills and NCCL ships to the peer.
constexpr int NCCL_NET_HANDLE_MAXSIZE = 128;
/// Requests per comm NCCL may have in flight (8 for v6 plugins, 32 from NCCL 2.19 on).
constexpr int NCCL_NET_MAX_REQUESTS_V6 = 8;
constexpr int NCCL_NET_MAX_REQUESTS = 32;

/// ptrSupport / regMr type bits.
constexpr int NCCL_PTR_HOST = 0x1;
constexpr int NCCL_PTR_CUDA = 0x2;
constexpr int NCCL_PTR_DMABUF = 0x4;

/// Largest maxP2pBytes NCCL accepts (1 TiB); props outside (0, this] fail the connection.
constexpr uint64_t NCCL_MAX_NET_SIZE_BYTES = uint64_t{1} << 40;
/// What NCCL's shims report for versions that predate maxP2pBytes / maxCollBytes.
constexpr uint64_t MAX_NET_SIZE = uint64_t{1} << 30;
constexpr uint64_t MAX_COLLNET_SIZE = uint64_t{512} << 20;

/// trafficClass / railId / planeId / net attribute "not set".
constexpr int NCCL_NET_TRAFFIC_CLASS_UNDEF = -1;
constexpr int NCCL_NET_ID_UNDEF = -1;
constexpr int NCCL_NET_ATTR_UNDEF = -1;

/// ncclNetDeviceType (a C enum, int-sized): HOST means NCCL's proxy drives the transport.
enum ncclNetDeviceType : int {
  NCCL_NET_DEVICE_HOST = 0,
  NCCL_NET_DEVICE_UNPACK = 1,
  NCCL_NET_DEVICE_GIN_PROXY = 2,
  NCCL_NET_DEVICE_GIN_GDAKI = 3,
  NCCL_NET_DEVICE_GIN_GPI = 4,
};

/// Device-side offload handle of connect/accept (v7+). Host plugins leave it alone: NCCL passes
/// the address of a NULL pointer (or NULL itself in its GDR probe).
struct ncclNetDeviceHandle_v7_t {
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  void* handle;
  size_t size;
  int needsProxyProgress;
};
using ncclNetDeviceHandle_v8_t = ncclNetDeviceHandle_v7_t;
using ncclNetDeviceHandle_v9_t = ncclNetDeviceHandle_v7_t;
using ncclNetDeviceHandle_v10_t = ncclNetDeviceHandle_v7_t;
using ncclNetDeviceHandle_v11_t = ncclNetDeviceHandle_v7_t;
using ncclNetDeviceHandle_v12_t = ncclNetDeviceHandle_v7_t;

static_assert(sizeof(ncclNetDeviceType) == 4, "C enum");
static_assert(offsetof(ncclNetDeviceHandle_v7_t, handle) == 8);
static_assert(offsetof(ncclNetDeviceHandle_v7_t, size) == 16);
static_assert(offsetof(ncclNetDeviceHandle_v7_t, needsProxyProgress) == 24);
static_assert(sizeof(ncclNetDeviceHandle_v7_t) == 32);

/// The profiler callback v10+ init receives: (eHandle, event type, pHandle, pluginId, extData).
using ncclProfilerCallback_t = ncclResult_t (*)(void** eHandle, int type, void* pHandle,
                                                int64_t pluginId, void* extData);

}  // namespace pilot::nccl
