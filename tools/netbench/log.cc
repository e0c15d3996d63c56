#include "netbench/log.h"

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace pilot::cli {
namespace {

NetbenchLogOptions& options() {
  static NetbenchLogOptions opts;
  return opts;
}

// The plugin logs from its own threads too: keep lines whole.
std::mutex& outputMutex() {
  static std::mutex m;
  return m;
}

void emit(const char* level, const char* message) {
  const NetbenchLogOptions& opts = options();
  std::lock_guard<std::mutex> lock(outputMutex());
  if (opts.tag.empty()) {
    std::fprintf(stderr, "%s: %s\n", level, message);
  } else {
    std::fprintf(stderr, "[%s] %s: %s\n", opts.tag.c_str(), level, message);
  }
}

}  // namespace

void configureNetbenchLog(NetbenchLogOptions opts) {
  options() = std::move(opts);
}

void netbenchLog(nccl::ncclDebugLogLevel level, unsigned long /*flags*/, const char* /*file*/,
                 int /*line*/, const char* fmt, ...) {
  const bool warn = level == nccl::NCCL_LOG_WARN || level == nccl::NCCL_LOG_ABORT;
  if (!warn && !options().verbose) return;
  if (level == nccl::NCCL_LOG_NONE || level == nccl::NCCL_LOG_VERSION) return;
  char buffer[2048];
  va_list args;
  va_start(args, fmt);
  const int n = std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  if (n < 0) return;
  emit(warn ? "warning" : level == nccl::NCCL_LOG_TRACE ? "trace" : "info", buffer);
}

void netbenchWarn(const std::string& message) {
  emit("warning", message.c_str());
}

void netbenchInfo(const std::string& message) {
  if (options().verbose) emit("info", message.c_str());
}

}  // namespace pilot::cli
