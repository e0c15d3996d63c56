// One interface over every net ABI version (v6..v12) a plugin may export, so the proxy
// emulation is written once. Each adapter calls the plugin exactly as the NCCL release that
// loads that version would (research/net.md §1.2 and NCCL's src/plugin/net/net_vN.cc shims):
// int vs size_t sizes, connect/accept signatures, the device-handle out-parameter, per-comm
// init with a context and finalize (v11+), a NULL profiler callback (v10+), the `*request =
// 0x1` optional-completion preset that only v9+ plugins see, and setNetAttr when present.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "abi/net_v11.h"
#include "pilot/core/result.h"

namespace pilot::cli {

/// The name nccl-pilot's net plugin gives NCCL (plugin/net/exports.cc): netbench asks for its
/// transport when handed it (command.cc).
inline constexpr const char* kPilotNetName = "Pilot";

/// NCCL_NET_OPTIONAL_RECV_COMPLETION, as NCCL stores it into an irecv's request slot.
inline void* const kOptionalCompletion = reinterpret_cast<void*>(uintptr_t{0x1});

/// A device's properties, whatever the version (fields a version lacks hold NCCL's shim
/// defaults).
struct NetDeviceInfo {
  std::string name;
  std::string pciPath;
  uint64_t guid = 0;
  int ptrSupport = 0;
  int regIsGlobal = 0;
  int forceFlush = 0;
  int speedMbps = 0;
  int port = 0;
  float latencyUs = 0;
  int maxComms = 0;
  int maxRecvs = 0;
  int netDeviceType = 0;  ///< NCCL_NET_DEVICE_HOST for a proxy-driven transport
  int netDeviceVersion = 0;
  int vNics = 1;  ///< physical devices behind it
  uint64_t maxP2pBytes = nccl::MAX_NET_SIZE;
  uint64_t maxCollBytes = nccl::MAX_COLLNET_SIZE;
  int maxMultiRequestSize = 1;
  int railId = nccl::NCCL_NET_ID_UNDEF;
  int planeId = nccl::NCCL_NET_ID_UNDEF;
};

/// v11's attribute hints; older versions have no setNetAttr.
using NetAttr = nccl::ncclNetAttr_v11_t;

/// The plugin's entry points as NCCL's proxy uses them. Data-path calls return the plugin's
/// ncclResult_t untouched (the caller knows the step); setup calls return a message.
class NetDriver {
 public:
  virtual ~NetDriver() = default;

  int abi() const { return abi_; }
  /// The struct's `name` field (NCCL_NET matches it).
  const std::string& pluginName() const { return name_; }

  /// init (once per process before v11; per communicator with a context from v11).
  virtual Status init() = 0;
  /// finalize(ctx) on v11+ after a successful init; nothing before.
  virtual void finalize() = 0;
  virtual Expected<int> devices() = 0;
  virtual Expected<NetDeviceInfo> properties(int dev) = 0;

  virtual nccl::ncclResult_t listen(int dev, void* handle, void** listenComm) = 0;
  /// Called again with the same `handle` bytes until *sendComm is set (the plugin may keep its
  /// connect state in the handle).
  virtual nccl::ncclResult_t connect(int dev, void* handle, void** sendComm) = 0;
  virtual nccl::ncclResult_t accept(void* listenComm, void** recvComm) = 0;
  virtual nccl::ncclResult_t closeListen(void* listenComm) = 0;
  virtual nccl::ncclResult_t closeSend(void* sendComm) = 0;
  virtual nccl::ncclResult_t closeRecv(void* recvComm) = 0;

  /// Host memory. Fails (ncclInternalError, like NCCL's shims) on sizes an int ABI cannot carry.
  virtual nccl::ncclResult_t regMr(void* comm, void* data, size_t size, void** mhandle) = 0;
  virtual nccl::ncclResult_t deregMr(void* comm, void* mhandle) = 0;

  /// `phandle` is NCCL's per-step profiler slot (never read: the profiler callback is NULL).
  virtual nccl::ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                                   void* phandle, void** request) = 0;
  /// One receive (netbench never groups). `optionalCompletion`: LL/LL128, where NCCL presets
  /// *request = 0x1 for v9+ plugins (v6..v8 shims reset it to NULL).
  virtual nccl::ncclResult_t irecv(void* recvComm, void* data, size_t size, int tag, void* mhandle,
                                   void* phandle, bool optionalCompletion, void** request) = 0;
  virtual nccl::ncclResult_t test(void* request, int* done, int* sizes) = 0;
  /// v7+: NCCL calls it after the GPU consumed a receive whenever the pointer is non-NULL.
  virtual bool hasIrecvConsumed() const = 0;
  virtual nccl::ncclResult_t irecvConsumed(void* recvComm, int n, void* request) = 0;
  /// v11+: false when the plugin leaves setNetAttr NULL (NCCL then skips it).
  virtual bool hasSetNetAttr() const = 0;
  virtual nccl::ncclResult_t setNetAttr(NetAttr* attr) = 0;

 protected:
  NetDriver(int abi, std::string name) : abi_(abi), name_(std::move(name)) {}

 private:
  int abi_;
  std::string name_;
};

/// The driver for `ncclNetPlugin_v<abi>` at `symbol` (the struct inside the library, which
/// must stay loaded).
Expected<std::unique_ptr<NetDriver>> createNetDriver(int abi, void* symbol);

/// "ncclSuccess", "ncclInternalError", ... or the number.
std::string resultName(nccl::ncclResult_t rc);

}  // namespace pilot::cli
