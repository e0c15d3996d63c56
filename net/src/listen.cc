// The listening side. Anything can connect to the port (a scanner, a stale peer, garbage), so a
// socket is only trusted after its 36-byte hello carried this listener's secret, and until then
// it costs a bounded slot that expires: nothing it sends is buffered beyond the hello, sizes
// anything, or disturbs the connections being assembled for real peers.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "socket_setup.h"

namespace pilot::net {
namespace {

constexpr int kAcceptsPerCall = 64;

}  // namespace

SocketListenComm::SocketListenComm(Fd listener, uint64_t secret, const SocketOptions& options,
                                   Logger& log)
    : listener_(std::move(listener)),
      secret_(secret),
      timeoutMs_(options.timeoutMs),
      threads_(options.threads),
      family_(AF_INET),
      log_(log) {
  pending_.reserve(kMaxPendingSockets);
  connections_.reserve(kMaxPendingConnections);
}

Expected<std::unique_ptr<SocketListenComm>> SocketListenComm::open(const NetInterface& nic,
                                                                   const SocketOptions& options,
                                                                   Logger& log, void* handle) {
  auto fd = openStreamSocket(nic.address.family());
  if (!fd) return Error{fd.error()};
  SocketAddress bound = nic.address;
  if (::bind(fd->get(), bound.get(), bound.length) != 0) {
    return Error{"bind to " + nic.address.toString() + " (" + nic.name + "): " + errnoText(errno)};
  }
  if (::listen(fd->get(), SOMAXCONN) != 0) return Error{"listen: " + errnoText(errno)};
  bound.length = sizeof(bound.storage);
  if (::getsockname(fd->get(), bound.get(), &bound.length) != 0) {
    return Error{"getsockname: " + errnoText(errno)};
  }
  auto secret = random64();
  if (!secret) return Error{secret.error()};

  wire::Handle h;
  h.family = static_cast<uint16_t>(bound.family());
  h.secret = *secret;
  if (bound.family() == AF_INET) {
    const auto* sin = reinterpret_cast<const sockaddr_in*>(&bound.storage);
    h.port = ntohs(sin->sin_port);
    std::memcpy(h.address, &sin->sin_addr, sizeof(sin->sin_addr));
  } else {
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(&bound.storage);
    h.port = ntohs(sin6->sin6_port);
    h.scopeId = sin6->sin6_scope_id;
    std::memcpy(h.address, &sin6->sin6_addr, sizeof(sin6->sin6_addr));
  }
  wire::encodeHandle(h, static_cast<uint8_t*>(handle));
  std::unique_ptr<SocketListenComm> comm(
      new SocketListenComm(std::move(*fd), *secret, options, log));
  comm->family_ = bound.family();
  return comm;
}

Expected<SocketRecvComm*> SocketListenComm::accept() {
  const int64_t now = nowMs();
  acceptSockets(now);
  for (size_t i = 0; i < pending_.size();) {
    if (readHello(i)) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (now > pending_[i].deadline) {
      drop(pending_[i].peer, "no hello in time");
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  for (size_t i = 0; i < connections_.size(); ++i) {
    PendingConnection& c = connections_[i];
    if (c.have == c.streams + 1) {
      Connection done;
      done.control = std::move(c.control);
      for (int s = 0; s < c.streams; ++s) done.data[s] = std::move(c.data[s]);
      done.streams = c.streams;
      done.chunkBytes = c.chunkBytes;
      done.eagerBytes = c.eagerBytes;
      done.threads = threads_;
      done.timeoutMs = timeoutMs_;
      done.peer = c.peer;
      connections_.erase(connections_.begin() + static_cast<std::ptrdiff_t>(i));
      return new SocketRecvComm(std::move(done), log_);
    }
  }
  connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                    [&](const PendingConnection& c) {
                                      if (now <= c.deadline) return false;
                                      drop(c.peer, "connection incomplete in time");
                                      return true;
                                    }),
                     connections_.end());
  return static_cast<SocketRecvComm*>(nullptr);
}

void SocketListenComm::acceptSockets(int64_t now) {
  for (int i = 0; i < kAcceptsPerCall; ++i) {
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a connection that died in the queue: try next time
    PendingSocket s;
    s.fd = Fd(fd);
    s.peer = peerName(fd);
    s.deadline = now + timeoutMs_;
    if (Status st = tuneStreamSocket(fd, family_, timeoutMs_, -1); !st) {
      drop(s.peer, st.error().c_str());
      continue;
    }
    if (pending_.size() >= kMaxPendingSockets) {  // a flood: the oldest stranger goes first
      drop(pending_.front().peer, "too many connections without a hello");
      pending_.erase(pending_.begin());
    }
    pending_.push_back(std::move(s));
  }
}

bool SocketListenComm::readHello(size_t i) {
  PendingSocket& s = pending_[i];
  // Exactly the hello and not a byte more: what follows belongs to the connection.
  iovec iov{s.hello.data() + s.got, s.hello.size() - s.got};
  IoResult r = recvSome(s.fd.get(), &iov, 1);
  if (r.kind == IoResult::WouldBlock) return false;
  if (r.kind == IoResult::Closed) {
    drop(s.peer, "closed before its hello");
    return true;
  }
  if (r.kind == IoResult::Failed) {
    drop(s.peer, errnoText(r.error).c_str());
    return true;
  }
  s.got += r.bytes;
  if (s.got < s.hello.size()) return false;
  wire::Hello hello;
  if (!wire::decodeHello(s.hello.data(), &hello)) {
    drop(s.peer, "not a nccl-pilot peer of this version");
  } else if (const char* problem = wire::helloProblem(hello, secret_, SocketOptions::kMaxChunk)) {
    drop(s.peer, problem);
  } else {
    placeSocket(s, hello);
  }
  return true;
}

void SocketListenComm::placeSocket(PendingSocket& socket, const wire::Hello& hello) {
  auto it = std::find_if(connections_.begin(), connections_.end(),
                         [&](const PendingConnection& c) { return c.nonce == hello.nonce; });
  if (it == connections_.end()) {
    if (connections_.size() >= kMaxPendingConnections) {
      drop(connections_.front().peer, "too many incomplete connections");
      connections_.erase(connections_.begin());
    }
    PendingConnection c;
    c.nonce = hello.nonce;
    c.streams = hello.streams;
    c.chunkBytes = hello.chunkBytes;
    c.eagerBytes = hello.eagerBytes;
    c.deadline = socket.deadline;
    c.peer = socket.peer;
    connections_.push_back(std::move(c));
    it = connections_.end() - 1;
  }
  if (it->streams != hello.streams || it->chunkBytes != hello.chunkBytes ||
      it->eagerBytes != hello.eagerBytes) {
    drop(socket.peer, "hello disagrees with its connection's other sockets");
    return;
  }
  Fd& slot = hello.index == 0 ? it->control : it->data[hello.index - 1];
  if (slot.valid()) {
    drop(socket.peer, "socket index sent twice");
    return;
  }
  slot = std::move(socket.fd);
  ++it->have;
  if (hello.index == 0) it->peer = socket.peer;  // the control socket names the connection
}

void SocketListenComm::drop(const std::string& peer, const char* why) {
  // INFO, not WARN: a port scanner must not be able to flood NCCL's warnings.
  PILOT_LOG(log_, Info, subsys::Net, "listener dropped connection from %s: %s", peer.c_str(), why);
}

}  // namespace pilot::net
