// What an NCCL host compiles against for net plugins v6 .. v12, declared here independently of
// plugin/abi/ from the field lists in docs/research/net.md §1.2 and NCCL's headers: a mismatch
// between the two is what these tests must catch. Only what the tests call is typed precisely;
// every function-pointer slot is present so the offsets match NCCL's.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nethost {

enum Result : int { Success = 0, SystemError = 2, InternalError = 3, InvalidArgument = 4 };
enum LogLevel : int {
  LogNone = 0,
  LogVersion = 1,
  LogWarn = 2,
  LogInfo = 3,
  LogAbort = 4,
  LogTrace = 5
};

using Logger = void (*)(LogLevel level, unsigned long flags, const char* file, int line,
                        const char* fmt, ...);
using ProfilerCallback = Result (*)(void** eHandle, int type, void* pHandle, int64_t pluginId,
                                    void* extData);
using AnyFn = void (*)();

struct PropsV6 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport, speed, port;
  float latency;
  int maxComms, maxRecvs;
};

struct VProps12 {
  int ndevs;
  int devs[8];
};

struct PropsV12 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport, regIsGlobal, forceFlush, speed, port;
  float latency;
  int maxComms, maxRecvs, netDeviceType, netDeviceVersion;
  VProps12 vProps;
  size_t maxP2pBytes, maxCollBytes;
  int maxMultiRequestSize;
  int16_t railId, planeId;
};
static_assert(sizeof(PropsV12) == 128, "NCCL 2.30 ncclNetProperties_v12_t");

struct CommConfig {
  int trafficClass;
};

/// v6 .. v9: init(logger). Slots after getProperties: listen, connect, accept, regMr,
/// regMrDmaBuf, deregMr, isend, irecv, iflush, test, closeSend, closeRecv, closeListen, then
/// (v7+) getDeviceMr, irecvConsumed, (v9+) makeVDevice.
struct NetOld {
  const char* name;
  Result (*init)(Logger logger);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, void* props);
  Result (*listen)(int dev, void* handle, void** listenComm);
  AnyFn rest[15];
};

/// v10: init(logger, profiler).
struct NetV10 {
  const char* name;
  Result (*init)(Logger logger, ProfilerCallback profiler);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, void* props);
  Result (*listen)(int dev, void* handle, void** listenComm);
  AnyFn rest[15];
};

/// v11, v12: per-communicator init with a context; finalize and setNetAttr at the end.
struct NetPerComm {
  const char* name;
  Result (*init)(void** ctx, uint64_t commId, CommConfig* config, Logger logger,
                 ProfilerCallback profiler);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, void* props);
  Result (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  Result (*connect)(void* ctx, int dev, void* handle, void** sendComm, void** sendDevComm);
  Result (*accept)(void* listenComm, void** recvComm, void** recvDevComm);
  Result (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  AnyFn regMrDmaBuf, deregMr;
  Result (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                  void** request);
  AnyFn irecv, iflush;
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* sendComm);
  Result (*closeRecv)(void* recvComm);
  Result (*closeListen)(void* listenComm);
  AnyFn getDeviceMr, irecvConsumed, makeVDevice;
  Result (*finalize)(void* ctx);
  AnyFn setNetAttr;
};

static_assert(sizeof(NetOld) == 20 * sizeof(void*), "v9 has 20 slots; v6-v8 use a prefix");
static_assert(sizeof(NetV10) == 20 * sizeof(void*), "v10 has 20 slots");
static_assert(sizeof(NetPerComm) == 22 * sizeof(void*), "v11/v12 have 22 slots");

/// Slots per version (name included), to check that none is NULL.
constexpr int slotCount(int version) {
  return version == 6 ? 17 : version <= 8 ? 19 : version <= 10 ? 20 : 22;
}

}  // namespace nethost
