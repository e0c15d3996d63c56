// Posted buffers in posting order, matched by tag: the k-th message with tag T takes the k-th
// buffer posted with tag T. Both ends keep one (the receiver of what it posted, the sender of
// what the receiver's CTS records told it), so both place every message in the same buffer
// without the header naming it. This is where NCCL's IB transport puts each message too
// (net/README.md, "Matching"); a message may only land earlier than there.
#pragma once

#include <array>
#include <cstdint>

#include "pilot/net/transport.h"

namespace pilot::net {

constexpr uint32_t kRingMask = kMaxInflight - 1;
static_assert((kMaxInflight & kRingMask) == 0, "rings are indexed by sequence & mask");

class TagQueue {
 public:
  /// Appends a buffer with `tag`; returns its absolute index (the caller keeps the rest of the
  /// buffer's facts at index & kRingMask). The caller bounds outstanding() to kMaxInflight.
  uint32_t push(int32_t tag) {
    Entry& e = entries_[tail_ & kRingMask];
    e.tag = tag;
    e.taken = false;
    return tail_++;
  }

  /// Takes the oldest buffer with `tag` no message took yet; false when there is none.
  bool take(int32_t tag, uint32_t* index) {
    for (uint32_t i = head_; i != tail_; ++i) {
      Entry& e = entries_[i & kRingMask];
      if (e.taken || e.tag != tag) continue;
      e.taken = true;
      *index = i;
      while (head_ != tail_ && entries_[head_ & kRingMask].taken) ++head_;
      return true;
    }
    return false;
  }

  int32_t tagOf(uint32_t index) const { return entries_[index & kRingMask].tag; }
  /// Buffers from the oldest not taken to the newest: what must fit in a ring.
  uint32_t outstanding() const { return tail_ - head_; }
  /// Some buffer is still waiting for its message.
  bool waiting() const { return head_ != tail_; }
  uint32_t tail() const { return tail_; }

 private:
  struct Entry {
    int32_t tag = 0;
    bool taken = false;
  };
  std::array<Entry, kMaxInflight> entries_{};
  uint32_t head_ = 0;  ///< oldest buffer not taken
  uint32_t tail_ = 0;
};

}  // namespace pilot::net
