// A plain HTTP/1.0 GET for `hang --prometheus`: Prometheus's HTTP API on a URL the user gives
// (http:// only; TLS and auth belong to a proxy in front). Bounded: the answer is at most
// kMostHttpBytes, and every connect, send and receive gives up after the timeout.
#pragma once

#include <cstddef>
#include <string>

#include "pilot/core/result.h"

namespace pilot::cli::hang {

constexpr size_t kMostHttpBytes = size_t{512} << 20;

/// The body of `url` (http://host[:port]/path?query) when it answers 200; else an Error saying
/// why ("cannot connect to host:port: ...", "HTTP 503 from ...").
Expected<std::string> httpGet(const std::string& url, int timeoutS = 30);

/// `text` with every byte outside [A-Za-z0-9-_.~] written as %XX, for a query string.
std::string urlEncoded(const std::string& text);

}  // namespace pilot::cli::hang
