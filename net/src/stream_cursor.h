// One data stream of a connection and what a pass over it reports: shared by the comms
// (socket_comm.h), which queue work on it, and whoever moves it: the progress thread itself, or
// a helper thread (stream_workers.h).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "socket_io.h"
#include "tag_queue.h"
#include "wire.h"

namespace pilot::net {

/// The messages that have chunks on one data stream, in message order (as ring keys: the
/// sender's message sequence, the receiver's buffer index), and how far the chunk at the front
/// has moved (its 16-byte header counts as the first bytes). The progress thread pushes; the
/// mover (the progress thread, or the stream's helper thread) owns everything else.
struct StreamCursor {
  Fd fd;
  int index = 0;                               ///< 0-based data stream number
  std::array<uint32_t, kMaxInflight> queue{};  ///< ring keys of the messages
  uint32_t head = 0;                           ///< the mover's
  std::atomic<uint32_t> tail{0};               ///< the progress thread's; release-published
  uint32_t chunk = 0;                          ///< chunk index within the front message
  uint64_t moved = 0;  ///< header + payload bytes of that chunk moved so far
  bool started = false;
  uint8_t header[wire::ChunkHeader::kBytes] = {};

  bool empty() const { return head == tail.load(std::memory_order_acquire); }
  uint32_t front() const { return queue[head & kRingMask]; }
  void push(uint32_t key) {
    const uint32_t t = tail.load(std::memory_order_relaxed);
    queue[t & kRingMask] = key;
    tail.store(t + 1, std::memory_order_release);
  }
};

using StreamArray = std::array<StreamCursor, wire::kMaxStreams>;

/// What one pass over a stream did (until it would block or had nothing left).
struct StreamPass {
  bool blocked = false;  ///< work is left, the kernel would block
  std::string error;     ///< "": fine; else the comm fails with it
};

}  // namespace pilot::net
