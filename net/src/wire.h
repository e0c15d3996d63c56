// The socket transport's wire formats (net/README.md tells the whole protocol). Every field is
// little-endian and written byte by byte, so the layout never depends on the compiler. Decoders
// only copy fields out; every range check happens where the value is used, against limits this
// side chose (never against a value from the wire).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pilot/net/transport.h"

namespace pilot::net::wire {

/// Version 3: sender-driven (eager) messages matched by tag at the receiver; message and chunk
/// headers of one cache line.
constexpr uint16_t kVersion = 3;
constexpr uint32_t kHandleMagic = 0x31484c50;  // "PLH1"
constexpr uint32_t kHelloMagic = 0x31534c50;   // "PLS1": first bytes on every socket
constexpr uint32_t kCtsMagic = 0x31434c50;     // "PLC1": receiver -> sender, posted buffers
constexpr uint32_t kMsgMagic = 0x324d4c50;     // "PLM2": sender -> receiver, one message

/// Chunks are multiples of a page and never smaller than this (NCCL's socket task minimum), so
/// a stream's per-chunk cost stays small next to its copy.
constexpr size_t kChunkAlign = 4096;
constexpr size_t kMinChunk = size_t{64} << 10;
/// Largest message size the protocol carries (NCCL_MAX_NET_SIZE_BYTES, 1 TiB).
constexpr uint64_t kMaxMessage = uint64_t{1} << 40;
/// Data streams a peer may ask for (the hello's stream count is checked against it).
constexpr int kMaxStreams = 16;
/// Largest message a sender may write before it knows the receive it lands in (its eager
/// limit, told in the hello), and how many such unconfirmed messages, of how many bytes in
/// all, it may have outstanding. The receiver parks an eager message whose receive is not
/// posted yet in a pool of kParkBytes, so the control stream always drains (net/README.md).
constexpr size_t kMaxEager = size_t{64} << 10;
static_assert(kMaxEager <= kMinChunk, "an eager message is never striped");
constexpr int kMaxParked = 64;
constexpr size_t kParkBytes = size_t{1} << 20;

inline void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
inline uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

/// The listen handle (kHandleBytes). Bytes 40..47 belong to the connecting side: listen()
/// writes 0 there and connect() keeps its retry ticket in them.
struct Handle {
  static constexpr size_t kTicketOffset = 40;
  uint16_t family = 0;  ///< AF_INET / AF_INET6
  uint16_t port = 0;    ///< host order
  uint32_t scopeId = 0;
  uint8_t address[16] = {};
  uint64_t secret = 0;
};
void encodeHandle(const Handle& h, uint8_t out[kHandleBytes]);
/// False when the bytes are not a handle of this protocol version.
bool decodeHandle(const uint8_t in[kHandleBytes], Handle* h);
inline uint64_t handleTicket(const void* handle) {
  return get64(static_cast<const uint8_t*>(handle) + Handle::kTicketOffset);
}
inline void setHandleTicket(void* handle, uint64_t ticket) {
  put64(static_cast<uint8_t*>(handle) + Handle::kTicketOffset, ticket);
}

/// First bytes on every socket of a connection, connector -> listener.
struct Hello {
  static constexpr size_t kBytes = 36;
  uint16_t index = 0;    ///< 0 = control socket, 1..streams = data stream
  uint16_t streams = 0;  ///< data streams of this connection (0: all on the control socket)
  uint32_t chunkBytes = 0;
  uint64_t secret = 0;
  uint64_t nonce = 0;       ///< random per connection: groups its sockets on the listener
  uint32_t eagerBytes = 0;  ///< the sender's eager limit (<= kMaxEager)
};
void encodeHello(const Hello& h, uint8_t out[Hello::kBytes]);
bool decodeHello(const uint8_t in[Hello::kBytes], Hello* h);  ///< false: wrong magic/version
/// Why a decoded hello must be refused (nullptr: acceptable). Every bound is this side's own.
const char* helloProblem(const Hello& h, uint64_t secret, uint32_t maxChunk);

/// Receiver -> sender on the control socket: one irecv, `n` buffers (tag, capacity).
struct Cts {
  static constexpr size_t kHeadBytes = 16;
  static constexpr size_t kEntryBytes = 16;
  static constexpr size_t kMaxBytes = kHeadBytes + kMaxRecvs * kEntryBytes;
  uint32_t group = 0;  ///< irecv sequence number
  uint16_t n = 0;
  int32_t tags[kMaxRecvs] = {};
  uint64_t capacity[kMaxRecvs] = {};
};
/// Returns the encoded length.
size_t encodeCts(const Cts& c, uint8_t out[Cts::kMaxBytes]);
/// Reads the head; false on a wrong magic. c->n is unchecked: the caller bounds it.
bool decodeCtsHead(const uint8_t in[Cts::kHeadBytes], Cts* c);
void decodeCtsEntry(const uint8_t in[Cts::kEntryBytes], int slot, Cts* c);

/// Sender -> receiver on the control socket, in message order: one message, its payload right
/// behind it when it is not striped. The receiver picks the buffer: the oldest posted one with
/// this tag that no earlier message took (so the k-th message with tag T fills the k-th
/// buffer posted with tag T, as NCCL's IB transport places them).
struct MsgHeader {
  /// 24 bytes of fields, then zeros to a cache line: a payload then starts on a 64-byte
  /// boundary of the stream, and the kernel's copies into and out of the socket buffers run
  /// aligned (at 512K, 10-20% less CPU per byte than behind a 24-byte header; performance.md).
  static constexpr size_t kBytes = 64;
  static constexpr size_t kFieldBytes = 24;
  uint32_t seq = 0;  ///< message sequence number of the connection
  int32_t tag = 0;
  uint64_t size = 0;
};
void encodeMsgHeader(const MsgHeader& m, uint8_t out[MsgHeader::kBytes]);
/// False on a wrong magic or a non-zero reserved word or padding.
bool decodeMsgHeader(const uint8_t in[MsgHeader::kBytes], MsgHeader* m);

/// Before every chunk on a data stream: what the receiver expects to read there anyway, checked
/// so a desynchronised stream is an error instead of silently misplaced bytes.
struct ChunkHeader {
  /// 16 bytes of fields, then zeros to a cache line, for the same reason as MsgHeader's.
  static constexpr size_t kBytes = 64;
  static constexpr size_t kFieldBytes = 16;
  uint32_t seq = 0;
  uint32_t length = 0;
  uint64_t offset = 0;
};
void encodeChunkHeader(const ChunkHeader& c, uint8_t out[ChunkHeader::kBytes]);
/// False when the padding behind the fields is not zero.
bool decodeChunkHeader(const uint8_t in[ChunkHeader::kBytes], ChunkHeader* c);

/// How a message is cut: `chunks` pieces of `chunkBytes` (the last one shorter), chunk c on data
/// stream (base + c) % streams. Both ends compute it from the size alone. A message of at most
/// `maxChunk` bytes (or any message without data streams) has no chunks: its payload follows
/// the header on the control socket, where eager messages (at most kMaxEager <= kMinChunk)
/// always are.
struct ChunkPlan {
  uint64_t chunkBytes = 0;
  uint32_t chunks = 0;
};
ChunkPlan planChunks(uint64_t size, int streams, uint64_t maxChunk);

}  // namespace pilot::net::wire
