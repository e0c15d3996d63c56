// The logging interface every layer uses. In the plugin it is bridged to the ncclDebugLogger_t
// that NCCL passes to init; in the tool it writes to stderr; in tests it records lines.
// Nothing in the library prints on its own.
#pragma once

#include <cstdarg>
#include <string>

namespace pilot {

enum class LogLevel { Warn = 2, Info = 3, Trace = 5 };

/// NCCL's debug subsystem flags (same bit values, so the plugin passes them through).
namespace subsys {
constexpr unsigned long Init = 0x1;
constexpr unsigned long Net = 0x10;
constexpr unsigned long Graph = 0x20;
constexpr unsigned long Tuning = 0x40;
constexpr unsigned long Env = 0x80;
constexpr unsigned long Profile = 0x4000;  ///< NCCL_PROFILE
}  // namespace subsys

class Logger {
 public:
  virtual ~Logger() = default;
  /// Receives one formatted message without a trailing newline.
  virtual void write(LogLevel level, unsigned long flags, const char* file, int line,
                     const std::string& message) = 0;

  /// printf-style front end. Never throws: formatting errors become an empty message.
  void logf(LogLevel level, unsigned long flags, const char* file, int line, const char* fmt,
            ...) noexcept __attribute__((format(printf, 6, 7)));
};

/// Discards everything; the default when no logger was provided.
class NullLogger final : public Logger {
 public:
  void write(LogLevel, unsigned long, const char*, int, const std::string&) override {}
};

Logger& nullLogger();

}  // namespace pilot

#define PILOT_LOG(logger, level, flags, ...) \
  (logger).logf(::pilot::LogLevel::level, (flags), __FILE__, __LINE__, __VA_ARGS__)
