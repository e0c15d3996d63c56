#include "logger_bridge.h"

namespace pilot::plugin {

void NcclLogger::write(LogLevel level, unsigned long flags, const char* file, int line,
                       const std::string& message) {
  if (fn_ == nullptr) return;
  fn_(static_cast<nccl::ncclDebugLogLevel>(level), flags, file, line, "%s: %s", prefix_,
      message.c_str());
}

}  // namespace pilot::plugin
