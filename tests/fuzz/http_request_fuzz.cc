// libFuzzer target: arbitrary bytes as the request the profiler's HTTP endpoint reads from the
// network (NCCL_PILOT_METRICS_PORT). For every input the answer is a well-formed HTTP/1.1
// response with one of the statuses the endpoint uses, a Content-Length equal to its body, and
// the textfile only for GET /metrics. Any violation aborts with the details.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "http_endpoint.h"

namespace {

[[noreturn]] void die(const std::string& what, const std::string& request) {
  std::fprintf(stderr, "http_request_fuzz: %s (request of %zu bytes)\n", what.c_str(),
               request.size());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string request(reinterpret_cast<const char*>(data), size);
  const std::string body = "nccl_pilot_build_info 1\n";
  const std::string r = pilot::metrics::detail::httpResponse(request, [&] { return body; });
  if (r.rfind("HTTP/1.1 ", 0) != 0) die("no status line", request);
  const std::string status = r.substr(9, 3);
  if (status != "200" && status != "400" && status != "404" && status != "405") {
    die("unexpected status " + status, request);
  }
  const size_t headersEnd = r.find("\r\n\r\n");
  if (headersEnd == std::string::npos) die("no end of headers", request);
  const size_t length = r.find("Content-Length: ");
  if (length == std::string::npos || length > headersEnd) die("no Content-Length", request);
  const unsigned long declared = std::strtoul(r.c_str() + length + 16, nullptr, 10);
  // HEAD answers headers only, whatever the target; a request line that does not parse is
  // answered 400 with a body, its method unknown.
  const bool head = request.rfind("HEAD ", 0) == 0 && status != "400";
  const size_t actual = r.size() - headersEnd - 4;
  if (head ? actual != 0 : actual != declared) die("Content-Length is not the body", request);
  if (status == "200" &&
      (request.find(" /metrics") == std::string::npos || declared != body.size())) {
    die("200 without GET /metrics", request);
  }
  return 0;
}
