#include "netbench/progress.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "netbench/pattern.h"

namespace pilot::cli {
namespace {

using namespace pilot::nccl;

constexpr int kMaxSubs = 64;  // NCCL_PROXY_MAX_SUBS: the sizes array NCCL hands test()

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t roundUp(uint64_t x, uint64_t multiple) {
  return (x + multiple - 1) / multiple * multiple;
}

std::string where(int channel, uint64_t message) {
  return "channel " + std::to_string(channel) + ", message " + std::to_string(message);
}

std::string callFailed(const char* call, int channel, uint64_t message, ncclResult_t rc) {
  return std::string(call) + " (" + where(channel, message) + ") returned " + resultName(rc);
}

std::string byteHex(unsigned value) {
  char text[8];
  std::snprintf(text, sizeof(text), "0x%02x", value);
  return text;
}

/// The per-channel stream state, in slot steps like NCCL's sub->posted/transmitted/done.
struct Stream {
  void* comm = nullptr;
  void* mhandle = nullptr;
  unsigned char* buffer = nullptr;
  uint64_t base = 0;    ///< first step of this operation on the connection
  uint64_t nsteps = 0;  ///< messages x sliceSteps
  uint64_t posted = 0, transmitted = 0, done = 0;
  void* requests[kNcclSteps] = {};
  void* phandles[kNcclSteps] = {};  ///< NCCL's per-step profiler slots (unused, non-NULL)
};

std::vector<Stream> openStreams(const ProgressSetup& s) {
  auto& connections = s.endpoint->connections();
  const int p = static_cast<int>(s.proto);
  const uint64_t slice = static_cast<uint64_t>(s.shape.sliceSteps);
  std::vector<Stream> streams(connections.size());
  for (size_t c = 0; c < connections.size(); ++c) {
    Stream& k = streams[c];
    Connection& conn = connections[c];
    k.comm = conn.comm;
    k.mhandle = conn.mhandles[p];
    k.buffer = conn.buffers[p].data();
    // Each operation starts on a slice boundary after the previous one's steps.
    k.base = roundUp(conn.step, slice);
    k.nsteps = s.plan->totalMessages(static_cast<int>(c)) * slice;
    conn.step = k.base + k.nsteps;
  }
  return streams;
}

/// Stops a pass loop that is not moving: the peer failed, or nothing happened for too long.
class Watchdog {
 public:
  explicit Watchdog(const ProgressSetup& s)
      : abort_(s.abort), limitNs_(static_cast<int64_t>(s.timeoutS * 1e9)), last_(nowNs()) {}
  void progressed() { last_ = nowNs(); }
  /// Empty while it may go on.
  std::string check() const {
    if (abort_ != nullptr && abort_->load(std::memory_order_relaxed)) return "the peer failed";
    if (nowNs() - last_ > limitNs_) {
      return "no progress for " + std::to_string(limitNs_ / 1000000000) + " s";
    }
    return {};
  }

 private:
  const std::atomic<bool>* abort_;
  int64_t limitNs_;
  int64_t last_;
};

std::string sendStuck(const std::vector<Stream>& streams, int slice) {
  for (size_t c = 0; c < streams.size(); ++c) {
    const Stream& k = streams[c];
    if (k.done == k.nsteps) continue;
    const int channel = static_cast<int>(c);
    if (k.done < k.transmitted) {
      return "test() of the send of " + where(channel, k.done / slice) + " never completes";
    }
    return "isend of " + where(channel, k.transmitted / slice) + " keeps returning a NULL request";
  }
  return "all sends completed";
}

std::string recvStuck(const std::vector<Stream>& streams, int slice) {
  for (size_t c = 0; c < streams.size(); ++c) {
    const Stream& k = streams[c];
    if (k.done == k.nsteps) continue;
    const int channel = static_cast<int>(c);
    if (k.transmitted > k.done) {  // "transmitted" = received, on this side
      return "the data of " + where(channel, k.done / slice) + " never arrived";
    }
    if (k.posted > k.transmitted) {
      return "test() of the receive of " + where(channel, k.transmitted / slice) +
             " never completes";
    }
    return "irecv of " + where(channel, k.posted / slice) + " keeps returning a NULL request";
  }
  return "all receives completed";
}

}  // namespace

int64_t processCpuNs() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  auto ns = [](const timeval& t) {
    return static_cast<int64_t>(t.tv_sec) * 1000000000 + static_cast<int64_t>(t.tv_usec) * 1000;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

Expected<SendOutcome> runSendProgress(const ProgressSetup& s) {
  NetDriver& driver = s.endpoint->driver();
  const SizePlan& plan = *s.plan;
  const int slice = s.shape.sliceSteps;
  const size_t slotBytes = s.shape.slotBytes;
  const uint64_t maxDepth = static_cast<uint64_t>(s.shape.maxDepth);
  std::vector<Stream> streams = openStreams(s);
  std::vector<std::array<int64_t, kNcclSteps>> started(streams.size());
  for (auto& t : started) t.fill(-1);

  SendOutcome out;
  Watchdog watchdog(s);
  bool attrSet = false;
  int64_t cpuStart = -1;
  size_t remaining = streams.size();
  while (remaining > 0) {
    bool progressed = false;
    for (size_t c = 0; c < streams.size(); ++c) {
      Stream& k = streams[c];
      const int channel = static_cast<int>(c);
      if (k.done == k.nsteps) continue;
      // Give the GPU a slot; it fills it at once (with the pattern this message must carry).
      if (k.posted < k.nsteps && k.posted < k.done + maxDepth) {
        const int slot = static_cast<int>((k.base + k.posted) % kNcclSteps);
        const SizePlan::Message m = plan.message(channel, k.posted / slice);
        fillPattern(k.buffer + slot * slotBytes, m.bytes,
                    patternSeed(s.sizeIndex, static_cast<uint32_t>(c), m.iteration), m.offset);
        k.posted += slice;
        progressed = true;
        continue;
      }
      // Send the oldest filled slot; NULL means "not now", retried on a later pass.
      if (k.transmitted < k.posted) {
        const int slot = static_cast<int>((k.base + k.transmitted) % kNcclSteps);
        const uint64_t n = k.transmitted / slice;
        const SizePlan::Message m = plan.message(channel, n);
        if (started[c][slot] < 0) started[c][slot] = nowNs();
        if (cpuStart < 0 && m.timed) cpuStart = processCpuNs();
        if (!attrSet) {
          s.endpoint->setNetAttr(s.endpoint->transferAttr(true, s.proto), false);
          attrSet = true;
        }
        ncclResult_t rc = driver.isend(k.comm, k.buffer + slot * slotBytes, m.bytes, s.tag,
                                       k.mhandle, &k.phandles[slot], &k.requests[slot]);
        if (rc != ncclSuccess) return Error{callFailed("isend", channel, n, rc)};
        if (k.requests[slot] != nullptr) {
          k.transmitted += slice;
          progressed = true;
          continue;
        }
      }
      // Test only the oldest outstanding send.
      if (k.done < k.transmitted) {
        const int slot = static_cast<int>((k.base + k.done) % kNcclSteps);
        const uint64_t n = k.done / slice;
        int done = 0, size = 0;
        ncclResult_t rc = driver.test(k.requests[slot], &done, &size);
        if (rc != ncclSuccess) return Error{callFailed("test (send)", channel, n, rc)};
        if (done) {
          if (plan.message(channel, n).timed) out.latency.add(nowNs() - started[c][slot]);
          started[c][slot] = -1;
          k.requests[slot] = nullptr;  // never tested again: the plugin may reuse it
          k.done += slice;
          if (k.done == k.nsteps) --remaining;
          progressed = true;
        }
      }
    }
    if (progressed) {
      watchdog.progressed();
      continue;
    }
    if (std::string why = watchdog.check(); !why.empty()) {
      return Error{"send side stopped (" + why + "): " + sendStuck(streams, slice)};
    }
    std::this_thread::yield();  // as NCCL's progress thread when no op progressed
  }
  if (cpuStart >= 0) out.cpuNs = processCpuNs() - cpuStart;
  return out;
}

Expected<RecvOutcome> runRecvProgress(const ProgressSetup& s, const std::function<void()>& posted) {
  NetDriver& driver = s.endpoint->driver();
  const SizePlan& plan = *s.plan;
  const int slice = s.shape.sliceSteps;
  const size_t slotBytes = s.shape.slotBytes;
  const uint64_t maxDepth = static_cast<uint64_t>(s.shape.maxDepth);
  const size_t postBytes = s.shape.messageBytes();
  // NCCL presets *request = 0x1 on single LL/LL128 receives (NCCL_NET_OPTIONAL_RECV_COMPLETION
  // defaults to 1); such a receive may complete before its data lands.
  const bool optional = s.proto != Proto::Simple;
  const int64_t timeoutNs = static_cast<int64_t>(s.timeoutS * 1e9);
  const bool consumedHook = driver.hasIrecvConsumed();
  std::vector<Stream> streams = openStreams(s);
  // Per slot: what test() reported, when, and the request irecv returned (for irecvConsumed).
  std::vector<std::array<int, kNcclSteps>> sizes(streams.size());
  std::vector<std::array<int64_t, kNcclSteps>> arrived(streams.size());
  std::vector<std::array<void*, kNcclSteps>> requestCache(streams.size());
  for (auto& r : requestCache) r.fill(nullptr);

  uint64_t warmupMessages = 0;
  for (int c = 0; c < plan.channels(); ++c)
    warmupMessages += plan.messagesPerIteration(c) * plan.warmup();
  uint64_t consumed = 0;
  int64_t startNs = 0;
  int64_t cpuStart = 0;

  RecvOutcome out;
  Watchdog watchdog(s);
  bool attrSet = false, announced = false;
  size_t remaining = streams.size();
  while (remaining > 0) {
    // Phase 1: post receives ahead on every channel.
    bool progressed = false;
    for (size_t c = 0; c < streams.size(); ++c) {
      Stream& k = streams[c];
      if (k.posted >= k.nsteps || k.posted >= k.done + maxDepth) continue;
      const int slot = static_cast<int>((k.base + k.posted) % kNcclSteps);
      if (!attrSet) {
        s.endpoint->setNetAttr(s.endpoint->transferAttr(false, s.proto), false);
        attrSet = true;
      }
      ncclResult_t rc = driver.irecv(k.comm, k.buffer + slot * slotBytes, postBytes, s.tag,
                                     k.mhandle, &k.phandles[slot], optional, &k.requests[slot]);
      const int channel = static_cast<int>(c);
      if (rc != ncclSuccess) return Error{callFailed("irecv", channel, k.posted / slice, rc)};
      if (k.requests[slot] == kOptionalCompletion) {
        return Error{"irecv (" + where(channel, k.posted / slice) +
                     ") left *request at NCCL_NET_OPTIONAL_RECV_COMPLETION (0x1): NCCL would "
                     "test() that pointer (the plugin must always write *request)"};
      }
      if (k.requests[slot] != nullptr) {
        requestCache[c][slot] = k.requests[slot];
        k.posted += slice;
        progressed = true;
      }
    }
    if (!announced) {
      announced = true;
      posted();
      if (warmupMessages == 0) {
        startNs = nowNs();
        cpuStart = processCpuNs();
      }
    }
    if (progressed) {
      watchdog.progressed();
      continue;
    }
    // Phase 2: test each channel's oldest receive ("transmitted" counts received steps).
    for (size_t c = 0; c < streams.size(); ++c) {
      Stream& k = streams[c];
      if (k.posted <= k.transmitted) continue;
      const int slot = static_cast<int>((k.base + k.transmitted) % kNcclSteps);
      int done = 0;
      int testSizes[kMaxSubs] = {};
      ncclResult_t rc = driver.test(k.requests[slot], &done, testSizes);
      if (rc != ncclSuccess) {
        return Error{callFailed("test (receive)", static_cast<int>(c), k.transmitted / slice, rc)};
      }
      if (done) {
        sizes[c][slot] = testSizes[0];
        arrived[c][slot] = nowNs();
        k.requests[slot] = nullptr;
        k.transmitted += slice;
        progressed = true;
      }
    }
    if (progressed) {
      watchdog.progressed();
      continue;
    }
    // Phase 3: the GPU consumes received slots in order; the slot then takes a new receive.
    for (size_t c = 0; c < streams.size(); ++c) {
      Stream& k = streams[c];
      const int channel = static_cast<int>(c);
      while (k.done < k.transmitted) {
        const int slot = static_cast<int>((k.base + k.done) % kNcclSteps);
        const uint64_t n = k.done / slice;
        const SizePlan::Message m = plan.message(channel, n);
        const unsigned char* data = k.buffer + slot * slotBytes;
        const PatternMismatch bad =
            checkPattern(data, m.bytes,
                         patternSeed(s.sizeIndex, static_cast<uint32_t>(c), m.iteration), m.offset);
        // With optional completion the size test() reports means nothing and the data may
        // still be on its way: keep polling it, as the GPU polls LL flags (for half the
        // timeout, so it is reported as corruption before the watchdog fires).
        const bool sizeBad = !optional && sizes[c][slot] != static_cast<int>(m.bytes);
        if (optional && bad.found && nowNs() - arrived[c][slot] < timeoutNs / 2) break;
        if (sizeBad || bad.found) {
          ++out.corruptMessages;
          if (out.firstCorruption.empty()) {
            const std::string at = "channel " + std::to_string(channel) + ", iteration " +
                                   std::to_string(m.iteration) + ", message " +
                                   std::to_string(m.index + 1) + " of " +
                                   std::to_string(plan.messagesPerIteration(channel)) + " (" +
                                   std::to_string(m.bytes) + " bytes)";
            out.firstCorruption =
                sizeBad
                    ? at + ": test() reported " + std::to_string(sizes[c][slot]) + " bytes received"
                    : at + ": first bad byte at offset " + std::to_string(bad.offset) +
                          " (expected " + byteHex(bad.expected) + ", got " + byteHex(bad.actual) +
                          ")";
          }
        }
        if (consumedHook) {
          ncclResult_t rc = driver.irecvConsumed(k.comm, 1, requestCache[c][slot]);
          if (rc != ncclSuccess) return Error{callFailed("irecvConsumed", channel, n, rc)};
        }
        requestCache[c][slot] = nullptr;
        k.done += slice;
        progressed = true;
        if (m.timed) {
          out.bytes += m.bytes;
          ++out.messages;
        }
        if (++consumed == warmupMessages) {
          startNs = nowNs();
          cpuStart = processCpuNs();
        }
        if (k.done == k.nsteps) {
          --remaining;
          break;
        }
      }
    }
    if (progressed) {
      watchdog.progressed();
      continue;
    }
    if (std::string why = watchdog.check(); !why.empty()) {
      return Error{"receive side stopped (" + why + "): " + recvStuck(streams, slice)};
    }
    std::this_thread::yield();
  }
  out.elapsedNs = nowNs() - startNs;
  out.cpuNs = processCpuNs() - cpuStart;
  return out;
}

}  // namespace pilot::cli
