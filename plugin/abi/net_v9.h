// Net ABI v9: NCCL 2.24 .. 2.29. isend/irecv sizes become size_t (iflush and test keep int);
// props gain forceFlush, virtual-NIC members (vProps, 4 devices), maxP2pBytes/maxCollBytes;
// adds makeVDevice for NIC fusion.
#pragma once

#include "abi/net_common.h"

namespace pilot::nccl {

constexpr int NCCL_NET_MAX_DEVS_PER_NIC_V9 = 4;

struct ncclNetVDeviceProps_v9_t {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC_V9];
};

struct ncclNetProperties_v9_t {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;  ///< NCCL flushes every GDR receive, needed or not
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  ncclNetVDeviceProps_v9_t vProps;  ///< physical devices behind this one; {1, {dev}} if none
  size_t maxP2pBytes;               ///< in (0, NCCL_MAX_NET_SIZE_BYTES]
  size_t maxCollBytes;
};

struct ncclNet_v9_t {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm,
                          ncclNetDeviceHandle_v9_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v9_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v9_t* props);
};

static_assert(sizeof(ncclNetVDeviceProps_v9_t) == 20);
static_assert(offsetof(ncclNetProperties_v9_t, forceFlush) == 32);
static_assert(offsetof(ncclNetProperties_v9_t, vProps) == 64);
static_assert(offsetof(ncclNetProperties_v9_t, maxP2pBytes) == 88);
static_assert(sizeof(ncclNetProperties_v9_t) == 104);
static_assert(sizeof(ncclNet_v9_t) == 20 * sizeof(void*));

}  // namespace pilot::nccl
