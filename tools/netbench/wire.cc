#include "netbench/wire.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "pilot/core/text.h"

namespace pilot::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Larger than any message netbench sends (64 handles of 128 bytes in hex is 16 KiB): a
// length beyond it is garbage, not something to allocate.
constexpr uint32_t kMaxFrame = 1u << 20;

std::string errnoText(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

Clock::time_point deadlineAfter(double seconds) {
  return Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

int msLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

std::string addressText(const sockaddr* addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (addr->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return host;
}

// Reads or writes exactly n bytes before the deadline.
Status transfer(int fd, char* data, size_t n, bool write, Clock::time_point deadline) {
  size_t done = 0;
  while (done < n) {
    pollfd p{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    const int ready = ::poll(&p, 1, msLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Error{errnoText("poll")};
    if (ready == 0) return Error{"timed out waiting for the peer"};
    const ssize_t r = write ? ::send(fd, data + done, n - done, MSG_NOSIGNAL)
                            : ::recv(fd, data + done, n - done, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return Error{errnoText(write ? "send" : "recv")};
    if (r == 0) return Error{"the peer closed the connection"};
    done += static_cast<size_t>(r);
  }
  return Status::success();
}

}  // namespace

WireSocket& WireSocket::operator=(WireSocket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    peer_ = std::move(o.peer_);
    o.fd_ = -1;
  }
  return *this;
}

WireSocket::~WireSocket() {
  if (fd_ >= 0) ::close(fd_);
}

Expected<WireSocket> WireSocket::connectTo(const std::string& host, int port, double timeoutS) {
  const auto deadline = deadlineAfter(timeoutS);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rc != 0) {
    return Error{"cannot resolve " + host + ": " + gai_strerror(rc)};
  }
  std::string lastError = "no address";
  for (;;) {
    for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) {
        lastError = errnoText("socket");
        continue;
      }
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        WireSocket s(fd);
        s.setPeer(addressText(a->ai_addr));
        ::freeaddrinfo(list);
        return s;
      }
      lastError = errnoText("connect");
      ::close(fd);
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::freeaddrinfo(list);
  return Error{"cannot reach " + host + ":" + service + " (" + lastError + ")"};
}

Status WireSocket::send(const nlohmann::json& message) {
  const std::string body = message.dump();
  const uint32_t length = htonl(static_cast<uint32_t>(body.size()));
  std::string frame(reinterpret_cast<const char*>(&length), sizeof(length));
  frame += body;
  // A frame is small; the peer reads it promptly, or is gone.
  return transfer(fd_, frame.data(), frame.size(), true, deadlineAfter(30));
}

Expected<nlohmann::json> WireSocket::receive(double timeoutS) {
  const auto deadline = deadlineAfter(timeoutS);
  uint32_t length = 0;
  if (Status s = transfer(fd_, reinterpret_cast<char*>(&length), sizeof(length), false, deadline);
      !s.ok()) {
    return Error{s.error()};
  }
  length = ntohl(length);
  if (length == 0 || length > kMaxFrame) {
    return Error{"malformed bootstrap message (length " + std::to_string(length) + ")"};
  }
  std::string body(length, '\0');
  if (Status s = transfer(fd_, body.data(), body.size(), false, deadline); !s.ok()) {
    return Error{s.error()};
  }
  auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("type") ||
      !parsed["type"].is_string()) {
    return Error{"malformed bootstrap message"};
  }
  return parsed;
}

bool WireSocket::readable(int timeoutMs) const {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, timeoutMs) > 0;
}

WireListener& WireListener::operator=(WireListener&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

WireListener::~WireListener() {
  if (fd_ >= 0) ::close(fd_);
}

Expected<WireListener> WireListener::listenOn(int port) {
  const int one = 1, zero = 0;
  // Dual-stack first; a host without IPv6 falls back to IPv4.
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && ::listen(fd, 4) == 0) {
      return WireListener(fd);
    }
    ::close(fd);
  }
  fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error{errnoText("socket")};
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 4) != 0) {
    const std::string why = errnoText("cannot listen on port " + std::to_string(port));
    ::close(fd);
    return Error{why};
  }
  return WireListener(fd);
}

Expected<WireListener> WireListener::listenLoopback() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error{errnoText("socket")};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 4) != 0) {
    const std::string why = errnoText("cannot listen on 127.0.0.1");
    ::close(fd);
    return Error{why};
  }
  return WireListener(fd);
}

WireListener WireListener::adopt(int fd) {
  return WireListener(fd);
}

Expected<WireSocket> WireListener::accept(double timeoutS) {
  const auto deadline = deadlineAfter(timeoutS);
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, msLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Error{errnoText("poll")};
    if (ready == 0) {
      return Error{"no peer connected within " + std::to_string(static_cast<int>(timeoutS)) + " s"};
    }
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    const int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
    if (fd < 0 && (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED)) continue;
    if (fd < 0) return Error{errnoText("accept")};
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    WireSocket s(fd);
    s.setPeer(addressText(reinterpret_cast<sockaddr*>(&addr)));
    return s;
  }
}

int WireListener::port() const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

int WireListener::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

Expected<std::pair<std::string, int>> parseHostPort(const std::string& textValue) {
  std::string host, port;
  if (!textValue.empty() && textValue[0] == '[') {
    const size_t close = textValue.find("]:");
    if (close == std::string::npos)
      return Error{"expected [ADDRESS]:PORT, got '" + textValue + "'"};
    host = textValue.substr(1, close - 1);
    port = textValue.substr(close + 2);
  } else {
    const size_t colon = textValue.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return Error{"expected HOST:PORT, got '" + textValue + "'"};
    }
    host = textValue.substr(0, colon);
    port = textValue.substr(colon + 1);
  }
  auto number = text::parseUnsigned(port);
  if (!number || *number == 0 || *number > 65535) {
    return Error{"bad port in '" + textValue + "'"};
  }
  return std::make_pair(host, static_cast<int>(*number));
}

}  // namespace pilot::cli
