#include "hang/http_get.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace pilot::cli::hang {
namespace {

struct Url {
  std::string host, port = "80", target = "/";
};

Expected<Url> parseUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return Error{url + ": only http:// URLs (put TLS in a proxy)"};
  Url u;
  const std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) u.target = rest.substr(slash);
  const size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    u.host = authority.substr(0, colon);
    u.port = authority.substr(colon + 1);
  } else {
    u.host = authority;
  }
  if (!u.host.empty() && u.host.front() == '[' && u.host.back() == ']')
    u.host = u.host.substr(1, u.host.size() - 2);
  if (u.host.empty()) return Error{url + ": no host"};
  return u;
}

}  // namespace

std::string urlEncoded(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

Expected<std::string> httpGet(const std::string& url, int timeoutS) {
  Expected<Url> u = parseUrl(url);
  if (!u.ok()) return Error{u.error()};
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string where = u->host + ":" + u->port;
  if (const int rc = ::getaddrinfo(u->host.c_str(), u->port.c_str(), &hints, &found); rc != 0)
    return Error{"cannot resolve " + where + ": " + ::gai_strerror(rc)};
  int fd = -1;
  std::string why = "no address";
  const timeval timeout{timeoutS, 0};
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return Error{"cannot connect to " + where + ": " + why};
  const std::string request = "GET " + u->target + " HTTP/1.0\r\nHost: " + where +
                              "\r\nAccept: application/json\r\nConnection: close\r\n\r\n";
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return Error{"cannot send to " + where + ": " + std::strerror(errno)};
    }
    sent += static_cast<size_t>(n);
  }
  std::string answer;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return Error{"no answer from " + where + ": " + std::strerror(errno)};
    }
    if (n == 0) break;
    answer.append(buffer, static_cast<size_t>(n));
    if (answer.size() > kMostHttpBytes) {
      ::close(fd);
      return Error{where + " answered more than " + std::to_string(kMostHttpBytes >> 20) + " MiB"};
    }
  }
  ::close(fd);
  const size_t body = answer.find("\r\n\r\n");
  if (answer.rfind("HTTP/", 0) != 0 || body == std::string::npos)
    return Error{where + " did not answer HTTP"};
  const size_t space = answer.find(' ');
  const std::string status = answer.substr(space + 1, 3);
  if (status != "200")
    return Error{"HTTP " + status + " from " + where + ": " + answer.substr(body + 4, 200)};
  return answer.substr(body + 4);
}

}  // namespace pilot::cli::hang
