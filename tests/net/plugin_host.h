// A fake NCCL for the net plugin's transport: dlopens the built module (RTLD_NOW | RTLD_LOCAL),
// takes ncclNetPlugin_vN and calls it exactly with version N's signatures, behind one
// version-independent interface the end-to-end scenarios use. Sizes the old versions take as
// int are passed as int; requests are pre-set to 0x1 before irecv from v9 on, as NCCL 2.24+
// does for LL/LL128 receives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace plughost {

/// Every version's properties, widened; fields a version lacks keep these defaults.
struct Props {
  std::string name;
  const char* pciPath = nullptr;
  uint64_t guid = 0;
  int ptrSupport = 0, speed = 0, port = 0, maxComms = 0, maxRecvs = 0;
  float latency = -1;
  int netDeviceType = -1, netDeviceVersion = -1, regIsGlobal = -1, forceFlush = -1;
  int vNdevs = -1, vDev0 = -1;
  size_t maxP2pBytes = 0, maxCollBytes = 0;
  int maxMultiRequestSize = -1, railId = -2, planeId = -2;
};

struct Net {
  int version = 0;
  std::function<int(void** ctx)> init;     ///< as NCCL calls it (v11+: per communicator)
  std::function<int(void* ctx)> finalize;  ///< v11+; a no-op before
  std::function<int(int* ndev)> devices;
  std::function<int(int dev, Props* props)> getProperties;
  std::function<int(void* ctx, int dev, void* handle, void** listenComm)> listen;
  /// devHandle: where the plugin must store NULL (v7+); ignored by v6.
  std::function<int(void* ctx, int dev, void* handle, void** sendComm, void** devHandle)> connect;
  std::function<int(void* listenComm, void** recvComm, void** devHandle)> accept;
  std::function<int(void* comm, void* data, size_t size, int type, void** mhandle)> regMr;
  std::function<int(void* comm, void* mhandle)> deregMr;
  /// size is narrowed to int for v6 .. v8 (the caller keeps it in range).
  std::function<int(void* comm, void* data, size_t size, int tag, void* mh, void** request)> isend;
  std::function<int(void* comm, int n, void** data, const size_t* sizes, int* tags, void** mhs,
                    void** request)>
      irecv;
  std::function<int(void* comm, int n, void** data, int* sizes, void** mhs, void** request)> iflush;
  std::function<int(void* request, int* done, int* sizes)> test;
  std::function<int(void*comm)> closeSend, closeRecv, closeListen;
  /// Raw slots NCCL checks for NULL.
  const void* irecvConsumed = nullptr;
  const void* makeVDevice = nullptr;
  /// Slots the plugin must accept but that a socket transport does nothing with.
  std::function<int(void* ctx)> setNetAttr;  ///< v11+: called with a zeroed attribute struct
  std::function<int(int* d)> makeVDeviceCall;
};

/// The module under test, dlopen'ed once per process; nullptr (and a test failure) if not.
void* openModule();
/// ncclNetPlugin_v<version> of the module wrapped as a Net; version 0 on a missing symbol.
Net loadNet(void* module, int version);

/// The logger handed to init: keeps every line (tests read them back).
std::string loggedLines();
int warnCount();

}  // namespace plughost
