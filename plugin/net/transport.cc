#include "net/transport.h"

#include <atomic>
#include <memory>
#include <vector>

#include "pilot/core/text.h"
#include "pilot/net/socket.h"
#include "pilot/topology/fabric.h"
#include "pilot/topology/sources.h"

namespace pilot::plugin {
namespace {

constexpr unsigned long kFlags = subsys::Init | subsys::Net;

/// Built once and never destroyed: comms NCCL still holds at unload must not dangle, and
/// destructors at process exit would race NCCL's own teardown threads.
struct TransportState {
  std::unique_ptr<net::Transport> transport;
  std::vector<net::DeviceProperties> devices;
};

std::atomic<TransportState*> gState{nullptr};

void announceDevices(const TransportState& state, Logger& log) {
  std::string list;
  for (const net::DeviceProperties& d : state.devices) {
    if (!list.empty()) list += ", ";
    list += d.name + " (" + std::to_string(d.speedMbps) + " Mbps" +
            (d.pciPath.empty() ? ", virtual" : "") + ")";
  }
  PILOT_LOG(log, Info, kFlags, "socket transport on %zu interface(s): %s", state.devices.size(),
            list.c_str());
}

/// NCCL_NET=Pilot: NCCL may use only the network of that name, ours.
bool namesThisPlugin(const EnvLookup& env) {
  auto net = readText(env, "NCCL_NET");
  return net && text::equalsIgnoreCase(text::trim(*net), "Pilot");
}

/// What the log line tells about opting in. Our transport measured faster than NCCL's Socket
/// below 512K everywhere, and on bulk steps too where TCP's congestion control is cubic, not
/// bbr (docs/performance.md). Read from this network namespace's /proc (under the sysfs root);
/// only the log line uses it: a node-local setting never decides who carries the data, since
/// every rank must take the same transport.
std::string optInHint(const EnvLookup& env) {
  const topology::SysfsRoot sysfs(readText(env, setting::kSysfsRoot).value_or("/"));
  const std::string cc = sysfs.readLine("/proc/sys/net/ipv4/tcp_congestion_control").value_or("");
  if (cc == "cubic") {
    return "faster below 512K and, with TCP congestion control cubic as here, on bulk steps too; "
           "docs/performance.md";
  }
  return "faster below 512K, docs/performance.md";
}

}  // namespace

void startTransport(const EnvLookup& env, Logger& log) noexcept {
  try {
    auto choice = readChoice(env, setting::kTransport, "auto|none|socket", "auto");
    std::string mode = choice.ok() ? choice.value() : "auto";
    if (!choice.ok()) PILOT_LOG(log, Warn, kFlags, "%s; using auto", choice.error().c_str());
    if (mode == "auto") {
      // The same decision the tuner's fabric= key sees (topology/fabric.h): from the RDMA
      // ports and NCCL's own switches, so every rank of a job decides alike.
      const topology::FabricChoice fabric = topology::detectFabric(env);
      if (fabric.rdma) {
        PILOT_LOG(log, Info, kFlags,
                  "transport auto: topology-only mode, reporting 0 network devices so NCCL's "
                  "IB transport carries the data (%s); NCCL_PILOT_TRANSPORT=socket forces our "
                  "TCP transport",
                  fabric.why.c_str());
        return;
      }
      // Without RDMA, NCCL's own Socket transport carries the data unless the user asked for
      // ours: on bulk traffic (4M and 16M operations of 512K steps, where training spends its
      // network time) ours measured 0.77-0.90x NCCL's Socket under bbr and 1.00-1.18x under
      // cubic (docs/performance.md), and a default must never make a job slower than NCCL alone
      // on any node. NCCL_NET=Pilot names this plugin's
      // network: NCCL would find no network at all if it had no device.
      if (!namesThisPlugin(env)) {
        PILOT_LOG(log, Info, kFlags,
                  "transport auto: topology-only mode, reporting 0 network devices so NCCL's "
                  "Socket transport carries the data (%s); NCCL_PILOT_TRANSPORT=socket chooses "
                  "our TCP transport (%s)",
                  fabric.why.c_str(), optInHint(env).c_str());
        return;
      }
      PILOT_LOG(log, Info, kFlags,
                "transport auto: our TCP transport carries the data (%s); "
                "NCCL_PILOT_TRANSPORT=none leaves it to NCCL",
                fabric.why.c_str());
    } else if (mode == "none") {
      PILOT_LOG(log, Info, kFlags,
                "topology-only mode: reporting 0 network devices, so NCCL uses its own "
                "IB/Socket transport");
      return;
    }
    auto made = net::makeSocketTransport(env, log);
    if (!made) {
      PILOT_LOG(log, Warn, kFlags,
                "socket transport unavailable (%s); topology-only mode: NCCL uses its own "
                "transport",
                made.error().c_str());
      return;
    }
    auto state = std::make_unique<TransportState>();
    state->transport = std::move(*made);
    for (int dev = 0; dev < state->transport->deviceCount(); ++dev) {
      auto props = state->transport->properties(dev);
      if (!props) {
        PILOT_LOG(log, Warn, kFlags, "%s; topology-only mode", props.error().c_str());
        return;
      }
      state->devices.push_back(std::move(*props));
    }
    if (state->devices.empty()) {
      PILOT_LOG(log, Warn, kFlags,
                "socket transport: no usable interface (NCCL_SOCKET_IFNAME, "
                "NCCL_SOCKET_FAMILY); reporting 0 devices, NCCL falls back to its own");
    } else {
      announceDevices(*state, log);
    }
    gState.store(state.release(), std::memory_order_release);
  } catch (...) {
    // bad_alloc: stay topology-only; NCCL keeps working with its own transport.
  }
}

net::Transport* transport() noexcept {
  TransportState* state = gState.load(std::memory_order_acquire);
  return state != nullptr ? state->transport.get() : nullptr;
}

const net::DeviceProperties* deviceProperties(int dev) noexcept {
  TransportState* state = gState.load(std::memory_order_acquire);
  if (state == nullptr || dev < 0 || static_cast<size_t>(dev) >= state->devices.size()) {
    return nullptr;
  }
  return &state->devices[static_cast<size_t>(dev)];
}

}  // namespace pilot::plugin
