#include "isolation.h"

#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "child_process.h"

namespace fake {
namespace {

std::mutex gLogMutex;
std::vector<LogLine>& logLines() {
  static std::vector<LogLine> lines;
  return lines;
}

}  // namespace

void inChild(const std::function<void()>& body) {
  testsupport::runInChild([&] {
    resetEnv();
    body();
  });
}

void resetEnv() {
  for (const char* name :
       {"NCCL_PILOT_TUNER_TABLE", "NCCL_TUNER_CONFIG_FILE", "NCCL_PILOT_TUNER_STRICT",
        "NCCL_PILOT_TUNER", "NCCL_ALGO", "NCCL_PROTO", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS",
        "NCCL_PILOT_TUNER_TABLE_SHA256", "NCCL_PILOT_TUNER_FABRIC", "NCCL_PILOT_SYSFS_ROOT",
        "NCCL_IB_DISABLE", "NCCL_IB_HCA", "NCCL_NET"}) {
    unsetenv(name);
  }
}

void setEnv(const char* name, const std::string& value) {
  setenv(name, value.c_str(), 1);
}

TempTable::TempTable(const std::string& text) {
  const char* dir = std::getenv("TMPDIR");
  std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/pilot-fake-nccl-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) throw std::runtime_error("mkstemp: " + std::string(std::strerror(errno)));
  path_ = name.data();
  const ssize_t written = write(fd, text.data(), text.size());
  close(fd);
  if (written != static_cast<ssize_t>(text.size())) throw std::runtime_error("short write");
}

TempTable::~TempTable() {
  unlink(path_.c_str());
}

void captureLog(ncclDebugLogLevel level, unsigned long flags, const char* /*file*/, int /*line*/,
                const char* fmt, ...) {
  char buffer[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  std::lock_guard<std::mutex> lock(gLogMutex);
  logLines().push_back({static_cast<int>(level), flags, buffer});
}

std::vector<LogLine> capturedLogs() {
  std::lock_guard<std::mutex> lock(gLogMutex);
  return logLines();
}

void clearCapturedLogs() {
  std::lock_guard<std::mutex> lock(gLogMutex);
  logLines().clear();
}

int countLogged(int level, const std::vector<std::string>& needles) {
  int count = 0;
  for (const LogLine& l : capturedLogs()) {
    if (l.level != level) continue;
    bool all = true;
    for (const std::string& n : needles) all = all && l.text.find(n) != std::string::npos;
    if (all) ++count;
  }
  return count;
}

bool logged(int level, const std::vector<std::string>& needles) {
  return countLogged(level, needles) > 0;
}

std::string dumpLogs() {
  std::string out;
  for (const LogLine& l : capturedLogs()) {
    out += "  [" + std::to_string(l.level) + "] " + l.text + "\n";
  }
  return out.empty() ? "  (no log lines)\n" : out;
}

}  // namespace fake
