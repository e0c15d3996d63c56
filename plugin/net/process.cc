#include "net/process.h"

#include <atomic>
#include <mutex>

#include "entry_guard.h"
#include "net/transport.h"
#include "pilot/core/config.h"
#include "pilot/topology/topo_file.h"
#include "pilot/version.h"

namespace pilot::plugin {
namespace {

using nccl::ncclDebugLogger_t;

constexpr unsigned long kFlags = subsys::Init | subsys::Net;

// A mutex'd flag rather than std::call_once: libstdc++'s call_once keeps its callable in
// thread-local storage, which would make the module NEED the dynamic loader (__tls_get_addr).
struct NetProcess {
  std::mutex mutex;
  std::atomic<bool> started{false};
  std::atomic<ncclDebugLogger_t> logFn{nullptr};
};

NetProcess& process() {
  // Function-local: nothing runs at dlopen. Never destroyed, like the tuner runtime.
  static auto* state = new NetProcess();
  return *state;
}

/// Logs through the NCCL logger of the first init that had one, whenever that came: the
/// transport's comms log with it for the rest of the process.
class ProcessNetLogger final : public Logger {
 public:
  void write(LogLevel level, unsigned long flags, const char* file, int line,
             const std::string& message) override {
    NcclLogger log = netLogger();
    log.write(level, flags, file, line, message);
  }
};

void runOnce(ncclDebugLogger_t logFn) {
  NcclLogger log(logFn, kNetPrefix);
  (void)guard(&log, kFlags, "init", nccl::ncclSuccess, [&] {
    PILOT_LOG(log, Info, kFlags, "nccl-pilot %s", kVersion);
    const EnvLookup env = processEnv();
    (void)topology::provideTopologyFile(env, log, topology::processEnvironmentWriter(), [&] {
      return topology::detectLocalMachine(topology::detectOptionsFromEnv(env));
    });
    static auto* transportLog = new ProcessNetLogger();  // never destroyed: comms outlive exit
    startTransport(env, *transportLog);
    return nccl::ncclSuccess;
  });
}

}  // namespace

void startNetProcess(ncclDebugLogger_t logFn) noexcept {
  try {
    NetProcess& state = process();
    ncclDebugLogger_t none = nullptr;
    if (logFn != nullptr) state.logFn.compare_exchange_strong(none, logFn);
    if (state.started.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(state.mutex);  // later callers wait for the file
    if (state.started.load(std::memory_order_relaxed)) return;
    runOnce(logFn);
    state.started.store(true, std::memory_order_release);
  } catch (...) {
    // A failed lock, or bad_alloc before the guard: NCCL detects the machine on its own.
  }
}

NcclLogger netLogger() noexcept {
  ncclDebugLogger_t fn = nullptr;
  try {
    fn = process().logFn.load();
  } catch (...) {
  }
  return NcclLogger(fn, kNetPrefix);
}

}  // namespace pilot::plugin
