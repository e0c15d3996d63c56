#include "net_host.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "child_process.h"

namespace nethost {
namespace {

std::mutex gLogMutex;
std::vector<LogLine>& lines() {
  static std::vector<LogLine> all;
  return all;
}

void resetEnv() {
  for (const char* name :
       {"NCCL_PILOT_TOPO", "NCCL_PILOT_TOPO_REPAIR", "NCCL_PILOT_TOPO_DUMP", "NCCL_PILOT_HWLOC_XML",
        "NCCL_PILOT_SYSFS_ROOT", "NCCL_PILOT_TRANSPORT", "NCCL_TOPO_FILE", "NCCL_DEBUG",
        "NCCL_PILOT_TUNER_TABLE", "NCCL_TUNER_CONFIG_FILE", "NCCL_IB_DISABLE", "NCCL_IB_HCA",
        "NCCL_NET"}) {
    unsetenv(name);
  }
  // These scenarios test topology-only mode; the TCP transport (the default) has its own
  // tests in tests/net/.
  setenv("NCCL_PILOT_TRANSPORT", "none", 1);
}

}  // namespace

void inChild(const std::function<void()>& body) {
  testsupport::runInChild([&] {
    resetEnv();
    body();
  });
}

void* openModule() {
  void* module = dlopen(PILOT_NET_MODULE, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(module, nullptr) << dlerror();
  return module;
}

void* netSymbol(void* module, int version) {
  return dlsym(module, ("ncclNetPlugin_v" + std::to_string(version)).c_str());
}

void captureLog(LogLevel level, unsigned long /*flags*/, const char* /*file*/, int /*line*/,
                const char* fmt, ...) {
  char buffer[4096];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  std::lock_guard<std::mutex> lock(gLogMutex);
  lines().push_back({static_cast<int>(level), buffer});
}

std::vector<LogLine> logs() {
  std::lock_guard<std::mutex> lock(gLogMutex);
  return lines();
}

int countLogs(int level, const std::vector<std::string>& needles) {
  int n = 0;
  for (const LogLine& line : logs()) {
    if (line.level != level) continue;
    bool all = true;
    for (const std::string& needle : needles)
      all = all && line.text.find(needle) != std::string::npos;
    n += all ? 1 : 0;
  }
  return n;
}

std::string dumpLogs() {
  std::string out;
  for (const LogLine& line : logs()) {
    out += (line.level == LogWarn   ? "WARN "
            : line.level == LogInfo ? "INFO "
                                    : "---- ") +
           line.text + "\n";
  }
  return out;
}

std::string makeTempDir() {
  const char* dir = std::getenv("TMPDIR");
  std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/pilot-net-test-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (mkdtemp(name.data()) == nullptr) {
    throw std::runtime_error("mkdtemp: " + std::string(std::strerror(errno)));
  }
  return name.data();
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string recordedMachineXml() {
  return std::string(PILOT_TOPOLOGY_DATA) + "/hwloc/baremetal-2gpu-2nic-switch.xml";
}

void useRecordedMachine() {
  setenv("NCCL_PILOT_HWLOC_XML", recordedMachineXml().c_str(), 1);
  setenv("NCCL_PILOT_SYSFS_ROOT", PILOT_EMPTY_SYSFS_ROOT, 1);
}

Result initLikeNccl(void* symbol, int version, void** ctx, uint64_t commId) {
  *ctx = nullptr;
  if (version <= 9) return static_cast<NetOld*>(symbol)->init(captureLog);
  if (version == 10) return static_cast<NetV10*>(symbol)->init(captureLog, nullptr);
  CommConfig config{-1};  // NCCL_NET_TRAFFIC_CLASS_UNDEF
  return static_cast<NetPerComm*>(symbol)->init(ctx, commId, &config, captureLog, nullptr);
}

}  // namespace nethost
