// NCCL's network progress events (ProxyOp, and ProxyStep under it), asked for only with
// NCCL_PILOT_METRICS_PROXY: a ProxyOp is one channel's send to or receive from one peer of one
// operation, on the proxy thread, started when the proxy takes it up and stopped when it is
// done (src/proxy.cc, src/transport/net.cc). The ones still open when an operation stalls name
// the peer and channel it waits on; their ProxyStep stops say how far each got.
// A fixed table of records, claimed by one compare-and-swap; a handle carries the record and its
// generation (never a pointer), so a stale or foreign handle changes nothing. The exporter
// reads the records of one communicator by comparing pointers, never dereferencing them.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace pilot::metrics {

class CommMonitor;

/// An open ProxyOp as the exporter sees it.
struct ProxyOpView {
  uint64_t ordinal = 0;  ///< the operation's, in its communicator's InFlightLog
  unsigned channel = 0;
  int peer = -1;
  bool send = false;
  int steps = -1;  ///< ProxySteps completed; -1 when steps are not asked for
  int nSteps = 0;
};

namespace detail {

class ProxyTable {
 public:
  static constexpr uint32_t kRecords = 1024;

  static bool isProxyHandle(const void* handle);
  /// A record for a ProxyOp of `comm`'s operation `ordinal`; null when none is free.
  void* open(const CommMonitor& comm, uint64_t ordinal, unsigned channel, int peer, bool send,
             int nSteps, bool countSteps);
  /// A ProxyStep's handle under a ProxyOp's: its stop counts one step done.
  void* step(void* opHandle) const;
  /// stopEvent of a ProxyOp (frees it) or a ProxyStep (counts it).
  void stop(void* handle);
  /// Frees every record of `comm` (its finalize).
  void abandon(const CommMonitor& comm);
  /// The open ProxyOps of `comm`'s operation `ordinal`.
  std::vector<ProxyOpView> openOf(const CommMonitor& comm, uint64_t ordinal) const;
  uint32_t inUse() const { return inUse_.load(std::memory_order_relaxed); }

 private:
  struct Record {
    std::atomic<uint64_t> state{0};  // generation << 1 | used
    std::atomic<const CommMonitor*> comm{nullptr};
    std::atomic<uint64_t> ordinal{0};
    std::atomic<uint64_t> what{0};  // channel (8) | send (1) | counts steps (1) | nSteps (22)
                                    // | peer + 1 (32) << 32
    std::atomic<int> steps{0};
  };
  /// The record a handle names while its generation is open, else null.
  Record* decode(const void* handle, bool* isStep) const;
  void release(Record& r, uint64_t state);

  Record records_[kRecords];
  std::atomic<uint32_t> next_{0};
  std::atomic<uint32_t> inUse_{0};
};

}  // namespace detail
}  // namespace pilot::metrics
