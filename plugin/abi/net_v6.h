// Net ABI v6: NCCL 2.13 .. 2.29 (the oldest version NCCL 2.26+ still takes). Sizes are int in
// regMr/isend/irecv; regMrDmaBuf takes size_t. init runs once per process.
#pragma once

#include "abi/net_common.h"

namespace pilot::nccl {

struct ncclNetProperties_v6_t {
  char* name;      ///< for logs, and NCCL's NCCL_IB_HCA-style selection
  char* pciPath;   ///< sysfs PCI directory: NCCL places the NIC in its topology by this
  uint64_t guid;   ///< same value for every port/function of one NIC chip
  int ptrSupport;  ///< NCCL_PTR_* bits
  int speed;       ///< Mbps
  int port;
  float latency;  ///< microseconds; 0 = unknown
  int maxComms;
  int maxRecvs;  ///< grouped receives per irecv
};

struct ncclNet_v6_t {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v6_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm);
  ncclResult_t (*regMr)(void* comm, void* data, int size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                        void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
};

static_assert(offsetof(ncclNetProperties_v6_t, guid) == 16);
static_assert(offsetof(ncclNetProperties_v6_t, ptrSupport) == 24);
static_assert(offsetof(ncclNetProperties_v6_t, latency) == 36);
static_assert(offsetof(ncclNetProperties_v6_t, maxRecvs) == 44);
static_assert(sizeof(ncclNetProperties_v6_t) == 48);
static_assert(sizeof(ncclNet_v6_t) == 17 * sizeof(void*));
static_assert(offsetof(ncclNet_v6_t, closeListen) == 16 * sizeof(void*));

}  // namespace pilot::nccl
