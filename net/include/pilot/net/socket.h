// The TCP transport: per connection one control socket, on which every message's header goes
// and, unless it is large, its payload (sent at once, like NCCL's own socket transport), and N
// data streams that large messages are cut into chunks over. All I/O is nonblocking and driven
// by the calls NCCL makes (isend/irecv/test/connect/accept), so no helper thread is needed. The
// wire protocol is described in net/README.md.
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
constexpr const char* kSocketEager = "NCCL_PILOT_SOCKET_EAGER";
constexpr const char* kSocketThreads = "NCCL_PILOT_SOCKET_NTHREADS";
constexpr const char* kSocketTimeoutMs = "NCCL_PILOT_SOCKET_TIMEOUT_MS";
constexpr const char* kSysfsRoot = "NCCL_PILOT_SYSFS_ROOT";
}  // namespace socket_env

struct SocketOptions {
  static constexpr int kMinStreams = 0;
  static constexpr int kMaxStreams = 16;
  static constexpr size_t kMinChunk = size_t{64} << 10;
  static constexpr size_t kMaxChunk = size_t{64} << 20;
  static constexpr size_t kMaxEager = size_t{64} << 10;
  static constexpr int kMaxThreads = 16;
  static constexpr int kMinTimeoutMs = 100;
  static constexpr int kMaxTimeoutMs = 3600 * 1000;

  /// Data streams per connection, besides the control socket: they carry the chunks of
  /// messages above chunkBytes. NCCL's default steps (512K Simple, smaller LL/LL128) stay on
  /// the control socket like all of NCCL's own socket traffic; larger steps (NCCL_BUFFSIZE
  /// above 4M) or a smaller chunk spread over two flows, for what loopback cannot show (RSS
  /// spreading receive work over cores, per-flow caps, ECMP). On loopback, one thread moving
  /// every stream, 0, 2 and 4 streams were within the noise of each other
  /// (docs/performance.md, "TCP transport").
  int streams = 2;
  /// Largest piece of a message one stream carries before the next stream takes over; a
  /// message of at most this size is not cut: it follows its header on the control socket.
  size_t chunkBytes = size_t{512} << 10;
  /// Messages up to this size are written before the receiver's CTS record for them arrived
  /// (up to 64 of them, 1 MiB in all, at a time: what the receiver can park when their
  /// receive is not posted yet); 0 = every message waits for its CTS record.
  size_t eagerBytes = size_t{64} << 10;
  /// Helper threads per comm that move the data streams' chunks (each side decides its own);
  /// 0 = NCCL's progress thread moves them inside test(), as it moves the control socket.
  int threads = 0;
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
