// A minimal HTTP/1.x endpoint for Prometheus to scrape (NCCL_PILOT_METRICS_PORT): GET /metrics
// answers the last textfile, anything else 404 (or 405 for other methods). One request per
// connection, served on the exporter thread; a request is read for at most 8 KiB and 1 s, so
// a slow or hostile client cannot hold the exporter for long.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "pilot/core/result.h"

namespace pilot::metrics::detail {

class HttpEndpoint {
 public:
  /// Listens on bind:port (an IPv4 or IPv6 address; port 0 picks a free one).
  static Expected<std::unique_ptr<HttpEndpoint>> listen(const std::string& bind, int port);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  int fd() const { return fd_; }
  int port() const { return port_; }

  /// Accepts one waiting connection, if any, and answers it with body() for /metrics.
  void serveOne(const std::function<std::string()>& body);

  static constexpr size_t kMaxRequestBytes = 8192;

 private:
  HttpEndpoint(int fd, int port) : fd_(fd), port_(port) {}
  int fd_;
  int port_;
};

/// The response to a request's first bytes (status line, headers, body), for tests too.
std::string httpResponse(const std::string& request, const std::function<std::string()>& body);

}  // namespace pilot::metrics::detail
