// The two ends of one socket-transport connection. Everything a comm needs in flight is
// allocated when the comm is built (rings of kMaxInflight entries indexed by sequence number),
// so isend/irecv/test allocate nothing and nothing the peer sends can size an allocation.
//
// Progress: every isend/irecv/test drives the whole comm with nonblocking I/O (CTS records,
// headers, every data stream) until the kernel would block, so NCCL's progress thread is never
// held and no helper thread is needed (docs/performance.md, "TCP transport", has the figures).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "pilot/core/log.h"
#include "socket_io.h"
#include "wire.h"

namespace pilot::net {

constexpr uint32_t kRingMask = kMaxInflight - 1;
static_assert((kMaxInflight & kRingMask) == 0, "rings are indexed by sequence & mask");

/// The sockets of one established connection, as connect/accept hand them over.
struct Connection {
  Fd control;
  std::array<Fd, wire::kMaxStreams> data;
  int streams = 0;
  uint64_t chunkBytes = 0;  ///< the sender's chunk size (the receiver learns it from the hello)
  std::string peer;         ///< "addr:port" for log lines
};

/// One data stream: the messages that have chunks on it, in message order, and how far the
/// chunk at the front has moved (its 16-byte header counts as the first bytes).
struct StreamCursor {
  Fd fd;
  int index = 0;                               ///< 0-based data stream number
  std::array<uint32_t, kMaxInflight> queue{};  ///< message sequence numbers
  uint32_t head = 0;
  uint32_t tail = 0;
  uint32_t chunk = 0;  ///< chunk index within the front message
  uint64_t moved = 0;  ///< header + payload bytes of that chunk moved so far
  bool started = false;
  bool closed = false;  ///< the peer shut this stream (receiver side)
  uint8_t header[wire::ChunkHeader::kBytes] = {};

  bool empty() const { return head == tail; }
  uint32_t front() const { return queue[head & kRingMask]; }
  void push(uint32_t seq) { queue[tail++ & kRingMask] = seq; }
};

/// Common to both ends: the request kind test() dispatches on, and its life cycle.
struct SocketRequest : Request {
  enum class Kind : uint8_t { Send, Recv };
  enum class State : uint8_t { Free, Active, Complete };
  Kind kind = Kind::Send;
  State state = State::Free;
  void* owner = nullptr;  ///< the SocketSendComm / SocketRecvComm whose ring holds it
};

/// What a comm moved, for the INFO line at close: the evidence that data went through this
/// transport (tests/gpu/run.sh sums these lines from NCCL's log).
struct TrafficCount {
  uint64_t messages = 0;
  uint64_t bytes = 0;
  void add(uint64_t size) {
    ++messages;
    bytes += size;
  }
};

/// Moves the data sockets of `connection` into a comm's stream cursors.
void adoptStreams(Connection& connection, std::array<StreamCursor, wire::kMaxStreams>& streams);

/// Remembers the first failure of a comm (every later call returns it) and logs it once.
class FailureLatch {
 public:
  FailureLatch(Logger& log, const char* role, std::string peer)
      : log_(log), role_(role), peer_(std::move(peer)) {}
  bool failed() const { return failed_; }
  Error error() const { return Error{message_}; }
  const std::string& peer() const { return peer_; }
  /// The INFO line a comm writes when it is closed: "<role> <peer> closed: <what it moved>".
  void logClosed(const TrafficCount& moved, int streams) const;
  /// Records (first time only) and logs "<role> <peer>: <what>"; returns the comm's error.
  Error fail(const std::string& what);
  /// A misuse by the caller: logged, returned, but the comm stays usable.
  Error usage(const std::string& what);

 private:
  Logger& log_;
  const char* role_;
  std::string peer_;
  std::string message_;
  bool failed_ = false;
};

class SocketSendComm final : public SendComm {
 public:
  SocketSendComm(Connection connection, Logger& log);
  ~SocketSendComm();
  Expected<Request*> isend(const void* data, size_t size, int tag);
  Status test(SocketRequest* request, TestResult* result);

 private:
  struct Message : SocketRequest {
    const uint8_t* data = nullptr;
    uint64_t size = 0;
    uint32_t seq = 0;
    uint32_t base = 0;  ///< data stream of chunk 0
    uint32_t chunksLeft = 0;
    bool headerSent = false;
    wire::ChunkPlan plan;
    uint8_t header[wire::MsgHeader::kBytes] = {};
  };
  /// What the peer posted (from its CTS records), consumed in order.
  struct PeerSlot {
    int32_t tag = 0;
    bool matched = false;
    uint64_t capacity = 0;
  };
  struct PeerGroup {
    uint32_t firstSlot = 0;
    uint16_t n = 0;
    uint16_t matched = 0;
  };

  /// Writes what is queued (headers, chunks). The CTS direction is read by isend only, when
  /// it needs a buffer it does not know yet; write errors report a dead peer meanwhile.
  Status progress();
  int findSlot(int tag) const;
  Status readCts();
  Status acceptCts(const wire::Cts& cts);
  Status writeControl();
  Status writeStream(StreamCursor& stream);
  void chunkDone(Message& m);
  Message& message(uint32_t seq) { return messages_[seq & kRingMask]; }

  Fd control_;
  int streamCount_;
  uint64_t chunkBytes_;
  FailureLatch latch_;
  TrafficCount sent_;
  bool peerClosed_ = false;

  std::array<Message, kMaxInflight> messages_;
  uint32_t nextSeq_ = 0;     ///< next message
  uint32_t ctrlSeq_ = 0;     ///< first message whose header is not fully written
  size_t ctrlMoved_ = 0;     ///< header + inline bytes of ctrlSeq_ written
  uint32_t nextStream_ = 0;  ///< data stream of the next chunk (round-robin)

  std::array<PeerSlot, kMaxInflight> peerSlots_;
  std::array<PeerGroup, kMaxInflight> peerGroups_;
  uint32_t groupsKnown_ = 0;  ///< CTS records received
  uint32_t headGroup_ = 0;    ///< oldest group with an unmatched buffer
  uint32_t slotsKnown_ = 0;
  uint32_t slotsUsed_ = 0;  ///< peer slots of groups before headGroup_

  std::array<uint8_t, 4096> ctsIn_{};
  size_t ctsBegin_ = 0;
  size_t ctsEnd_ = 0;

  std::array<StreamCursor, wire::kMaxStreams> streams_;
};

class SocketRecvComm final : public RecvComm {
 public:
  SocketRecvComm(Connection connection, Logger& log);
  ~SocketRecvComm();
  Expected<Request*> irecv(int n, void* const* data, const size_t* sizes, const int* tags);
  Status test(SocketRequest* request, TestResult* result);

 private:
  struct Slot {
    uint8_t* data = nullptr;
    uint64_t capacity = 0;
    uint64_t size = 0;
    int32_t tag = 0;
    bool announced = false;
  };
  struct Group : SocketRequest {
    uint32_t firstSlot = 0;
    uint16_t n = 0;
    uint16_t announced = 0;
    uint16_t completed = 0;
  };
  struct Message {
    bool busy = false;
    uint32_t group = 0;
    uint32_t slot = 0;  ///< absolute slot number
    uint64_t size = 0;
    uint32_t base = 0;
    uint32_t chunksLeft = 0;
    wire::ChunkPlan plan;
  };

  Status progress();
  Status writeCts();
  Status readControl();
  Status onHeader(const wire::MsgHeader& header);
  Status readStream(StreamCursor& stream);
  void messageDone(Message& m);
  void release(Group& g);
  Group& group(uint32_t seq) { return groups_[seq & kRingMask]; }
  Slot& slot(uint32_t n) { return slots_[n & kRingMask]; }

  Fd control_;
  int streamCount_;
  uint64_t chunkBytes_;
  FailureLatch latch_;
  TrafficCount received_;
  bool controlClosed_ = false;

  std::array<Slot, kMaxInflight> slots_;
  uint32_t slotHead_ = 0;  ///< oldest slot still owned by a request
  uint32_t slotTail_ = 0;
  std::array<Group, kMaxInflight> groups_;
  uint32_t postedGroups_ = 0;
  uint32_t oldestGroup_ = 0;    ///< oldest request not yet released
  uint32_t announceGroup_ = 0;  ///< oldest group still waiting for a message header
  uint32_t ctsSent_ = 0;        ///< groups whose CTS record is fully written
  size_t ctsMoved_ = 0;
  size_t ctsLength_ = 0;
  uint8_t ctsOut_[wire::Cts::kMaxBytes] = {};

  std::array<Message, kMaxInflight> messages_;
  uint32_t nextMsgSeq_ = 0;
  uint32_t nextStream_ = 0;

  std::array<uint8_t, 16384> in_{};
  size_t inBegin_ = 0;
  size_t inEnd_ = 0;
  Message* inlineMessage_ = nullptr;  ///< message whose inline payload is being read
  uint64_t inlineMoved_ = 0;

  std::array<StreamCursor, wire::kMaxStreams> streams_;
};

}  // namespace pilot::net
