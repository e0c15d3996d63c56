// The internal transport interface every net ABI version (v6 .. v12) maps onto. plugin/ owns the
// ABI: it converts int/size_t sizes, fills the per-version property structs and turns an Error
// into an ncclResult_t plus one log line. Below it, sizes are size_t and the connection handle is
// an opaque 128-byte buffer (NCCL_NET_HANDLE_MAXSIZE).
//
// Threads (research/net.md §2.1): listen/connect/accept/registration/close run on NCCL's proxy
// service thread, isend/irecv/test on its progress thread. A transport object may be used from
// several threads at once; one comm's data path (isend/irecv/test/iflush) must not be entered by
// two threads at the same time, which NCCL never does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "pilot/core/result.h"

namespace pilot::net {

/// Bytes of the handle listen() fills and NCCL ships to the peer (NCCL_NET_HANDLE_MAXSIZE).
constexpr size_t kHandleBytes = 128;
/// Requests NCCL keeps in flight per comm (NCCL_NET_MAX_REQUESTS) and buffers per grouped irecv.
constexpr int kMaxRequests = 32;
constexpr int kMaxRecvs = 8;
/// Every comm takes this many requests (and receive buffers) in flight: a sendComm shared by
/// PXN sees kMaxRequests per grouped receive slot (research/net.md §1.4).
constexpr int kMaxInflight = kMaxRequests * kMaxRecvs;
/// Pointer types (NCCL_PTR_*): host memory is all a socket transport can move.
constexpr int kPtrHost = 0x1;

struct DeviceProperties {
  std::string name;     ///< interface name, e.g. eth0
  std::string pciPath;  ///< sysfs PCI directory of the NIC; "" for a virtual interface
  uint64_t guid = 0;
  int ptrSupport = kPtrHost;
  int speedMbps = 10000;
  int port = 0;
  float latencyUs = 0;
  int maxComms = 65536;
  int maxRecvs = kMaxRecvs;
  uint64_t maxMessageBytes = 0;  ///< largest isend/irecv size the transport moves
};

/// Per-communicator options NCCL passes (v10 connect config, v11+ init config).
struct ConnectOptions {
  int trafficClass = -1;  ///< -1 = unset; else the IP TOS / IPv6 traffic class byte
};

// Opaque objects handed to NCCL as void*. Each transport derives its own; the base classes only
// let one program hold several transports without clashing definitions.
class ListenComm {
 protected:
  ListenComm() = default;
  ~ListenComm() = default;
};
class SendComm {
 protected:
  SendComm() = default;
  ~SendComm() = default;
};
class RecvComm {
 protected:
  RecvComm() = default;
  ~RecvComm() = default;
};
class Request {
 protected:
  Request() = default;
  ~Request() = default;
};
class MemoryHandle {
 protected:
  MemoryHandle() = default;
  ~MemoryHandle() = default;
};

/// What test() reports. `count` sizes are valid once done: 1 for a send, n for an irecv of n.
struct TestResult {
  bool done = false;
  int count = 0;
  size_t sizes[kMaxRecvs] = {};
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int deviceCount() const = 0;
  virtual Expected<DeviceProperties> properties(int dev) const = 0;

  /// Fills `handle` (kHandleBytes) with what the peer's connect() needs.
  virtual Expected<ListenComm*> listen(int dev, void* handle) = 0;
  /// Nonblocking: nullptr means "in progress, call again with the same handle". The connect
  /// state lives in (and is found through) the handle. An error ends the attempt.
  virtual Expected<SendComm*> connect(int dev, void* handle, const ConnectOptions& options) = 0;
  /// Nonblocking: nullptr means "no complete connection yet".
  virtual Expected<RecvComm*> accept(ListenComm* listen) = 0;

  /// `comm` is a SendComm* or RecvComm* as NCCL passes it. Only kPtrHost is supported.
  virtual Expected<MemoryHandle*> registerMemory(void* comm, void* data, size_t size, int type) = 0;
  virtual Status deregisterMemory(void* comm, MemoryHandle* handle) = 0;

  /// Nonblocking: nullptr means "cannot post yet (no matching receive posted by the peer, or no
  /// free request)", call again. Requests complete in posting order per comm.
  virtual Expected<Request*> isend(SendComm* comm, const void* data, size_t size, int tag,
                                   MemoryHandle* handle) = 0;
  /// Posts n (1..kMaxRecvs) buffers under one request; each matching send picks its buffer by
  /// tag. A buffer may be larger than the message; test() reports the real sizes.
  virtual Expected<Request*> irecv(RecvComm* comm, int n, void* const* data, const size_t* sizes,
                                   const int* tags, MemoryHandle* const* handles) = 0;
  /// Host memory needs no flush: always nullptr (nothing to wait for).
  virtual Expected<Request*> iflush(RecvComm* comm, int n, void* const* data, const int* sizes,
                                    MemoryHandle* const* handles) = 0;
  /// Drives the comm's I/O and reports whether `request` is done. A done request is released:
  /// it must not be tested again.
  virtual Status test(Request* request, TestResult* result) = 0;

  /// Safe at any time, with requests in flight; outstanding requests die with the comm.
  virtual void closeSend(SendComm* comm) = 0;
  virtual void closeRecv(RecvComm* comm) = 0;
  virtual void closeListen(ListenComm* comm) = 0;
};

}  // namespace pilot::net
