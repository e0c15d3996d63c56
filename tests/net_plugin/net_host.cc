#include "net_host.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

// Present in sanitizer builds only: lets a child run the leak check that _exit would skip.
extern "C" int __lsan_do_recoverable_leak_check() __attribute__((weak));

namespace nethost {
namespace {

std::mutex gLogMutex;
std::vector<LogLine>& lines() {
  static std::vector<LogLine> all;
  return all;
}

[[noreturn]] void finishChild(int status) {
  if (status == 0 && ::testing::Test::HasFailure()) status = 1;
  if (status == 0 && __lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check()) {
    status = 3;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(status);  // the parent's atexit handlers and gtest state are not ours to run
}

void resetEnv() {
  for (const char* name :
       {"NCCL_PILOT_TOPO", "NCCL_PILOT_TOPO_REPAIR", "NCCL_PILOT_TOPO_DUMP", "NCCL_PILOT_HWLOC_XML",
        "NCCL_PILOT_SYSFS_ROOT", "NCCL_PILOT_TRANSPORT", "NCCL_TOPO_FILE", "NCCL_DEBUG",
        "NCCL_PILOT_TUNER_TABLE", "NCCL_TUNER_CONFIG_FILE"}) {
    unsetenv(name);
  }
  // These scenarios test topology-only mode; the TCP transport (the default) has its own
  // tests in tests/net/.
  setenv("NCCL_PILOT_TRANSPORT", "none", 1);
}

}  // namespace

void inChild(const std::function<void()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  ASSERT_NE(pid, -1) << "fork: " << std::strerror(errno);
  if (pid == 0) {
    int status = 0;
    try {
      resetEnv();
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: uncaught exception: %s\n", e.what());
      status = 2;
    } catch (...) {
      std::fprintf(stderr, "child: uncaught exception\n");
      status = 2;
    }
    finishChild(status);
  }
  int status = 0;
  pid_t waited;
  do {
    waited = waitpid(pid, &status, 0);
  } while (waited == -1 && errno == EINTR);
  ASSERT_EQ(waited, pid) << "waitpid: " << std::strerror(errno);
  ASSERT_FALSE(WIFSIGNALED(status)) << "child killed by signal " << WTERMSIG(status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "the child scenario failed (1: assertions above, 2: exception, 3: leak)";
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

std::string jwbFixture() {
  return std::string(PILOT_SHARED_FIXTURES) + "/topo/hwloc/hwloc-jwb0004.xml";
}

void useFixtureMachine() {
  setenv("NCCL_PILOT_HWLOC_XML", jwbFixture().c_str(), 1);
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
