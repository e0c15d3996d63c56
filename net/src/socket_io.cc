#include "socket_io.h"

#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pilot::net {

void Fd::reset() {
  if (fd_ >= 0) {
    // The fd is gone whatever close reports (Linux frees it even on EINTR): never retry.
    (void)::close(fd_);
    fd_ = -1;
  }
}

IoResult sendSome(int fd, const iovec* iov, int count) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(count);
  for (;;) {
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) return {IoResult::Moved, static_cast<size_t>(n), 0};
    if (n == 0) return {IoResult::WouldBlock, 0, 0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {IoResult::WouldBlock, 0, 0};
    return {IoResult::Failed, 0, errno};
  }
}

IoResult recvSome(int fd, const iovec* iov, int count) {
  for (;;) {
    ssize_t n = ::readv(fd, iov, count);
    if (n > 0) return {IoResult::Moved, static_cast<size_t>(n), 0};
    if (n == 0) return {IoResult::Closed, 0, 0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {IoResult::WouldBlock, 0, 0};
    return {IoResult::Failed, 0, errno};
  }
}

Expected<Fd> openStreamSocket(int family) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) return Error{"socket: " + errnoText(errno)};
  return Fd(fd);
}

Status tuneStreamSocket(int fd, int family, int timeoutMs, int trafficClass) {
  auto set = [fd](int level, int name, int value, const char* what) -> Status {
    if (::setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
      return Error{std::string("setsockopt ") + what + ": " + errnoText(errno)};
    }
    return Status::success();
  };
  // Latency of small messages and control records matters more than packet count.
  if (Status s = set(IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY"); !s) return s;
  // A peer whose host died sends no FIN: keepalive finds it when the link is idle, the user
  // timeout when data stays unacknowledged. idle + 4 probes * interval ~= timeout.
  const int seconds = std::max(1, timeoutMs / 1000);
  if (Status s = set(SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE"); !s) return s;
  if (Status s = set(IPPROTO_TCP, TCP_KEEPIDLE, std::max(1, seconds / 3), "TCP_KEEPIDLE"); !s) {
    return s;
  }
  if (Status s = set(IPPROTO_TCP, TCP_KEEPINTVL, std::max(1, seconds / 6), "TCP_KEEPINTVL"); !s) {
    return s;
  }
  if (Status s = set(IPPROTO_TCP, TCP_KEEPCNT, 4, "TCP_KEEPCNT"); !s) return s;
  if (Status s = set(IPPROTO_TCP, TCP_USER_TIMEOUT, timeoutMs, "TCP_USER_TIMEOUT"); !s) return s;
  if (trafficClass >= 0) {
    const int value = trafficClass & 0xff;
    if (family == AF_INET6) return set(IPPROTO_IPV6, IPV6_TCLASS, value, "IPV6_TCLASS");
    return set(IPPROTO_IP, IP_TOS, value, "IP_TOS");
  }
  return Status::success();
}

std::string peerName(int fd) {
  SocketAddress peer;
  peer.length = sizeof(peer.storage);
  if (::getpeername(fd, peer.get(), &peer.length) != 0) return "<unknown>";
  return peer.toString();
}

int64_t nowMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int64_t coarseNowMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

Expected<uint64_t> random64() {
  uint64_t value = 0;
  size_t got = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(&value);
  while (got < sizeof(value)) {
    ssize_t n = ::getrandom(bytes + got, sizeof(value) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{"getrandom: " + errnoText(errno)};
    }
    got += static_cast<size_t>(n);
  }
  return value;
}

std::string errnoText(int error) {
  char buffer[128];
  // GNU strerror_r returns the message pointer (maybe a static string, maybe buffer).
  const char* text = ::strerror_r(error, buffer, sizeof(buffer));
  return text != nullptr ? std::string(text) : "errno " + std::to_string(error);
}

}  // namespace pilot::net
