#include "net_process.h"

#include <atomic>
#include <mutex>

#include "entry_guard.h"
#include "pilot/core/config.h"
#include "pilot/topology/topo_file.h"

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

/// Only the topology-only mode exists so far; say so once, and what NCCL will do about it.
void announceTransport(const EnvLookup& env, Logger& log) {
  auto transport = readChoice(env, setting::kTransport, "none|socket", "none");
  if (!transport.ok()) {
    PILOT_LOG(log, Warn, kFlags, "%s; using none", transport.error().c_str());
  } else if (transport.value() == "socket") {
    PILOT_LOG(log, Warn, kFlags,
              "%s=socket: the socket transport is not available yet; running topology-only",
              setting::kTransport);
  }
  PILOT_LOG(log, Info, kFlags,
            "topology-only mode: reporting 0 network devices, so NCCL uses its own IB/Socket "
            "transport");
}

void runOnce(ncclDebugLogger_t logFn) {
  NcclLogger log(logFn, kNetPrefix);
  (void)guard(&log, kFlags, "init", nccl::ncclSuccess, [&] {
    const EnvLookup env = processEnv();
    announceTransport(env, log);
    (void)topology::provideTopologyFile(env, log, topology::processEnvironmentWriter(), [&] {
      return topology::detectLocalMachine(topology::detectOptionsFromEnv(env));
    });
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
