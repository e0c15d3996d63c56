#include "net/adapters.h"

#include "entry_guard.h"
#include "net/process.h"

namespace pilot::plugin::netabi {
namespace {

using namespace pilot::nccl;

constexpr unsigned long kFlags = subsys::Net;

/// Runs `body` on the transport with NCCL's catch-all; topology-only mode is an error.
template <typename Body>
ncclResult_t withTransport(const char* where, Body&& body) noexcept {
  net::Transport* t = transport();
  if (t == nullptr) return noDevice(where);
  NcclLogger log = netLogger();
  return guard(&log, kFlags, where, ncclInternalError, [&] { return body(*t, log); });
}

/// Setup calls log their failure here (the data path's comms log their own, once).
ncclResult_t setupFailed(Logger& log, const char* where, const std::string& error,
                         ncclResult_t code) {
  PILOT_LOG(log, Warn, kFlags, "%s: %s", where, error.c_str());
  return code;
}

}  // namespace

ncclResult_t noDevice(const char* where) {
  NcclLogger log = netLogger();
  PILOT_LOG(log, Warn, kFlags, "%s: no network devices (topology-only mode)", where);
  return ncclInternalError;
}

ncclResult_t devices(int* ndev) {
  if (ndev == nullptr) return ncclInvalidArgument;
  net::Transport* t = transport();
  *ndev = t != nullptr ? t->deviceCount() : 0;  // 0: NCCL uses its own IB/Socket transport
  return ncclSuccess;
}

ncclResult_t listen(int dev, void* handle, void** listenComm) {
  if (listenComm != nullptr) *listenComm = nullptr;
  return withTransport("listen", [&](net::Transport& t, Logger& log) {
    if (handle == nullptr || listenComm == nullptr) return ncclInvalidArgument;
    auto comm = t.listen(dev, handle);
    if (!comm) return setupFailed(log, "listen", comm.error(), ncclSystemError);
    *listenComm = *comm;
    return ncclSuccess;
  });
}

ncclResult_t connect(int dev, void* handle, void** sendComm, int trafficClass,
                     ncclNetDeviceHandle_v7_t** sendDevComm) {
  if (sendComm != nullptr) *sendComm = nullptr;
  if (sendDevComm != nullptr) *sendDevComm = nullptr;  // host transport: no device handle
  return withTransport("connect", [&](net::Transport& t, Logger& log) {
    if (handle == nullptr || sendComm == nullptr) return ncclInvalidArgument;
    net::ConnectOptions options;
    options.trafficClass = trafficClass;
    auto comm = t.connect(dev, handle, options);
    if (!comm) return setupFailed(log, "connect", comm.error(), ncclSystemError);
    *sendComm = *comm;  // NULL: in progress, NCCL calls again with the same handle
    return ncclSuccess;
  });
}

ncclResult_t accept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v7_t** recvDevComm) {
  if (recvComm != nullptr) *recvComm = nullptr;
  if (recvDevComm != nullptr) *recvDevComm = nullptr;
  return withTransport("accept", [&](net::Transport& t, Logger& log) {
    if (listenComm == nullptr || recvComm == nullptr) return ncclInvalidArgument;
    auto comm = t.accept(static_cast<net::ListenComm*>(listenComm));
    if (!comm) return setupFailed(log, "accept", comm.error(), ncclSystemError);
    *recvComm = *comm;
    return ncclSuccess;
  });
}

ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (mhandle != nullptr) *mhandle = nullptr;
  return withTransport("regMr", [&](net::Transport& t, Logger& log) {
    if (mhandle == nullptr) return ncclInvalidArgument;
    auto mr = t.registerMemory(comm, data, size, type);
    if (!mr) return setupFailed(log, "regMr", mr.error(), ncclInternalError);
    *mhandle = *mr;
    return ncclSuccess;
  });
}

ncclResult_t regMrInt(void* comm, void* data, int size, int type, void** mhandle) {
  if (size < 0) {
    if (mhandle != nullptr) *mhandle = nullptr;
    NcclLogger log = netLogger();
    return setupFailed(log, "regMr", "negative size " + std::to_string(size), ncclInvalidArgument);
  }
  return regMr(comm, data, static_cast<size_t>(size), type, mhandle);
}

ncclResult_t regMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                         void** mhandle) {
  // Only called when ptrSupport has NCCL_PTR_DMABUF, which a socket transport never sets.
  if (mhandle != nullptr) *mhandle = nullptr;
  return withTransport("regMrDmaBuf", [&](net::Transport&, Logger& log) {
    return setupFailed(log, "regMrDmaBuf", "dma-buf memory is not supported (host memory only)",
                       ncclInternalError);
  });
}

ncclResult_t deregMr(void* comm, void* mhandle) {
  return withTransport("deregMr", [&](net::Transport& t, Logger& log) {
    if (mhandle == nullptr) return ncclSuccess;
    Status s = t.deregisterMemory(comm, static_cast<net::MemoryHandle*>(mhandle));
    return s.ok() ? ncclSuccess : setupFailed(log, "deregMr", s.error(), ncclInternalError);
  });
}

ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                   void** request) {
  if (request == nullptr) return ncclInvalidArgument;
  *request = nullptr;
  return withTransport("isend", [&](net::Transport& t, Logger&) {
    if (sendComm == nullptr) return ncclInvalidArgument;
    auto r = t.isend(static_cast<net::SendComm*>(sendComm), data, size, tag,
                     static_cast<net::MemoryHandle*>(mhandle));
    if (!r) return ncclRemoteError;  // the comm logged it, naming the peer
    *request = *r;
    return ncclSuccess;
  });
}

ncclResult_t isendInt(void* sendComm, void* data, int size, int tag, void* mhandle,
                      void** request) {
  if (size < 0) {
    if (request != nullptr) *request = nullptr;
    NcclLogger log = netLogger();
    return setupFailed(log, "isend", "negative size " + std::to_string(size), ncclInvalidArgument);
  }
  return isend(sendComm, data, static_cast<size_t>(size), tag, mhandle, request);
}

ncclResult_t irecv(void* recvComm, int n, void** data, const size_t* sizes, int* tags,
                   void** mhandles, void** request) {
  if (request == nullptr) return ncclInvalidArgument;
  *request = nullptr;  // NCCL 2.24+ may have stored 0x1 here: never hand it back
  return withTransport("irecv", [&](net::Transport& t, Logger&) {
    if (recvComm == nullptr || data == nullptr || sizes == nullptr || tags == nullptr) {
      return ncclInvalidArgument;
    }
    auto r = t.irecv(static_cast<net::RecvComm*>(recvComm), n, data, sizes, tags,
                     reinterpret_cast<net::MemoryHandle* const*>(mhandles));
    if (!r) return ncclRemoteError;
    *request = *r;
    return ncclSuccess;
  });
}

ncclResult_t irecvInt(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                      void** request) {
  if (request == nullptr) return ncclInvalidArgument;
  *request = nullptr;
  size_t wide[net::kMaxRecvs];
  NcclLogger log = netLogger();
  if (n < 1 || n > net::kMaxRecvs || sizes == nullptr) {
    return setupFailed(log, "irecv", std::to_string(n) + " buffers (1 to 8)", ncclInvalidArgument);
  }
  for (int i = 0; i < n; ++i) {
    if (sizes[i] < 0) {
      return setupFailed(log, "irecv", "negative size " + std::to_string(sizes[i]),
                         ncclInvalidArgument);
    }
    wide[i] = static_cast<size_t>(sizes[i]);
  }
  return irecv(recvComm, n, data, wide, tags, mhandles, request);
}

ncclResult_t iflush(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                    void** request) {
  if (request == nullptr) return ncclInvalidArgument;
  *request = nullptr;  // host memory: nothing to flush, nothing to wait for
  return transport() != nullptr ? ncclSuccess : noDevice("iflush");
}

ncclResult_t test(void* request, int* done, int* sizes) {
  if (done != nullptr) *done = 0;
  return withTransport("test", [&](net::Transport& t, Logger&) {
    if (request == nullptr || done == nullptr) return ncclInvalidArgument;
    net::TestResult result;
    Status s = t.test(static_cast<net::Request*>(request), &result);
    if (!s.ok()) return ncclRemoteError;
    *done = result.done ? 1 : 0;
    if (result.done && sizes != nullptr) {
      // int in every version; a message above 2 GiB (v9+) reports INT_MAX.
      for (int i = 0; i < result.count; ++i) {
        sizes[i] = result.sizes[i] > static_cast<size_t>(INT_MAX)
                       ? INT_MAX
                       : static_cast<int>(result.sizes[i]);
      }
    }
    return ncclSuccess;
  });
}

ncclResult_t closeSend(void* sendComm) {
  return withTransport("closeSend", [&](net::Transport& t, Logger&) {
    if (sendComm != nullptr) t.closeSend(static_cast<net::SendComm*>(sendComm));
    return ncclSuccess;
  });
}

ncclResult_t closeRecv(void* recvComm) {
  return withTransport("closeRecv", [&](net::Transport& t, Logger&) {
    if (recvComm != nullptr) t.closeRecv(static_cast<net::RecvComm*>(recvComm));
    return ncclSuccess;
  });
}

ncclResult_t closeListen(void* listenComm) {
  return withTransport("closeListen", [&](net::Transport& t, Logger&) {
    if (listenComm != nullptr) t.closeListen(static_cast<net::ListenComm*>(listenComm));
    return ncclSuccess;
  });
}

}  // namespace pilot::plugin::netabi
