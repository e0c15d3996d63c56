// TEST-ONLY net plugin for netbench's tests. Deliberately simple: one nonblocking TCP socket
// per connection over 127.0.0.1, each message a 64-bit length then the bytes, requests kept
// in posting order and progressed only inside test(); no threads. It also checks that its
// caller keeps NCCL's contract (same handle across connect retries, test() only on live
// requests, *request written by the caller's shim rules) and fails loudly when it does not.
//
// Built three times (see CMakeLists.txt):
//   NETBENCH_TEST_ABI=6   exports ncclNetPlugin_v6 only (int sizes, no device handle)
//   NETBENCH_TEST_ABI=12  exports ncclNetPlugin_v12 only (per-comm init, setNetAttr)
//   + NETBENCH_TEST_CORRUPT: flips byte 1000 of the third message longer than that which each
//     connection receives
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "abi/net_v12.h"
#include "abi/net_v6.h"

using namespace pilot::nccl;

namespace {

constexpr uint64_t kMagic = 0x6e62746573747031;  // "nbtestp1"
constexpr int kMaxRequests = NCCL_NET_MAX_REQUESTS;

ncclDebugLogger_t logger = nullptr;

#define TEST_WARN(...) \
  (logger ? logger(NCCL_LOG_WARN, 0, __FILE__, __LINE__, __VA_ARGS__) : (void)0)

/// Lives in NCCL's 128-byte handle, including the connect state between retries.
struct Handle {
  uint64_t magic;
  sockaddr_in addr;
  int stage;  // 0: nothing yet, 1: connect in progress on fd
  int fd;
};
static_assert(sizeof(Handle) <= NCCL_NET_HANDLE_MAXSIZE);

struct Comm;

struct Request {
  Comm* comm = nullptr;
  bool used = false;
  bool send = false;
  bool done = false;
  unsigned char* data = nullptr;
  uint64_t capacity = 0;  // the receive's posted size
  uint64_t length = 0;    // on the wire
  uint64_t moved = 0;     // header + payload bytes so far
};

struct Comm {
  int fd = -1;
  Request requests[kMaxRequests];
  Request* fifo[kMaxRequests] = {};  // in posting order, not yet complete
  int head = 0, count = 0;
  bool failed = false;
  uint64_t received = 0;  // messages longer than the corruption offset
};

struct ListenComm {
  int fd = -1;
};

int nonblockingSocket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return fd;
}

// One step of the oldest incomplete request; false on a socket failure.
bool advance(Comm* c, Request* r) {
  unsigned char header[8];
  std::memcpy(header, &r->length, 8);
  while (r->moved < 8 + r->length) {
    ssize_t n;
    if (r->moved < 8) {
      n = r->send ? ::send(c->fd, header + r->moved, 8 - r->moved, MSG_NOSIGNAL)
                  : ::recv(c->fd, reinterpret_cast<unsigned char*>(&r->length) + r->moved,
                           8 - r->moved, 0);
    } else {
      const uint64_t off = r->moved - 8;
      n = r->send ? ::send(c->fd, r->data + off, r->length - off, MSG_NOSIGNAL)
                  : ::recv(c->fd, r->data + off, r->length - off, 0);
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n <= 0) return false;
    r->moved += static_cast<uint64_t>(n);
    if (!r->send && r->moved == 8 && r->length > r->capacity) {
      TEST_WARN("loopback test plugin: %lu-byte message into a %lu-byte receive",
                static_cast<unsigned long>(r->length), static_cast<unsigned long>(r->capacity));
      return false;
    }
  }
  r->done = true;
#ifdef NETBENCH_TEST_CORRUPT
  if (!r->send && r->length > 1000 && ++c->received == 3) r->data[1000] ^= 0xff;
#endif
  return true;
}

bool progress(Comm* c) {
  while (c->count > 0 && !c->failed) {
    Request* r = c->fifo[c->head];
    if (!advance(c, r)) c->failed = true;
    if (!r->done) break;
    c->head = (c->head + 1) % kMaxRequests;
    --c->count;
  }
  return !c->failed;
}

Request* post(Comm* c, bool send, void* data, uint64_t size) {
  if (c->count == kMaxRequests) return nullptr;
  for (Request& r : c->requests) {
    if (r.used) continue;
    r = Request{c, true, send, false, static_cast<unsigned char*>(data), size, send ? size : 0, 0};
    c->fifo[(c->head + c->count) % kMaxRequests] = &r;
    ++c->count;
    return &r;
  }
  return nullptr;
}

ncclResult_t devices(int* ndev) {
  *ndev = 1;
  return ncclSuccess;
}

template <typename Props>
ncclResult_t fillProperties(int dev, Props* p) {
  if (dev != 0) return ncclInvalidArgument;
  std::memset(p, 0, sizeof(*p));
  p->name = const_cast<char*>("lo");
  p->pciPath = nullptr;
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = 10000;
  p->maxComms = 1024;
  p->maxRecvs = 1;
  return ncclSuccess;
}

ncclResult_t listenImpl(int dev, void* opaque, void** listenComm) {
  *listenComm = nullptr;
  const int fd = nonblockingSocket();
  if (fd < 0) return ncclSystemError;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return ncclSystemError;
  }
  Handle h{kMagic, addr, 0, -1};
  std::memset(opaque, 0, NCCL_NET_HANDLE_MAXSIZE);
  std::memcpy(opaque, &h, sizeof(h));
  *listenComm = new ListenComm{fd};
  return ncclSuccess;
}

// Nonblocking: the state lives in the handle, which NCCL passes back unchanged on a retry.
ncclResult_t connectImpl(void* opaque, void** sendComm) {
  *sendComm = nullptr;
  Handle h;
  std::memcpy(&h, opaque, sizeof(h));
  if (h.magic != kMagic) return ncclInvalidArgument;
  if (h.stage == 0) {
    h.fd = nonblockingSocket();
    if (h.fd < 0) return ncclSystemError;
    if (::connect(h.fd, reinterpret_cast<sockaddr*>(&h.addr), sizeof(h.addr)) != 0 &&
        errno != EINPROGRESS) {
      ::close(h.fd);
      return ncclSystemError;
    }
    h.stage = 1;
    std::memcpy(opaque, &h, sizeof(h));
    return ncclSuccess;  // come back later
  }
  pollfd p{h.fd, POLLOUT, 0};
  if (::poll(&p, 1, 0) == 0) return ncclSuccess;
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(h.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
    TEST_WARN("loopback test plugin: connect failed: %s", std::strerror(err));
    return ncclSystemError;
  }
  Comm* c = new Comm;
  c->fd = h.fd;
  h.stage = 2;
  std::memcpy(opaque, &h, sizeof(h));
  *sendComm = c;
  return ncclSuccess;
}

ncclResult_t acceptImpl(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  auto* l = static_cast<ListenComm*>(listenComm);
  const int fd = ::accept4(l->fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return errno == EAGAIN ? ncclSuccess : ncclSystemError;
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  Comm* c = new Comm;
  c->fd = fd;
  *recvComm = c;
  return ncclSuccess;
}

ncclResult_t regMrImpl(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (type != NCCL_PTR_HOST) return ncclInvalidArgument;
  *mhandle = comm;  // anything non-NULL
  return ncclSuccess;
}

ncclResult_t regMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) {
  return ncclInternalError;
}

ncclResult_t deregMr(void*, void*) {
  return ncclSuccess;
}

ncclResult_t isendImpl(void* sendComm, void* data, size_t size, void** request) {
  Comm* c = static_cast<Comm*>(sendComm);
  *request = post(c, true, data, size);
  return ncclSuccess;
}

ncclResult_t irecvImpl(void* recvComm, int n, void** data, size_t size, void** request,
                       bool optionalAllowed) {
  if (n != 1) return ncclInvalidArgument;  // maxRecvs is 1
  if (*request == reinterpret_cast<void*>(0x1) && !optionalAllowed) {
    TEST_WARN("loopback test plugin: a v6 irecv saw NCCL_NET_OPTIONAL_RECV_COMPLETION");
    return ncclInternalError;
  }
  *request = post(static_cast<Comm*>(recvComm), false, data[0], size);
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  if (r == nullptr || !r->used) {
    TEST_WARN("loopback test plugin: test() on a request that is not live");
    return ncclInternalError;
  }
  if (!progress(r->comm)) return ncclSystemError;
  *done = r->done ? 1 : 0;
  if (r->done) {
    if (sizes != nullptr) sizes[0] = static_cast<int>(r->length);
    r->used = false;  // test() reported it: it may be reused
  }
  return ncclSuccess;
}

ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;
  return ncclSuccess;
}

ncclResult_t closeComm(void* comm) {
  Comm* c = static_cast<Comm*>(comm);
  if (c != nullptr) {
    ::close(c->fd);
    delete c;
  }
  return ncclSuccess;
}

ncclResult_t closeListen(void* listenComm) {
  auto* l = static_cast<ListenComm*>(listenComm);
  ::close(l->fd);
  delete l;
  return ncclSuccess;
}

}  // namespace

#define EXPORT __attribute__((visibility("default")))

#if NETBENCH_TEST_ABI == 6

namespace {
ncclResult_t initV6(ncclDebugLogger_t log) {
  logger = log;
  return ncclSuccess;
}
ncclResult_t regMrV6(void* comm, void* data, int size, int type, void** mhandle) {
  return size < 0 ? ncclInvalidArgument
                  : regMrImpl(comm, data, static_cast<size_t>(size), type, mhandle);
}
ncclResult_t listenV6(int dev, void* h, void** l) {
  return listenImpl(dev, h, l);
}
ncclResult_t connectV6(int, void* h, void** s) {
  return connectImpl(h, s);
}
ncclResult_t acceptV6(void* l, void** r) {
  return acceptImpl(l, r);
}
ncclResult_t isendV6(void* s, void* d, int size, int, void*, void** req) {
  return size < 0 ? ncclInvalidArgument : isendImpl(s, d, static_cast<size_t>(size), req);
}
ncclResult_t irecvV6(void* r, int n, void** d, int* sizes, int*, void**, void** req) {
  return irecvImpl(r, n, d, static_cast<size_t>(sizes[0]), req, false);
}
}  // namespace

extern "C" {
EXPORT ncclNet_v6_t ncclNetPlugin_v6 = {
    "LoopbackTest", initV6,    devices,   fillProperties<ncclNetProperties_v6_t>,
    listenV6,       connectV6, acceptV6,  regMrV6,
    regMrDmaBuf,    deregMr,   isendV6,   irecvV6,
    iflush,         test,      closeComm, closeComm,
    closeListen};
}

#elif NETBENCH_TEST_ABI == 12

namespace {
int contextToken;
ncclResult_t initV12(void** ctx, uint64_t, ncclNetCommConfig_v12_t*, ncclDebugLogger_t log,
                     ncclProfilerCallback_t) {
  logger = log;
  *ctx = &contextToken;
  return ncclSuccess;
}
ncclResult_t propertiesV12(int dev, ncclNetProperties_v12_t* p) {
  if (ncclResult_t rc = fillProperties(dev, p); rc != ncclSuccess) return rc;
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = dev;
  p->maxP2pBytes = MAX_NET_SIZE;
  p->maxCollBytes = MAX_COLLNET_SIZE;
  p->maxMultiRequestSize = 1;
  p->railId = p->planeId = NCCL_NET_ID_UNDEF;
  return ncclSuccess;
}
ncclResult_t listenV12(void* ctx, int dev, void* h, void** l) {
  if (ctx != &contextToken) return ncclInvalidArgument;
  return listenImpl(dev, h, l);
}
ncclResult_t connectV12(void* ctx, int, void* h, void** s, ncclNetDeviceHandle_v12_t** dh) {
  if (ctx != &contextToken || dh == nullptr || *dh != nullptr) return ncclInvalidArgument;
  return connectImpl(h, s);
}
ncclResult_t acceptV12(void* l, void** r, ncclNetDeviceHandle_v12_t** dh) {
  if (dh == nullptr || *dh != nullptr) return ncclInvalidArgument;
  return acceptImpl(l, r);
}
ncclResult_t isendV12(void* s, void* d, size_t size, int, void*, void*, void** req) {
  return isendImpl(s, d, size, req);
}
ncclResult_t irecvV12(void* r, int n, void** d, size_t* sizes, int*, void**, void**, void** req) {
  return irecvImpl(r, n, d, sizes[0], req, true);
}
ncclResult_t finalizeV12(void* ctx) {
  return ctx == &contextToken ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t setNetAttrV12(void* ctx, ncclNetAttr_v12_t*) {
  return ctx == &contextToken ? ncclSuccess : ncclInvalidArgument;
}
}  // namespace

extern "C" {
EXPORT ncclNet_v12_t ncclNetPlugin_v12 = {"LoopbackTest",
                                          initV12,
                                          devices,
                                          propertiesV12,
                                          listenV12,
                                          connectV12,
                                          acceptV12,
                                          regMrImpl,
                                          regMrDmaBuf,
                                          deregMr,
                                          isendV12,
                                          irecvV12,
                                          iflush,
                                          test,
                                          closeComm,
                                          closeComm,
                                          closeListen,
                                          nullptr /*getDeviceMr*/,
                                          nullptr /*irecvConsumed*/,
                                          nullptr /*makeVDevice*/,
                                          finalizeV12,
                                          setNetAttrV12};
}

#else
#error "NETBENCH_TEST_ABI must be 6 or 12"
#endif
