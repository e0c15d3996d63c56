// Small POSIX helpers for the socket transport: an owning fd, socket setup, nonblocking
// send/recv that classify their outcome, a monotonic clock and random numbers.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <utility>

#include "pilot/core/result.h"
#include "pilot/net/interfaces.h"

namespace pilot::net {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

/// Outcome of one nonblocking transfer: bytes moved (> 0), or why none were.
struct IoResult {
  enum Kind { Moved, WouldBlock, Closed, Failed } kind;
  size_t bytes = 0;
  int error = 0;  ///< errno when Failed
};

/// sendmsg(MSG_NOSIGNAL | MSG_DONTWAIT) of an iovec list; EINTR is retried.
IoResult sendSome(int fd, const iovec* iov, int count);
/// readv on a nonblocking socket; EINTR is retried. Closed = orderly shutdown by the peer.
IoResult recvSome(int fd, const iovec* iov, int count);

/// A nonblocking, close-on-exec TCP socket of `family`.
Expected<Fd> openStreamSocket(int family);
/// TCP_NODELAY, keepalive and TCP_USER_TIMEOUT sized so a dead peer is an error within
/// `timeoutMs`, and (trafficClass >= 0) the IP TOS / IPv6 traffic class.
Status tuneStreamSocket(int fd, int family, int timeoutMs, int trafficClass);

/// The peer of a connected socket ("<unknown>" when it cannot be read).
std::string peerName(int fd);

/// Milliseconds of CLOCK_MONOTONIC.
int64_t nowMs();
/// The same clock at its coarse resolution (a few ms), cheaper to read on the data path.
int64_t coarseNowMs();
/// 64 random bits from getrandom(2); an error if the kernel cannot provide them.
Expected<uint64_t> random64();

/// strerror as a std::string (thread-safe).
std::string errnoText(int error);

}  // namespace pilot::net
