// Process isolation for the fake NCCL. The plugin reads its table and settings once per process
// (TunerRuntime::process()), as it must inside NCCL, so every scenario with its own table or
// environment runs in a fork()ed child: the child sets the environment, dlopens the module and
// checks with ordinary gtest assertions; the parent fails the test if the child failed,
// crashed or hung past ctest's timeout.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nccl_host_abi.h"

namespace fake {

/// Runs body in a child process with a clean NCCL environment (see resetEnv). In ASan builds
/// the child also runs LeakSanitizer before it exits.
void inChild(const std::function<void()>& body);

/// Unsets every variable the plugin reads (NCCL_PILOT_*, NCCL_TUNER_CONFIG_FILE, NCCL_ALGO,
/// NCCL_PROTO, NCCL_DEBUG, and the fabric's NCCL_IB_DISABLE, NCCL_IB_HCA, NCCL_NET), so the
/// developer's shell cannot change a result.
void resetEnv();
void setEnv(const char* name, const std::string& value);

/// A table file in $TMPDIR, removed when this goes out of scope.
class TempTable {
 public:
  explicit TempTable(const std::string& text);
  ~TempTable();
  TempTable(const TempTable&) = delete;
  TempTable& operator=(const TempTable&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The ncclDebugLogger_t the fake NCCL passes: formats with vsnprintf (C varargs, as NCCL's
/// logger is called) and records the line.
void captureLog(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                const char* fmt, ...) __attribute__((format(printf, 5, 6)));

struct LogLine {
  int level;
  unsigned long flags;
  std::string text;
};
std::vector<LogLine> capturedLogs();
void clearCapturedLogs();
/// How many captured lines at `level` contain every one of `needles`; logged(): any.
int countLogged(int level, const std::vector<std::string>& needles);
bool logged(int level, const std::vector<std::string>& needles);
std::string dumpLogs();

}  // namespace fake
