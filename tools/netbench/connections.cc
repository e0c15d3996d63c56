#include "netbench/connections.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "netbench/log.h"

namespace pilot::cli {
namespace {

using Clock = std::chrono::steady_clock;
using namespace pilot::nccl;

std::string callFailed(const char* call, int channel, ncclResult_t rc) {
  return std::string(call) + " (channel " + std::to_string(channel) + ") returned " +
         resultName(rc);
}

std::string hexPtrSupport(int bits) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%x", bits);
  return text;
}

/// Runs `attempt(c)` for every pending channel, round-robin like the service thread's poll
/// loop, until each reports done. `attempt` returns false when the channel is finished.
template <typename Attempt>
Status retryAll(int channels, const SetupLimits& limits, const char* what, Attempt attempt) {
  std::vector<bool> pending(static_cast<size_t>(channels), true);
  int left = channels;
  auto lastProgress = Clock::now();
  while (left > 0) {
    bool progressed = false;
    for (int c = 0; c < channels; ++c) {
      if (!pending[c]) continue;
      bool finished = false;
      if (Status s = attempt(c, &finished); !s.ok()) return s;
      if (finished) {
        pending[c] = false;
        --left;
        progressed = true;
      }
    }
    if (progressed) {
      lastProgress = Clock::now();
      continue;
    }
    if (limits.abort != nullptr && limits.abort->load(std::memory_order_relaxed)) {
      return Error{std::string(what) + " stopped: the peer failed"};
    }
    if (std::chrono::duration<double>(Clock::now() - lastProgress).count() > limits.timeoutS) {
      int first = 0;
      while (!pending[first]) ++first;
      return Error{std::string(what) + " of channel " + std::to_string(first) +
                   " did not complete within " + std::to_string(static_cast<int>(limits.timeoutS)) +
                   " s (the plugin keeps returning a NULL comm)"};
    }
    // NCCL's service thread spins (poll timeout 0) while connections are pending; yielding
    // keeps the peer process on a small machine running.
    std::this_thread::yield();
  }
  return Status::success();
}

}  // namespace

HostBuffer::HostBuffer(size_t bytes) : bytes_(bytes) {
  void* p = nullptr;
  if (::posix_memalign(&p, 4096, bytes == 0 ? 4096 : bytes) != 0) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  data_ = static_cast<unsigned char*>(p);
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.data_ = nullptr;
  }
  return *this;
}

HostBuffer::~HostBuffer() {
  std::free(data_);
}

Endpoint::Endpoint(NetDriver& driver, int dev, int channels, const ProtoBufferSizes& buffers)
    : driver_(driver),
      dev_(dev),
      channels_(channels),
      bufferSizes_(buffers),
      connections_(static_cast<size_t>(channels)) {}

Expected<NetDeviceInfo> Endpoint::open() {
  if (Status s = driver_.init(); !s.ok()) return Error{s.error()};
  opened_ = true;
  auto n = driver_.devices();
  if (!n.ok()) return Error{n.error()};
  if (*n <= 0) {
    std::string why = "the plugin reports " + std::to_string(*n) +
                      " devices (NCCL would skip it and use its internal transports)";
    if (driver_.pluginName() == kPilotNetName) {
      const char* transport = std::getenv("NCCL_PILOT_TRANSPORT");
      why += std::string("; nccl-pilot's NCCL_PILOT_TRANSPORT=") +
             (transport ? transport : "auto") +
             " leaves the data to NCCL: NCCL_PILOT_TRANSPORT=socket benchmarks its TCP transport";
    }
    return Error{why};
  }
  if (dev_ >= *n) {
    return Error{"--dev " + std::to_string(dev_) + ": the plugin has " + std::to_string(*n) +
                 " device(s)"};
  }
  NetDeviceInfo chosen;
  for (int d = 0; d < *n; ++d) {  // NCCL's topology code reads every device's properties
    auto props = driver_.properties(d);
    if (!props.ok()) return Error{"device " + std::to_string(d) + ": " + props.error()};
    if (d == dev_) chosen = *props;
  }
  if ((chosen.ptrSupport & NCCL_PTR_HOST) == 0) {
    return Error{"device " + std::to_string(dev_) + " (" + chosen.name +
                 ") cannot use host memory (ptrSupport " + hexPtrSupport(chosen.ptrSupport) +
                 "); netbench runs without a GPU"};
  }
  if (chosen.netDeviceType != NCCL_NET_DEVICE_HOST) {
    return Error{"device " + std::to_string(dev_) + " is not proxy-driven (netDeviceType " +
                 std::to_string(chosen.netDeviceType) + ")"};
  }
  if (chosen.maxP2pBytes == 0 || chosen.maxP2pBytes > NCCL_MAX_NET_SIZE_BYTES) {
    return Error{"device " + std::to_string(dev_) + " reports maxP2pBytes " +
                 std::to_string(chosen.maxP2pBytes) +
                 ", outside (0, 1 TiB]: NCCL fails such connections"};
  }
  return chosen;
}

NetAttr Endpoint::setupAttr() const {
  NetAttr a;
  std::memset(&a, 0xff, sizeof(a));  // NCCL_NET_ATTR_INIT: every field NCCL_NET_ATTR_UNDEF
  for (auto* side : {&a.sendCommAttr, &a.recvCommAttr}) {
    side->minConcurrentPeers = 1;
    side->minFlowsPerPeer = 1;
    side->maxConcurrentPeers = 2;  // min(nRanks, (NCCL_MAX_TREE_ARITY - 1) * 2) with 2 ranks
    side->maxFlowsPerPeer = channels_;
  }
  return a;
}

NetAttr Endpoint::transferAttr(bool send, Proto proto) const {
  NetAttr a = haveAttr_ ? lastAttr_ : setupAttr();
  ncclNetCommAttr_v11_t& side = send ? a.sendCommAttr : a.recvCommAttr;
  side.maxConcurrentPeers = side.minConcurrentPeers = 1;
  side.maxFlowsPerPeer = side.minFlowsPerPeer = channels_;
  a.op = 1u << ncclFuncAllReduce;
  a.algo = 1u << 1;  // NCCL_ALGO_RING
  a.proto = 1u << static_cast<int>(proto);
  return a;
}

void Endpoint::setNetAttr(const NetAttr& attr, bool force) {
  if (!driver_.hasSetNetAttr()) return;
  if (!force && haveAttr_ && std::memcmp(&attr, &lastAttr_, sizeof(attr)) == 0) return;
  NetAttr copy = attr;
  // NCCL ignores the result too (setNetAttrs); a hint the plugin rejects is not fatal.
  if (ncclResult_t rc = driver_.setNetAttr(&copy); rc != ncclSuccess) {
    netbenchInfo("setNetAttr returned " + resultName(rc));
  }
  lastAttr_ = attr;
  haveAttr_ = true;
}

Expected<std::vector<NetHandle>> Endpoint::listen() {
  isReceiver_ = true;
  std::vector<NetHandle> handles(static_cast<size_t>(channels_));
  for (int c = 0; c < channels_; ++c) {
    handles[c].fill(0);
    void* lcomm = nullptr;
    if (ncclResult_t rc = driver_.listen(dev_, handles[c].data(), &lcomm); rc != ncclSuccess) {
      return Error{callFailed("listen", c, rc)};
    }
    if (lcomm == nullptr) return Error{"listen (channel " + std::to_string(c) + ") gave no comm"};
    connections_[c].listenComm = lcomm;
  }
  return handles;
}

Status Endpoint::accept(const SetupLimits& limits) {
  const NetAttr attr = setupAttr();
  return retryAll(channels_, limits, "accept", [&](int c, bool* finished) -> Status {
    Connection& conn = connections_[c];
    setNetAttr(attr, /*force=*/true);  // recvProxyConnect sets it on every call
    if (ncclResult_t rc = driver_.accept(conn.listenComm, &conn.comm); rc != ncclSuccess) {
      return Error{callFailed("accept", c, rc)};
    }
    if (conn.comm == nullptr) return Status::success();
    // recvProxyConnect closes the listening comm as soon as the connection exists.
    ncclResult_t rc = driver_.closeListen(conn.listenComm);
    conn.listenComm = nullptr;
    if (rc != ncclSuccess) return Error{callFailed("closeListen", c, rc)};
    *finished = true;
    return Status::success();
  });
}

Status Endpoint::connect(std::vector<NetHandle> handles, const SetupLimits& limits) {
  if (handles.size() != connections_.size()) {
    return Error{"the peer sent " + std::to_string(handles.size()) + " handles for " +
                 std::to_string(connections_.size()) + " channels"};
  }
  const NetAttr attr = setupAttr();
  return retryAll(channels_, limits, "connect", [&](int c, bool* finished) -> Status {
    Connection& conn = connections_[c];
    setNetAttr(attr, /*force=*/true);  // sendProxyConnect sets it on every call
    // The same writable bytes on every retry: a plugin may keep its state machine there.
    if (ncclResult_t rc = driver_.connect(dev_, handles[c].data(), &conn.comm); rc != ncclSuccess) {
      return Error{callFailed("connect", c, rc)};
    }
    *finished = conn.comm != nullptr;
    return Status::success();
  });
}

Status Endpoint::registerBuffers() {
  for (int c = 0; c < channels_; ++c) {
    Connection& conn = connections_[c];
    for (int p = 0; p < kNumProtos; ++p) {  // NCCL's order: LL, LL128, Simple
      conn.buffers[p] = HostBuffer(bufferSizes_[p]);
      ncclResult_t rc = driver_.regMr(conn.comm, conn.buffers[p].data(), conn.buffers[p].bytes(),
                                      &conn.mhandles[p]);
      if (rc != ncclSuccess) {
        return Error{"regMr of the " + std::string(protoName(static_cast<Proto>(p))) + " buffer (" +
                     std::to_string(bufferSizes_[p]) + " bytes, channel " + std::to_string(c) +
                     ") returned " + resultName(rc)};
      }
    }
  }
  return Status::success();
}

void Endpoint::close() {
  for (size_t c = 0; c < connections_.size(); ++c) {
    Connection& conn = connections_[c];
    for (int p = 0; p < kNumProtos; ++p) {
      if (conn.mhandles[p] != nullptr) {
        if (ncclResult_t rc = driver_.deregMr(conn.comm, conn.mhandles[p]); rc != ncclSuccess) {
          netbenchWarn("deregMr (channel " + std::to_string(c) + ") returned " + resultName(rc));
        }
        conn.mhandles[p] = nullptr;
      }
      conn.buffers[p] = HostBuffer();
    }
    if (conn.comm != nullptr) {
      const bool receiver = isReceiver_;
      ncclResult_t rc = receiver ? driver_.closeRecv(conn.comm) : driver_.closeSend(conn.comm);
      if (rc != ncclSuccess) {
        netbenchWarn(std::string(receiver ? "closeRecv" : "closeSend") + " (channel " +
                     std::to_string(c) + ") returned " + resultName(rc));
      }
      conn.comm = nullptr;
    }
    if (conn.listenComm != nullptr) {  // setup stopped before this channel was accepted
      if (ncclResult_t rc = driver_.closeListen(conn.listenComm); rc != ncclSuccess) {
        netbenchWarn("closeListen (channel " + std::to_string(c) + ") returned " + resultName(rc));
      }
      conn.listenComm = nullptr;
    }
  }
  if (opened_) driver_.finalize();
  opened_ = false;
}

}  // namespace pilot::cli
