#include "explain/tuner_log.h"

#include <cstdarg>
#include <cstdio>

namespace pilot::cli {
namespace {

TunerLogOptions& options() {
  static TunerLogOptions opts;
  return opts;
}

const char* levelTag(nccl::ncclDebugLogLevel level) {
  switch (level) {
    case nccl::NCCL_LOG_WARN:
      return "warning";
    case nccl::NCCL_LOG_TRACE:
      return "trace";
    default:
      return "info";
  }
}

}  // namespace

void configureTunerLog(TunerLogOptions opts) {
  options() = std::move(opts);
}

void tunerLog(nccl::ncclDebugLogLevel level, unsigned long /*flags*/, const char* /*file*/,
              int /*line*/, const char* fmt, ...) {
  const TunerLogOptions& opts = options();
  if (level != nccl::NCCL_LOG_WARN && !opts.verbose) return;
  char buffer[2048];
  va_list args;
  va_start(args, fmt);
  int n = std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  if (n < 0) return;
  const std::string message(buffer);
  for (const std::string& s : opts.suppress) {
    if (!s.empty() && message.find(s) != std::string::npos) return;
  }
  std::fprintf(stderr, "%s: %s\n", levelTag(level), message.c_str());
}

}  // namespace pilot::cli
