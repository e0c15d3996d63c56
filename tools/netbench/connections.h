// One side's connections and the work NCCL's proxy service thread does on them
// (research/net.md §2.2, §2.6): init/devices/getProperties, listen, connect/accept retried
// with the same handle buffer, closeListen right after accept, one regMr per protocol buffer
// (LL, LL128, Simple, host memory), and at the end deregMr, free, closeSend/closeRecv and
// finalize. Every method runs on the service thread.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "abi/net_common.h"
#include "netbench/driver.h"
#include "netbench/plan.h"

namespace pilot::cli {

/// NCCL's host protocol buffers are page-aligned (cudaHostAlloc); so are these, zero-filled.
class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(size_t bytes);
  HostBuffer(HostBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) { o.data_ = nullptr; }
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  ~HostBuffer();

  unsigned char* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  unsigned char* data_ = nullptr;
  size_t bytes_ = 0;
};

/// One channel's connection on this side.
struct Connection {
  void* comm = nullptr;        ///< sendComm or recvComm
  void* listenComm = nullptr;  ///< receiver, until accepted
  std::array<HostBuffer, kNumProtos> buffers;
  std::array<void*, kNumProtos> mhandles{};
  uint64_t step = 0;  ///< NCCL's resources->step: where the next operation's steps start
};

using NetHandle = std::array<unsigned char, nccl::NCCL_NET_HANDLE_MAXSIZE>;

/// Why a retry loop gives up: the other side failed, or nothing happened for too long.
struct SetupLimits {
  const std::atomic<bool>* abort = nullptr;
  double timeoutS = 60;
};

class Endpoint {
 public:
  Endpoint(NetDriver& driver, int dev, int channels, const ProtoBufferSizes& buffers);

  /// init, devices, getProperties of every device (as at communicator init), then checks that
  /// device `dev` is a host transport NCCL would use: ptrSupport has NCCL_PTR_HOST, a HOST
  /// device type, maxP2pBytes within (0, 1 TiB].
  Expected<NetDeviceInfo> open();

  /// Receiver: one listen per channel; the handles go to the sender.
  Expected<std::vector<NetHandle>> listen();
  /// Receiver: accept every channel (round-robin retries), closeListen each right away.
  Status accept(const SetupLimits& limits);
  /// Sender: connect every channel, each retried with its own copy of the peer's handle.
  Status connect(std::vector<NetHandle> handles, const SetupLimits& limits);
  /// Both: allocate and regMr the LL, LL128 and Simple buffers of every connection.
  Status registerBuffers();
  /// Teardown in NCCL's order; safe after any partial setup and with requests in flight.
  void close();

  NetDriver& driver() { return driver_; }
  std::vector<Connection>& connections() { return connections_; }
  int dev() const { return dev_; }

  /// setNetAttr when the plugin has it and `attr` differs from the last one set (NCCL's
  /// setXferNetAttrs); `force` sets it anyway (NCCL's setNetAttrs at connection setup).
  void setNetAttr(const NetAttr& attr, bool force);
  /// The hints NCCL sets when an operation starts (setXferNetAttrs): one peer, `channels`
  /// flows on this side, a ring allreduce in `proto`.
  NetAttr transferAttr(bool send, Proto proto) const;

 private:
  /// The hints NCCL gives a ring/tree connection at setup (populateCommNetAttrs, 2 ranks).
  NetAttr setupAttr() const;

  NetDriver& driver_;
  int dev_;
  int channels_;
  ProtoBufferSizes bufferSizes_;
  std::vector<Connection> connections_;
  bool opened_ = false;
  bool isReceiver_ = false;  ///< comms came from accept: closeRecv
  bool haveAttr_ = false;
  NetAttr lastAttr_{};
};

}  // namespace pilot::cli
