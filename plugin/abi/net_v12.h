// Net ABI v12: NCCL 2.30 and later. Same functions as v11; a virtual NIC may fuse 8 devices
// (vProps.devs[8], which moves every later prop) and props gain railId/planeId.
#pragma once

#include "abi/net_common.h"

namespace pilot::nccl {

constexpr int NCCL_NET_MAX_DEVS_PER_NIC_V12 = 8;

struct ncclNetVDeviceProps_v12_t {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
};

struct ncclNetCommConfig_v12_t {
  int trafficClass;
};

struct ncclNetProperties_v12_t {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  ncclNetVDeviceProps_v12_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
  int16_t railId;   ///< NCCL_NET_ID_UNDEF = unknown
  int16_t planeId;  ///< NCCL_NET_ID_UNDEF = unknown
};

struct ncclNetCommAttr_v12_t {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
};

struct ncclNetAttr_v12_t {
  ncclNetCommAttr_v12_t sendCommAttr;
  ncclNetCommAttr_v12_t recvCommAttr;
  uint32_t op;
  uint32_t algo;
  uint32_t proto;
};

struct ncclNet_v12_t {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config,
                       ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, int dev, void* handle, void** sendComm,
                          ncclNetDeviceHandle_v12_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm,
                         ncclNetDeviceHandle_v12_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                        void* phandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** phandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v12_t* props);
  ncclResult_t (*finalize)(void* ctx);
  ncclResult_t (*setNetAttr)(void* ctx, ncclNetAttr_v12_t* netAttr);
};

static_assert(sizeof(ncclNetVDeviceProps_v12_t) == 36);
static_assert(offsetof(ncclNetProperties_v12_t, vProps) == 64);
static_assert(offsetof(ncclNetProperties_v12_t, maxP2pBytes) == 104);
static_assert(offsetof(ncclNetProperties_v12_t, maxMultiRequestSize) == 120);
static_assert(offsetof(ncclNetProperties_v12_t, railId) == 124);
static_assert(offsetof(ncclNetProperties_v12_t, planeId) == 126);
static_assert(sizeof(ncclNetProperties_v12_t) == 128);
static_assert(sizeof(ncclNet_v12_t) == 22 * sizeof(void*));

}  // namespace pilot::nccl
