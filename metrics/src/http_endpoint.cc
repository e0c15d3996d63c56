#include "http_endpoint.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace pilot::metrics::detail {
namespace {

constexpr int kIoTimeoutMs = 1000;

std::string status(const char* line, const std::string& contentType, const std::string& body) {
  return std::string("HTTP/1.1 ") + line + "\r\nContent-Type: " + contentType +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

/// Waits for `events` on fd for what is left of the deadline; false on timeout or error.
bool waitFor(int fd, short events, int timeoutMs) {
  pollfd p{fd, events, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeoutMs);
  } while (n < 0 && errno == EINTR);
  return n > 0 && (p.revents & (events | POLLHUP)) != 0;
}

void sendAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitFor(fd, POLLOUT, kIoTimeoutMs)) return;
    } else {
      return;
    }
  }
}

}  // namespace

std::string httpResponse(const std::string& request, const std::function<std::string()>& body) {
  const size_t lineEnd = request.find("\r\n");
  const std::string line = request.substr(0, lineEnd);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
  if (lineEnd == std::string::npos || sp1 == std::string::npos || sp2 == std::string::npos ||
      line.compare(sp2 + 1, 7, "HTTP/1.") != 0) {
    return status("400 Bad Request", "text/plain", "bad request\n");
  }
  const std::string method = line.substr(0, sp1);
  std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  target = target.substr(0, target.find('?'));
  if (method != "GET" && method != "HEAD") {
    return status("405 Method Not Allowed", "text/plain", "only GET /metrics\n");
  }
  std::string response = target == "/metrics"
                             ? status("200 OK", "text/plain; version=0.0.4; charset=utf-8", body())
                             : status("404 Not Found", "text/plain", "try /metrics\n");
  if (method == "HEAD") response.resize(response.find("\r\n\r\n") + 4);  // headers only
  return response;
}

Expected<std::unique_ptr<HttpEndpoint>> HttpEndpoint::listen(const std::string& bind, int port) {
  sockaddr_storage address{};
  socklen_t length = 0;
  int family = AF_INET;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (inet_pton(AF_INET, bind.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, bind.c_str(), &v6->sin6_addr) == 1) {
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    length = sizeof(sockaddr_in6);
  } else {
    return Error{"'" + bind + "' is not an IPv4 or IPv6 address"};
  }
  const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error{std::string("socket: ") + std::strerror(errno)};
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, 16) != 0) {
    const int saved = errno;
    ::close(fd);
    return Error{"cannot listen on " + bind + ":" + std::to_string(port) + ": " +
                 std::strerror(saved)};
  }
  sockaddr_storage bound{};
  socklen_t boundLength = sizeof bound;
  int boundPort = port;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &boundLength) == 0) {
    boundPort = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                        : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  }
  return std::unique_ptr<HttpEndpoint>(new HttpEndpoint(fd, boundPort));
}

HttpEndpoint::~HttpEndpoint() {
  ::close(fd_);
}

void HttpEndpoint::serveOne(const std::function<std::string()>& body) {
  const int client = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (client < 0) return;
  std::string request;
  char buffer[1024];
  // One deadline for the whole request, however the client trickles it in.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kIoTimeoutMs);
  while (request.size() < kMaxRequestBytes && request.find("\r\n\r\n") == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    const ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
    if (n > 0) {
      request.append(buffer, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitFor(client, POLLIN, static_cast<int>(left.count()))) break;
    } else {
      break;
    }
  }
  sendAll(client, httpResponse(request, body));
  ::close(client);
}

}  // namespace pilot::metrics::detail
