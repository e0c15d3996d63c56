// The net ABI calls NCCL makes, mapped onto net::Transport. Each function here serves every
// version whose C signature it matches; net/exports.cc adds the thin per-version shims (argument
// order, the v10 config, the v11+ context). What the versions differ in (research/net.md §1.2):
// - sizes: int in regMr (v6, v7) and isend/irecv (v6 .. v8), size_t later; negative ints are
//   invalid, and test()/iflush() sizes stay int in every version (clamped);
// - connect/accept (v7+) take a device-handle out-param: host transports store NULL in it;
// - irecv (v9+ in NCCL 2.24+) may find *request == 0x1 on entry: every path writes *request;
// - properties grow per version (filled by fillProperties below).
// In topology-only mode (no transport) every call that needs a device is an error and a WARN.
#pragma once

#include <climits>

#include "abi/net_common.h"
#include "net/transport.h"

namespace pilot::plugin::netabi {

using nccl::ncclNetDeviceHandle_v7_t;
using nccl::ncclResult_t;

ncclResult_t devices(int* ndev);
/// Everything that needs a device while there is none (topology-only mode).
ncclResult_t noDevice(const char* where);

ncclResult_t listen(int dev, void* handle, void** listenComm);
ncclResult_t connect(int dev, void* handle, void** sendComm, int trafficClass,
                     ncclNetDeviceHandle_v7_t** sendDevComm);
ncclResult_t accept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v7_t** recvDevComm);
ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t regMrInt(void* comm, void* data, int size, int type, void** mhandle);
ncclResult_t regMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                         void** mhandle);
ncclResult_t deregMr(void* comm, void* mhandle);
ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request);
ncclResult_t isendInt(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
ncclResult_t irecv(void* recvComm, int n, void** data, const size_t* sizes, int* tags,
                   void** mhandles, void** request);
ncclResult_t irecvInt(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                      void** request);
ncclResult_t iflush(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                    void** request);
ncclResult_t test(void* request, int* done, int* sizes);
ncclResult_t closeSend(void* sendComm);
ncclResult_t closeRecv(void* recvComm);
ncclResult_t closeListen(void* listenComm);

/// Largest message a size_t version (v9+) advertises (maxP2pBytes): NCCL's own bound.
constexpr size_t kMaxP2pBytes = nccl::NCCL_MAX_NET_SIZE_BYTES;

/// The properties of version V (a struct that grows with V) from what the transport reported.
template <int V, typename Props>
void fillProperties(const net::DeviceProperties& d, int dev, Props* p) {
  *p = Props{};
  p->name = const_cast<char*>(d.name.c_str());
  // NULL for a virtual interface: NCCL then attaches the NIC to the first CPU.
  p->pciPath = d.pciPath.empty() ? nullptr : const_cast<char*>(d.pciPath.c_str());
  p->guid = d.guid;
  p->ptrSupport = d.ptrSupport;
  p->speed = d.speedMbps;
  p->port = d.port;
  p->latency = d.latencyUs;
  p->maxComms = d.maxComms;
  p->maxRecvs = d.maxRecvs;
  if constexpr (V >= 7) {
    p->netDeviceType = nccl::NCCL_NET_DEVICE_HOST;
    p->netDeviceVersion = 0;  // NCCL_NET_DEVICE_INVALID_VERSION: no device-side code
  }
  if constexpr (V >= 8) p->regIsGlobal = 0;
  if constexpr (V >= 9) {
    p->forceFlush = 0;
    p->vProps.ndevs = 1;
    p->vProps.devs[0] = dev;
    p->maxP2pBytes = d.maxMessageBytes < kMaxP2pBytes ? d.maxMessageBytes : kMaxP2pBytes;
    p->maxCollBytes = nccl::MAX_COLLNET_SIZE;
  }
  if constexpr (V >= 11) p->maxMultiRequestSize = 1;
  if constexpr (V >= 12) {
    p->railId = nccl::NCCL_NET_ID_UNDEF;
    p->planeId = nccl::NCCL_NET_ID_UNDEF;
  }
}

template <int V, typename Props>
ncclResult_t getProperties(int dev, Props* props) {
  if (transport() == nullptr) return noDevice("getProperties");
  const net::DeviceProperties* d = deviceProperties(dev);
  if (d == nullptr || props == nullptr) return nccl::ncclInvalidArgument;
  fillProperties<V>(*d, dev, props);
  return nccl::ncclSuccess;
}

}  // namespace pilot::plugin::netabi
