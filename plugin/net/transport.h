// The net plugin's transport, chosen once per process at the first init: NCCL_PILOT_TRANSPORT
// = auto (the default) is topology-only, so NCCL's own IB transport (an RDMA port ACTIVE and IB
// not turned off: topology/fabric.h) or else its Socket transport carries the data, unless
// NCCL_NET=Pilot asks for this plugin's network by name (then the TCP transport of net/);
// socket forces the TCP transport; none forces topology-only mode. In topology-only mode
// devices() reports 0; the topology file and the tuner work either way.
#pragma once

#include "pilot/core/config.h"
#include "pilot/core/log.h"
#include "pilot/net/transport.h"

namespace pilot::plugin {

/// Called from the process's first init (under its lock). Logs what it chose; a transport that
/// cannot start is one WARN and topology-only mode. `log` is the logger every comm of the
/// transport will use: it must live as long as the process.
void startTransport(const EnvLookup& env, Logger& log) noexcept;

/// The transport, or nullptr in topology-only mode (or before the first init returned).
net::Transport* transport() noexcept;

/// Properties of `dev` read at start (the strings stay valid: NCCL keeps the pointers).
const net::DeviceProperties* deviceProperties(int dev) noexcept;

}  // namespace pilot::plugin
