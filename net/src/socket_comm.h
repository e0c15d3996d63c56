// The two ends of one socket-transport connection. Everything a comm needs in flight is
// allocated when the comm is built (rings of kMaxInflight entries indexed by sequence number),
// so isend/irecv/test allocate nothing, and nothing the peer sends sizes an allocation (the
// receiver's parking pool has a fixed size, made on first use).
//
// Progress: test drives the whole comm with nonblocking I/O (headers, payloads, CTS records, and
// the data streams unless helper threads move them: stream_workers.h) until the kernel would
// block, so NCCL's progress thread is never held (docs/performance.md has the figures).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "ack_deadline.h"
#include "pilot/core/log.h"
#include "socket_io.h"
#include "stream_cursor.h"
#include "stream_workers.h"
#include "tag_queue.h"
#include "wire.h"

namespace pilot::net {

/// The sockets of one established connection, as connect/accept hand them over.
struct Connection {
  Fd control;
  std::array<Fd, wire::kMaxStreams> data;
  int streams = 0;
  uint64_t chunkBytes = 0;  ///< the sender's chunk size (the receiver learns it from the hello)
  uint64_t eagerBytes = 0;  ///< the sender's eager limit (likewise)
  int threads = 0;          ///< this side's helper threads for the data streams
  int timeoutMs = 30000;    ///< NCCL_PILOT_SOCKET_TIMEOUT_MS: the ack deadline; how long a closed
                            ///< sender lingers
  std::string peer;         ///< "addr:port" for log lines
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

/// The tags that already have an older message waiting, while a queue of at most kMaxParked
/// messages is walked oldest first (messages of one tag must keep their order).
class TagSet {
 public:
  bool contains(int32_t tag) const {
    for (int i = 0; i < count_; ++i) {
      if (tags_[i] == tag) return true;
    }
    return false;
  }
  void add(int32_t tag) {
    if (!contains(tag) && count_ < wire::kMaxParked) tags_[count_++] = tag;
  }

 private:
  std::array<int32_t, wire::kMaxParked> tags_{};
  int count_ = 0;
};

/// Moves the data sockets of `connection` into a comm's stream cursors.
void adoptStreams(Connection& connection, StreamArray& streams);

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

/// Shuts every socket of a failed comm in both directions, so the peer's next call fails at
/// once instead of waiting for data that will never come.
void shutdownSockets(const Fd& control, const StreamArray& streams, int count);

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
    uint32_t base = 0;                    ///< data stream of chunk 0
    std::atomic<uint32_t> chunksLeft{0};  ///< counted down by whoever moves the streams
    bool headerSent = false;
    wire::ChunkPlan plan;
    uint8_t header[wire::MsgHeader::kBytes] = {};
  };
  /// A message written before the sender knew its buffer (at most kMaxParked of them, of at
  /// most kParkBytes together, at a time).
  struct Unconfirmed {
    int32_t tag = 0;
    uint64_t size = 0;
  };

  /// Writes what is queued (headers, payloads, chunks): on the control socket up to and with
  /// `tested` when one is given, else all. The CTS direction is read only when a message needs
  /// a buffer this side does not know yet.
  Status progress(const Message* tested = nullptr);
  /// Reads every CTS record waiting; each confirms the oldest unconfirmed messages it can.
  Status readCts();
  Status acceptCts(const wire::Cts& cts);
  Status confirmWaiting();
  /// The buffer of a message with `tag` of `size` bytes, if this side knows it.
  Expected<bool> matchKnown(int32_t tag, uint64_t size);
  static std::string tooLarge(int32_t tag, uint64_t size, uint64_t capacity);
  Status writeControl(const Message* tested);
  /// One stream's chunks, from the progress thread or a helper: touches only the stream and
  /// the (published) messages queued on it.
  StreamPass writeStream(StreamCursor& stream);
  static StreamPass moveStream(void* comm, StreamCursor& stream) {
    return static_cast<SocketSendComm*>(comm)->writeStream(stream);
  }
  /// Active -> Complete once the header is out and every chunk written.
  static void settle(Message& m);
  /// The control socket and the data streams against the ack deadline (when it is due).
  Status checkAcknowledged();
  Error fail(const std::string& what);
  Message& message(uint32_t seq) { return messages_[seq & kRingMask]; }

  Fd control_;
  int streamCount_;
  uint64_t chunkBytes_;
  uint64_t eagerBytes_;
  int timeoutMs_;
  FailureLatch latch_;
  TrafficCount sent_;
  bool peerClosed_ = false;
  AckDeadline acks_;

  std::array<Message, kMaxInflight> messages_;
  uint32_t nextSeq_ = 0;     ///< next message
  uint32_t ctrlSeq_ = 0;     ///< first message whose header (and payload) is not fully written
  size_t ctrlMoved_ = 0;     ///< header + inline bytes of ctrlSeq_ written
  uint32_t nextStream_ = 0;  ///< data stream of the next chunk (round-robin)

  /// The receiver's posted buffers as its CTS records told them, and their capacities.
  TagQueue known_;
  std::array<uint64_t, kMaxInflight> capacity_{};
  uint32_t ctsGroups_ = 0;                                   ///< CTS records received
  std::array<Unconfirmed, wire::kMaxParked> unconfirmed_{};  ///< oldest first
  int unconfirmedCount_ = 0;
  uint64_t unconfirmedBytes_ = 0;

  std::array<uint8_t, 4096> ctsIn_{};
  size_t ctsBegin_ = 0;
  size_t ctsEnd_ = 0;

  StreamArray streams_;
  std::unique_ptr<StreamWorkers> workers_;  ///< declared last: joined before the rest goes
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
    uint32_t group = 0;
    uint32_t seq = 0;  ///< the message placed here
    // A striped message in this buffer: its plan, first stream and chunks still to come.
    wire::ChunkPlan plan;
    uint32_t base = 0;
    std::atomic<uint32_t> chunksLeft{0};  ///< counted down by whoever moves the streams
  };
  struct Group : SocketRequest {
    uint32_t firstSlot = 0;
    uint16_t n = 0;
    uint16_t filled = 0;
  };
  /// An eager message that came before its buffer was posted, held in the parking pool.
  struct Parked {
    int32_t tag = 0;
    uint64_t size = 0;
    size_t offset = 0;      ///< of its payload in the pool
    bool complete = false;  ///< its payload has been read
  };
  /// Where the payload after the current header goes.
  struct PayloadTarget {
    uint8_t* data = nullptr;
    uint64_t left = 0;
    int64_t slot = -1;  ///< buffer index, or -1: the newest parked message
  };

  Status progress();
  /// Writes the pending CTS records, a batch per system call.
  Status writeCts();
  /// Reads and places what the control socket holds; *busy: some bytes arrived.
  Status readControl(bool* busy);
  Status onHeader(const wire::MsgHeader& header);
  Status place(uint32_t slot, const wire::MsgHeader& header);
  Status park(const wire::MsgHeader& header);
  /// Moves parked messages into buffers posted since (oldest first, per tag in order).
  Status unpark();
  Status payloadDone();
  /// The control socket (where this side writes its CTS records) against the ack deadline.
  Status checkAcknowledged();
  /// One stream's chunks, from the progress thread or a helper (see SocketSendComm).
  StreamPass readStream(StreamCursor& stream);
  static StreamPass moveStream(void* comm, StreamCursor& stream) {
    return static_cast<SocketRecvComm*>(comm)->readStream(stream);
  }
  /// Buffers whose striped message arrived completely, oldest first.
  void settleStriped();
  void slotFilled(uint32_t slot);
  void release(Group& g);
  Error fail(const std::string& what);
  Group& group(uint32_t seq) { return groups_[seq & kRingMask]; }
  Slot& slot(uint32_t n) { return slots_[n & kRingMask]; }

  Fd control_;
  int streamCount_;
  uint64_t chunkBytes_;
  uint64_t eagerBytes_;
  FailureLatch latch_;
  TrafficCount received_;
  bool controlClosed_ = false;
  AckDeadline acks_;

  TagQueue posted_;  ///< every posted buffer, matched by tag as headers arrive
  std::array<Slot, kMaxInflight> slots_;
  uint32_t slotHead_ = 0;  ///< oldest slot still owned by a request
  std::array<Group, kMaxInflight> groups_;
  uint32_t postedGroups_ = 0;
  uint32_t oldestGroup_ = 0;     ///< oldest request not yet released
  uint32_t completeGroups_ = 0;  ///< requests complete, in posting order
  uint32_t ctsSent_ = 0;         ///< groups whose CTS record is fully written
  static constexpr uint32_t kCtsBatch = 4;
  uint32_t ctsBatched_ = 0;  ///< records in ctsOut_
  size_t ctsMoved_ = 0;
  size_t ctsLength_ = 0;
  std::array<uint8_t, kCtsBatch * wire::Cts::kMaxBytes> ctsOut_{};

  uint32_t nextMsgSeq_ = 0;
  uint64_t lastSize_ = 0;  ///< of the newest message header
  uint32_t nextStream_ = 0;
  std::array<uint32_t, kMaxInflight> striped_{};  ///< buffers with chunks coming, in order
  uint32_t stripedHead_ = 0;
  uint32_t stripedTail_ = 0;

  std::array<uint8_t, 16384> in_{};
  size_t inBegin_ = 0;
  size_t inEnd_ = 0;
  PayloadTarget payload_;  ///< data == nullptr && left == 0: a header comes next

  std::array<Parked, wire::kMaxParked> parked_{};  ///< arrival order = pool offset order
  int parkedCount_ = 0;
  uint64_t parkedBytes_ = 0;
  size_t poolTop_ = 0;               ///< end of the newest parked payload
  std::unique_ptr<uint8_t[]> pool_;  ///< kParkBytes, made when first needed

  StreamArray streams_;
  std::unique_ptr<StreamWorkers> workers_;  ///< declared last: joined before the rest goes
};

}  // namespace pilot::net
