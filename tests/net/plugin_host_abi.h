// What a host (NCCL, or this test's fake NCCL) compiles against for the net ABI v6 .. v12,
// declared here from docs/research/net.md §1.2 and NCCL's headers, independently of
// plugin/abi/: a mismatch between the two is what the end-to-end tests must catch.
#pragma once

#include <cstddef>
#include <cstdint>

namespace plughost {

using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt,
                        ...);
using Profiler = int (*)(void** eHandle, int type, void* pHandle, int64_t pluginId, void* data);

struct PropsV6 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport, speed, port;
  float latency;
  int maxComms, maxRecvs;
};
struct PropsV7 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport, speed, port;
  float latency;
  int maxComms, maxRecvs, netDeviceType, netDeviceVersion;
};
struct PropsV8 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport, regIsGlobal, speed, port;
  float latency;
  int maxComms, maxRecvs, netDeviceType, netDeviceVersion;
};
template <int DevsPerNic>
struct VProps {
  int ndevs;
  int devs[DevsPerNic];
};
/// v9 and v10 share it; v11 adds maxMultiRequestSize; v12 has 8 devices per vNIC and rail ids.
struct PropsV9 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport, regIsGlobal, forceFlush, speed, port;
  float latency;
  int maxComms, maxRecvs, netDeviceType, netDeviceVersion;
  VProps<4> vProps;
  size_t maxP2pBytes, maxCollBytes;
};
struct PropsV11 {
  PropsV9 v9;
  int maxMultiRequestSize;
};
struct PropsV12 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport, regIsGlobal, forceFlush, speed, port;
  float latency;
  int maxComms, maxRecvs, netDeviceType, netDeviceVersion;
  VProps<8> vProps;
  size_t maxP2pBytes, maxCollBytes;
  int maxMultiRequestSize;
  int16_t railId, planeId;
};
static_assert(sizeof(PropsV6) == 48 && sizeof(PropsV9) == 104 && sizeof(PropsV11) == 112 &&
                  sizeof(PropsV12) == 128,
              "NCCL's property layouts");

using RegMrDmaBuf = int (*)(void*, void*, size_t, int, uint64_t, int, void**);
using DeregMr = int (*)(void*, void*);
using Iflush = int (*)(void*, int, void**, int*, void**, void**);
using Test = int (*)(void*, int*, int*);
using Close = int (*)(void*);
using GetDeviceMr = int (*)(void*, void*, void**);
using IrecvConsumed = int (*)(void*, int, void*);
using AnyFn = void (*)();

/// v6 .. v8: int sizes on the data path (v6, v7 regMr too); v7 adds the device handles.
template <typename Props, typename RegSize, bool DeviceHandles>
struct NetOld;
template <typename Props, typename RegSize>
struct NetOld<Props, RegSize, false> {
  const char* name;
  int (*init)(Logger);
  int (*devices)(int*);
  int (*getProperties)(int, Props*);
  int (*listen)(int, void*, void**);
  int (*connect)(int, void*, void**);
  int (*accept)(void*, void**);
  int (*regMr)(void*, void*, RegSize, int, void**);
  RegMrDmaBuf regMrDmaBuf;
  DeregMr deregMr;
  int (*isend)(void*, void*, int, int, void*, void**);
  int (*irecv)(void*, int, void**, int*, int*, void**, void**);
  Iflush iflush;
  Test test;
  Close closeSend, closeRecv, closeListen;
};
template <typename Props, typename RegSize>
struct NetOld<Props, RegSize, true> {
  const char* name;
  int (*init)(Logger);
  int (*devices)(int*);
  int (*getProperties)(int, Props*);
  int (*listen)(int, void*, void**);
  int (*connect)(int, void*, void**, void**);
  int (*accept)(void*, void**, void**);
  int (*regMr)(void*, void*, RegSize, int, void**);
  RegMrDmaBuf regMrDmaBuf;
  DeregMr deregMr;
  int (*isend)(void*, void*, int, int, void*, void**);
  int (*irecv)(void*, int, void**, int*, int*, void**, void**);
  Iflush iflush;
  Test test;
  Close closeSend, closeRecv, closeListen;
  GetDeviceMr getDeviceMr;
  IrecvConsumed irecvConsumed;
};
using NetV6 = NetOld<PropsV6, int, false>;
using NetV7 = NetOld<PropsV7, int, true>;
using NetV8 = NetOld<PropsV8, size_t, true>;

struct NetV9 {
  const char* name;
  int (*init)(Logger);
  int (*devices)(int*);
  int (*getProperties)(int, PropsV9*);
  int (*listen)(int, void*, void**);
  int (*connect)(int, void*, void**, void**);
  int (*accept)(void*, void**, void**);
  int (*regMr)(void*, void*, size_t, int, void**);
  RegMrDmaBuf regMrDmaBuf;
  DeregMr deregMr;
  int (*isend)(void*, void*, size_t, int, void*, void**);
  int (*irecv)(void*, int, void**, size_t*, int*, void**, void**);
  Iflush iflush;
  Test test;
  Close closeSend, closeRecv, closeListen;
  GetDeviceMr getDeviceMr;
  IrecvConsumed irecvConsumed;
  AnyFn makeVDevice;
};

struct CommConfig {
  int trafficClass;
};

struct NetV10 {
  const char* name;
  int (*init)(Logger, Profiler);
  int (*devices)(int*);
  int (*getProperties)(int, PropsV9*);
  int (*listen)(int, void*, void**);
  int (*connect)(int, CommConfig*, void*, void**, void**);
  int (*accept)(void*, void**, void**);
  int (*regMr)(void*, void*, size_t, int, void**);
  RegMrDmaBuf regMrDmaBuf;
  DeregMr deregMr;
  int (*isend)(void*, void*, size_t, int, void*, void*, void**);
  int (*irecv)(void*, int, void**, size_t*, int*, void**, void**, void**);
  Iflush iflush;
  Test test;
  Close closeSend, closeRecv, closeListen;
  GetDeviceMr getDeviceMr;
  IrecvConsumed irecvConsumed;
  AnyFn makeVDevice;
};

/// v11 and v12 (only the property struct differs).
template <typename Props>
struct NetPerComm {
  const char* name;
  int (*init)(void**, uint64_t, CommConfig*, Logger, Profiler);
  int (*devices)(int*);
  int (*getProperties)(int, Props*);
  int (*listen)(void*, int, void*, void**);
  int (*connect)(void*, int, void*, void**, void**);
  int (*accept)(void*, void**, void**);
  int (*regMr)(void*, void*, size_t, int, void**);
  RegMrDmaBuf regMrDmaBuf;
  DeregMr deregMr;
  int (*isend)(void*, void*, size_t, int, void*, void*, void**);
  int (*irecv)(void*, int, void**, size_t*, int*, void**, void**, void**);
  Iflush iflush;
  Test test;
  Close closeSend, closeRecv, closeListen;
  GetDeviceMr getDeviceMr;
  IrecvConsumed irecvConsumed;
  AnyFn makeVDevice;
  int (*finalize)(void*);
  int (*setNetAttr)(void*, void*);
};
using NetV11 = NetPerComm<PropsV11>;
using NetV12 = NetPerComm<PropsV12>;

static_assert(sizeof(NetV6) == 17 * sizeof(void*) && sizeof(NetV7) == 19 * sizeof(void*) &&
                  sizeof(NetV9) == 20 * sizeof(void*) && sizeof(NetV10) == 20 * sizeof(void*) &&
                  sizeof(NetV12) == 22 * sizeof(void*),
              "NCCL's function tables");

}  // namespace plughost
