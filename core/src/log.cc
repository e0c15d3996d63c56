#include "pilot/core/log.h"

#include <cstdio>

namespace pilot {

void Logger::logf(LogLevel level, unsigned long flags, const char* file, int line, const char* fmt,
                  ...) noexcept {
  try {
    char buffer[1024];
    va_list args;
    va_start(args, fmt);
    int n = std::vsnprintf(buffer, sizeof(buffer), fmt, args);
    va_end(args);
    if (n < 0) buffer[0] = '\0';
    write(level, flags, file, line, buffer);
  } catch (...) {
    // A logger must never take the host process down.
  }
}

Logger& nullLogger() {
  static NullLogger logger;
  return logger;
}

}  // namespace pilot
