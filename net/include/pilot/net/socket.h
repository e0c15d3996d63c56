// The multi-stream TCP transport: per connection one control socket and N data streams, messages
// cut into chunks spread round-robin over the streams, all I/O nonblocking and driven by the
// calls NCCL makes (isend/irecv/test/connect/accept), so no helper thread is needed. The wire
// protocol is described in net/README.md.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pilot/core/config.h"
#include "pilot/core/log.h"
#include "pilot/net/interfaces.h"
#include "pilot/net/transport.h"

namespace pilot::net {

namespace socket_env {
constexpr const char* kSocketStreams = "NCCL_PILOT_SOCKET_NSTREAMS";
constexpr const char* kSocketChunk = "NCCL_PILOT_SOCKET_CHUNK";
constexpr const char* kSocketTimeoutMs = "NCCL_PILOT_SOCKET_TIMEOUT_MS";
constexpr const char* kSysfsRoot = "NCCL_PILOT_SYSFS_ROOT";
}  // namespace socket_env

struct SocketOptions {
  static constexpr int kMinStreams = 1;
  static constexpr int kMaxStreams = 16;
  static constexpr size_t kMinChunk = size_t{64} << 10;
  static constexpr size_t kMaxChunk = size_t{64} << 20;
  static constexpr int kMinTimeoutMs = 100;
  static constexpr int kMaxTimeoutMs = 3600 * 1000;

  /// Data streams per connection. Chosen on loopback (docs/performance.md, "TCP transport";
  /// tests/net/run_stream_bench.sh, 8 messages in flight, GB/s at real-time priority):
  ///   streams    512K   1M    4M
  ///   1          7.15  7.32  5.73
  ///   2          6.42  7.29  6.38
  ///   4          5.83  7.67  6.25
  ///   8          5.27  5.45  6.24
  /// One thread moves every stream, so more streams add no CPU on loopback: 1 and 2 are within
  /// 10% of each other and ahead of 4 and 8 at NCCL's 512K step. 2 keeps two flows for what
  /// loopback cannot show (RSS spreading receive work over cores, per-flow caps, ECMP).
  int streams = 2;
  /// Largest piece of a message one stream carries before the next stream takes over.
  size_t chunkBytes = size_t{512} << 10;
  /// Bound on connection setup and on detecting a dead peer (TCP user timeout and keepalive).
  int timeoutMs = 30000;
  /// Root of the sysfs tree device facts are read from (tests replay recorded trees).
  std::string sysfsRoot = "/";
};

/// NCCL_PILOT_SOCKET_* and NCCL_PILOT_SYSFS_ROOT. A malformed or out-of-range value keeps the
/// default and adds one line naming the variable to `warnings`.
SocketOptions socketOptionsFromEnv(const EnvLookup& env, std::vector<std::string>* warnings);

/// A socket transport over the given interfaces (device i = interfaces[i]). `log` must outlive
/// the transport and every comm it creates.
std::unique_ptr<Transport> makeSocketTransport(std::vector<NetInterface> interfaces,
                                               const SocketOptions& options, Logger& log);

/// Interfaces and options from the environment (NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY,
/// NCCL_PILOT_SOCKET_*); option warnings are logged. An error only when the interfaces cannot
/// be listed; no usable interface is a transport with 0 devices.
Expected<std::unique_ptr<Transport>> makeSocketTransport(const EnvLookup& env, Logger& log);

}  // namespace pilot::net
