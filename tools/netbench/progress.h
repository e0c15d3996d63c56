// What NCCL's proxy progress thread does with one operation on every channel (research/net.md
// §2.4; NCCL's sendProxyProgress / recvProxyProgress), with the GPU's part played inline:
// - sender, per channel and pass, one of: give a slot to the "GPU" (which fills it with the
//   pattern) while fewer than maxDepth steps are outstanding; isend the oldest filled slot
//   (a NULL request is retried next pass); test() the oldest send, and only that one.
// - receiver, per pass, the first phase that does something: post irecvs (the full slot size)
//   up to maxDepth ahead on every channel; test() each channel's oldest receive; let the "GPU"
//   consume received slots in order (verify the pattern, then irecvConsumed when non-NULL).
// LL/LL128 receives carry NCCL's optional-completion preset; their data is polled for like
// the GPU polls LL flags, up to the timeout. Channels are progressed round-robin by the
// calling thread, which must be the side's one progress thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "netbench/connections.h"
#include "netbench/plan.h"
#include "netbench/stats.h"

namespace pilot::cli {

struct ProgressSetup {
  Endpoint* endpoint = nullptr;
  Proto proto = Proto::Simple;
  StepShape shape;
  const SizePlan* plan = nullptr;
  uint32_t sizeIndex = 0;  ///< seeds the pattern, so a stale message of another size fails
  int tag = 0;             ///< the sender's rank, as NCCL tags (both sides use it)
  double timeoutS = 60;    ///< no progress for this long is an error
  const std::atomic<bool>* abort = nullptr;  ///< set when the peer failed
};

struct SendOutcome {
  LatencyHistogram latency;  ///< timed messages: first isend attempt -> test() done
  int64_t cpuNs = 0;  ///< this process's CPU time (every thread) from the first timed isend on
};
Expected<SendOutcome> runSendProgress(const ProgressSetup& setup);

struct RecvOutcome {
  uint64_t bytes = 0;     ///< timed payload consumed
  uint64_t messages = 0;  ///< timed messages consumed
  int64_t elapsedNs = 0;  ///< from the end of the warmup to the last message consumed
  int64_t cpuNs = 0;      ///< this process's CPU time (every thread) over the same span
  uint64_t corruptMessages = 0;
  std::string firstCorruption;  ///< empty when every message verified
};
/// `posted` runs once, on this thread, after the first receives were posted.
Expected<RecvOutcome> runRecvProgress(const ProgressSetup& setup,
                                      const std::function<void()>& posted);

/// User + system CPU time of this process (all threads: the plugin's helpers count), in ns.
int64_t processCpuNs();

}  // namespace pilot::cli
