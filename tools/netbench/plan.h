// What NCCL's proxy would move for one size: the protocol buffers a connection registers, the
// slot (step) size and depth it pipelines with, and how an operation of `size` bytes is cut
// into per-channel messages (research/net.md §2.3-2.4). Pure logic, no plugin.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pilot/core/result.h"

namespace pilot::cli {

/// NCCL's protocol indices (NCCL_PROTO_LL = 0, LL128 = 1, SIMPLE = 2): also the order in
/// which a connection registers its buffers.
enum class Proto : int { LL = 0, LL128 = 1, Simple = 2 };
constexpr int kNumProtos = 3;

const char* protoName(Proto p);
std::optional<Proto> parseProto(const std::string& name);

/// NCCL_STEPS: every protocol buffer is cut into this many slots.
constexpr int kNcclSteps = 8;
/// NCCL_SHARED_STEPS: the proxy's depth budget shared by the subs (channels) of one operation.
constexpr int kNcclSharedSteps = 16;
/// MAXCHANNELS.
constexpr int kMaxChannels = 64;

/// Bytes of each protocol buffer of one connection, indexed by Proto.
using ProtoBufferSizes = std::array<size_t, kNumProtos>;

/// NCCL's defaults: LL 524,288 B, LL128 4,915,200 B, Simple 4 MiB.
ProtoBufferSizes defaultBufferSizes();
/// The defaults overridden by NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE and NCCL_BUFFSIZE when set,
/// as NCCL reads them. Fails on a value NCCL would choke on (not a positive multiple of 64
/// bytes per slot, or over 1 GiB).
Expected<ProtoBufferSizes> bufferSizesFromEnvironment();

/// How the proxy pipelines one connection.
struct StepShape {
  size_t slotBytes = 0;       ///< buffer / NCCL_STEPS
  int sliceSteps = 1;         ///< slots per message (Simple ring collectives use 2; LL/LL128 1)
  int maxDepth = kNcclSteps;  ///< min(NCCL_STEPS, NCCL_SHARED_STEPS / channels), in slots

  /// Largest isend, and the size of every irecv the receiver posts.
  size_t messageBytes() const { return slotBytes * static_cast<size_t>(sliceSteps); }
  /// Messages a connection has in flight at most.
  int messagesInFlight() const { return (maxDepth + sliceSteps - 1) / sliceSteps; }
};

StepShape stepShape(const ProtoBufferSizes& buffers, Proto proto, int sliceSteps, int channels);

/// One operation of `size` bytes split over the channels and cut into messages, repeated.
/// Like consecutive NCCL operations on one connection, the messages of all iterations form
/// one stream of steps per channel.
class SizePlan {
 public:
  SizePlan(uint64_t size, int channels, size_t messageBytes, uint64_t warmup, uint64_t iterations);

  uint64_t size() const { return size_; }
  int channels() const { return static_cast<int>(parts_.size()); }
  uint64_t warmup() const { return warmup_; }
  uint64_t iterations() const { return iterations_; }  ///< timed ones, after the warmup

  /// Bytes channel c carries per iteration (the first size % channels channels get one more).
  uint64_t partBytes(int c) const { return parts_[c]; }
  /// Messages per iteration on channel c: at least one (an empty part is one 0-byte message).
  uint64_t messagesPerIteration(int c) const;
  /// Messages on channel c over the whole run (warmup + timed).
  uint64_t totalMessages(int c) const;

  struct Message {
    uint64_t iteration;  ///< 0-based, warmup included
    uint64_t index;      ///< within the iteration
    uint64_t offset;     ///< of its first byte within the channel's part
    size_t bytes;
    bool timed;  ///< after the warmup
  };
  /// The n-th message of channel c's stream.
  Message message(int c, uint64_t n) const;

  /// Timed totals over all channels.
  uint64_t timedMessages() const;
  uint64_t timedBytes() const;

 private:
  uint64_t size_;
  size_t messageBytes_;
  uint64_t warmup_;
  uint64_t iterations_;
  std::vector<uint64_t> parts_;
};

/// Timed iterations for one size: `iters`, or more until `minBytes` have moved (a 0-byte size
/// only runs `iters`).
uint64_t iterationsFor(uint64_t size, uint64_t iters, uint64_t minBytes);

}  // namespace pilot::cli
