// The connecting side: the control socket and every data stream connect in parallel, each
// sends its hello (secret, index, stream count, chunk size, eager limit, connection nonce)
// and the connection is ready once all hellos are written. Nothing waits: NCCL calls connect()
// again.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>

#include "socket_setup.h"

namespace pilot::net {
namespace {

/// A refused or reset attempt is retried after this long (the listener's backlog may be full).
constexpr int64_t kRetryDelayMs = 20;

bool retryable(int error) {
  return error == ECONNREFUSED || error == ETIMEDOUT || error == ECONNRESET ||
         error == EHOSTUNREACH || error == ENETUNREACH || error == EAGAIN;
}

}  // namespace

Expected<std::unique_ptr<PendingConnect>> PendingConnect::start(const void* handle,
                                                                const SocketOptions& options,
                                                                const ConnectOptions& connect) {
  wire::Handle h;
  if (!wire::decodeHandle(static_cast<const uint8_t*>(handle), &h)) {
    return Error{"connect: the handle was not made by this transport's listen"};
  }
  std::unique_ptr<PendingConnect> p(new PendingConnect());
  if (h.family == AF_INET) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&p->peer_.storage);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(h.port);
    std::memcpy(&sin->sin_addr, h.address, sizeof(sin->sin_addr));
    p->peer_.length = sizeof(sockaddr_in);
  } else if (h.family == AF_INET6) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&p->peer_.storage);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(h.port);
    sin6->sin6_scope_id = h.scopeId;
    std::memcpy(&sin6->sin6_addr, h.address, sizeof(sin6->sin6_addr));
    p->peer_.length = sizeof(sockaddr_in6);
  } else {
    return Error{"connect: the handle holds address family " + std::to_string(h.family)};
  }
  auto nonce = random64();
  if (!nonce) return Error{nonce.error()};
  p->peerName_ = p->peer_.toString();
  p->streams_ = options.streams;
  p->chunkBytes_ = options.chunkBytes;
  p->eagerBytes_ = options.eagerBytes;
  p->threads_ = options.threads;
  p->timeoutMs_ = options.timeoutMs;
  p->trafficClass_ = connect.trafficClass;
  p->deadline_ = nowMs() + options.timeoutMs;
  for (int i = 0; i <= p->streams_; ++i) {
    wire::Hello hello;
    hello.index = static_cast<uint16_t>(i);
    hello.streams = static_cast<uint16_t>(p->streams_);
    hello.chunkBytes = static_cast<uint32_t>(options.chunkBytes);
    hello.eagerBytes = static_cast<uint32_t>(p->eagerBytes_);
    hello.secret = h.secret;
    hello.nonce = *nonce;
    wire::encodeHello(hello, p->sockets_[i].hello.data());
  }
  return p;
}

Status PendingConnect::startSocket(Socket& s, int64_t now) {
  s.fd.reset();
  auto fd = openStreamSocket(peer_.family());
  if (!fd) return Error{fd.error()};
  if (Status st = tuneStreamSocket(fd->get(), peer_.family(), timeoutMs_, trafficClass_); !st) {
    return st;
  }
  s.fd = std::move(*fd);
  s.sent = 0;
  if (::connect(s.fd.get(), peer_.get(), peer_.length) == 0) {
    s.stage = Socket::Stage::Hello;
  } else if (errno == EINPROGRESS || errno == EINTR) {
    s.stage = Socket::Stage::Connecting;
  } else if (retryable(errno)) {
    s.fd.reset();
    s.stage = Socket::Stage::Idle;
    s.retryAt = now + kRetryDelayMs;
  } else {
    return Error{"connect to " + peerName_ + ": " + errnoText(errno)};
  }
  return Status::success();
}

Expected<bool> PendingConnect::progress() {
  const int64_t now = nowMs();
  const int count = streams_ + 1;
  pollfd polls[wire::kMaxStreams + 1];
  int polled = 0;
  for (int i = 0; i < count; ++i) {
    Socket& s = sockets_[i];
    if (s.stage == Socket::Stage::Idle && now >= s.retryAt) {
      if (Status st = startSocket(s, now); !st) return Error{st.error()};
    }
    if (s.stage == Socket::Stage::Connecting) polls[polled++] = {s.fd.get(), POLLOUT, 0};
  }
  if (polled > 0 && ::poll(polls, static_cast<nfds_t>(polled), 0) < 0 && errno != EINTR) {
    return Error{"poll: " + errnoText(errno)};
  }
  int done = 0;
  for (int i = 0, p = 0; i < count; ++i) {
    Socket& s = sockets_[i];
    if (s.stage == Socket::Stage::Connecting) {
      const short events = polls[p++].revents;
      if (events == 0) continue;
      int error = 0;
      socklen_t length = sizeof(error);
      if (::getsockopt(s.fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
      if (error == 0) {
        s.stage = Socket::Stage::Hello;
      } else if (retryable(error)) {
        s.fd.reset();
        s.stage = Socket::Stage::Idle;
        s.retryAt = now + kRetryDelayMs;
      } else {
        return Error{"connect to " + peerName_ + ": " + errnoText(error)};
      }
    }
    if (s.stage == Socket::Stage::Hello) {
      iovec iov{s.hello.data() + s.sent, s.hello.size() - s.sent};
      IoResult r = sendSome(s.fd.get(), &iov, 1);
      if (r.kind == IoResult::Failed) {
        return Error{"connect to " + peerName_ + ": hello: " + errnoText(r.error)};
      }
      s.sent += r.bytes;
      if (s.sent == s.hello.size()) s.stage = Socket::Stage::Done;
    }
    if (s.stage == Socket::Stage::Done) ++done;
  }
  if (done == count) return true;
  if (now > deadline_) {
    return Error{"connect to " + peerName_ + ": not established within " +
                 std::to_string(timeoutMs_) + " ms"};
  }
  return false;
}

Connection PendingConnect::take() {
  Connection c;
  c.control = std::move(sockets_[0].fd);
  for (int i = 0; i < streams_; ++i) c.data[i] = std::move(sockets_[i + 1].fd);
  c.streams = streams_;
  c.chunkBytes = chunkBytes_;
  c.eagerBytes = eagerBytes_;
  c.threads = threads_;
  c.timeoutMs = timeoutMs_;
  c.peer = peerName_;
  return c;
}

}  // namespace pilot::net
