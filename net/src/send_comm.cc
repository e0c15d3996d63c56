// The sending end: writes each message as soon as NCCL posts it, header then payload on the
// control socket (striped over the data streams when large), like NCCL's own socket transport.
// What it must know first is bounded by the receiver's CTS records (what it posted):
// - a message whose buffer a CTS record named goes at once, its size checked against it;
// - a message of at most the eager limit may go before that (unconfirmed), up to kMaxParked
//   messages and kParkBytes at a time, because the receiver can park that much if their
//   receive is not posted yet;
// - anything else waits (isend returns NULL) until a CTS record names its buffer.
// So every byte on the control socket is one the receiver can take without waiting for a later
// one, and no message can block the one behind it (net/README.md, "Data path").
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>

#include "lingering_close.h"
#include "socket_comm.h"

namespace pilot::net {

SocketSendComm::SocketSendComm(Connection connection, Logger& log)
    : control_(std::move(connection.control)),
      streamCount_(connection.streams),
      chunkBytes_(connection.chunkBytes),
      eagerBytes_(connection.eagerBytes),
      timeoutMs_(connection.timeoutMs),
      latch_(log, "send to", std::move(connection.peer)),
      acks_(connection.timeoutMs) {
  adoptStreams(connection, streams_);
  for (Message& m : messages_) m.owner = this;
  workers_ = StreamWorkers::start(connection.threads, streams_, streamCount_, POLLOUT, this,
                                  &SocketSendComm::moveStream);
}

SocketSendComm::~SocketSendComm() {
  latch_.logClosed(sent_, streamCount_);
  // A FIN behind what is queued, then the receiver's last CTS records are read and dropped
  // until it closes too: closing now would reset the connection (lingering_close.h). The data
  // streams carry nothing back; their close is a FIN behind their queued chunks.
  if (!latch_.failed() && control_.valid() && ::shutdown(control_.get(), SHUT_WR) == 0) {
    closeWhenPeerCloses(std::move(control_), nowMs() + timeoutMs_);
  }
}

Error SocketSendComm::fail(const std::string& what) {
  const bool first = !latch_.failed();
  Error e = latch_.fail(what);
  if (first) shutdownSockets(control_, streams_, streamCount_);
  return e;
}

Expected<bool> SocketSendComm::matchKnown(int32_t tag, uint64_t size) {
  // No need to look for an older unconfirmed message with this tag first: confirmWaiting()
  // hands every known buffer to the unconfirmed messages before anyone else can take it, so
  // while one waits there is no free known buffer with its tag.
  uint32_t index = 0;
  if (!known_.take(tag, &index)) return false;
  const uint64_t capacity = capacity_[index & kRingMask];
  if (size > capacity) return fail(tooLarge(tag, size, capacity));
  return true;
}

std::string SocketSendComm::tooLarge(int32_t tag, uint64_t size, uint64_t capacity) {
  return "message of " + std::to_string(size) + " bytes (tag " + std::to_string(tag) +
         ") is larger than the " + std::to_string(capacity) + "-byte buffer the peer posted";
}

Expected<Request*> SocketSendComm::isend(const void* data, size_t size, int tag) {
  if (latch_.failed()) return latch_.error();
  if (size > wire::kMaxMessage) {
    return fail("message of " + std::to_string(size) + " bytes is above the 1 TiB limit");
  }
  if (size > 0 && data == nullptr)
    return latch_.usage("isend: null buffer for a non-empty message");
  Message& m = message(nextSeq_);
  if (m.state != SocketRequest::State::Free) {
    if (Status s = progress(); !s) return Error{s.error()};
    return static_cast<Request*>(nullptr);  // kMaxInflight sends in flight: NCCL retries
  }
  const bool eager = eagerBytes_ > 0 && size <= eagerBytes_;
  // Twice at most: with what is known, then after reading the CTS records waiting.
  bool go = false;
  for (int attempt = 0; attempt < 2 && !go; ++attempt) {
    if (attempt == 1) {
      if (Status s = readCts(); !s) return Error{s.error()};
      if (peerClosed_) return fail("peer closed the connection");
    }
    Expected<bool> known = matchKnown(tag, size);
    if (!known) return Error{known.error()};
    go = *known;
    if (!go && eager && unconfirmedCount_ < wire::kMaxParked &&
        unconfirmedBytes_ + size <= wire::kParkBytes) {
      unconfirmed_[unconfirmedCount_++] = {tag, size};
      unconfirmedBytes_ += size;
      go = true;
    }
  }
  if (!go) {
    // The peer has not posted this receive yet. No writing here: NCCL tests its oldest send
    // next, and that test writes what is queued (writing from here too copied steps NCCL had
    // not asked about yet, measured 3-5% slower at 4M: docs/performance.md). Nothing may be
    // left to test, so the wait for the record keeps the ack deadline.
    if (Status s = checkAcknowledged(); !s) return Error{s.error()};
    return static_cast<Request*>(nullptr);
  }

  m.kind = SocketRequest::Kind::Send;
  m.state = SocketRequest::State::Active;
  m.data = static_cast<const uint8_t*>(data);
  m.size = size;
  m.seq = nextSeq_++;
  m.headerSent = false;
  m.plan = wire::planChunks(size, streamCount_, chunkBytes_);
  m.chunksLeft.store(m.plan.chunks, std::memory_order_relaxed);
  m.base = nextStream_;
  wire::encodeMsgHeader({m.seq, tag, size}, m.header);
  if (m.plan.chunks > 0) {
    nextStream_ = (nextStream_ + m.plan.chunks) % static_cast<uint32_t>(streamCount_);
    const uint32_t used = std::min<uint32_t>(m.plan.chunks, static_cast<uint32_t>(streamCount_));
    // Everything above is written before the push publishes the message to the streams.
    for (uint32_t c = 0; c < used; ++c) streams_[(m.base + c) % streamCount_].push(m.seq);
    if (workers_) workers_->wake();
  }
  // No I/O here: test() writes every queued message in one system call, and NCCL tests right
  // after posting (its own socket transport works the same way).
  return static_cast<Request*>(&m);
}

Status SocketSendComm::test(SocketRequest* request, TestResult* result) {
  auto* m = static_cast<Message*>(request);
  if (m->state == SocketRequest::State::Active) {
    if (Status s = progress(m); !s) return s;
    settle(*m);
  }
  result->done = m->state == SocketRequest::State::Complete;
  result->count = 1;
  if (result->done) {
    result->sizes[0] = m->size;
    sent_.add(m->size);
    m->state = SocketRequest::State::Free;
  }
  return Status::success();
}

Status SocketSendComm::checkAcknowledged() {
  if (!acks_.due()) return Status::success();
  if (std::string what = acks_.inspect(0, control_.get()); !what.empty()) {
    return fail("control socket: " + what);
  }
  for (int i = 0; i < streamCount_; ++i) {
    if (std::string what = acks_.inspect(i + 1, streams_[i].fd.get()); !what.empty()) {
      return fail("data stream " + std::to_string(i) + ": " + what);
    }
  }
  return Status::success();
}

Status SocketSendComm::progress(const Message* tested) {
  if (latch_.failed()) return latch_.error();
  if (Status s = checkAcknowledged(); !s) return s;
  if (ctrlSeq_ != nextSeq_) {
    if (Status s = writeControl(tested); !s) return s;
  }
  if (workers_) {
    if (workers_->failed()) return fail(workers_->error());
    return Status::success();
  }
  for (int i = 0; i < streamCount_; ++i) {
    if (!streams_[i].empty()) {
      StreamPass pass = writeStream(streams_[i]);
      if (!pass.error.empty()) return fail(pass.error);
    }
  }
  return Status::success();
}

void SocketSendComm::settle(Message& m) {
  if (m.state == SocketRequest::State::Active && m.headerSent &&
      m.chunksLeft.load(std::memory_order_acquire) == 0) {
    m.state = SocketRequest::State::Complete;
  }
}

Status SocketSendComm::readCts() {
  if (peerClosed_) return Status::success();
  for (;;) {
    // Parse every complete record in the buffer; a record is at most Cts::kMaxBytes.
    while (ctsEnd_ - ctsBegin_ >= wire::Cts::kHeadBytes) {
      wire::Cts cts;
      if (!wire::decodeCtsHead(&ctsIn_[ctsBegin_], &cts)) {
        return fail("protocol error: bad record on the control socket");
      }
      if (cts.n < 1 || cts.n > kMaxRecvs) {
        return fail("protocol error: receive of " + std::to_string(cts.n) + " buffers");
      }
      const size_t length = wire::Cts::kHeadBytes + cts.n * wire::Cts::kEntryBytes;
      if (ctsEnd_ - ctsBegin_ < length) break;
      for (int i = 0; i < cts.n; ++i) {
        wire::decodeCtsEntry(
            &ctsIn_[ctsBegin_ + wire::Cts::kHeadBytes + i * wire::Cts::kEntryBytes], i, &cts);
      }
      ctsBegin_ += length;
      if (Status s = acceptCts(cts); !s) return s;
    }
    if (Status s = confirmWaiting(); !s) return s;
    if (ctsBegin_ == ctsEnd_) ctsBegin_ = ctsEnd_ = 0;
    if (ctsBegin_ > 0 && ctsEnd_ + wire::Cts::kMaxBytes > ctsIn_.size()) {
      std::copy(ctsIn_.begin() + ctsBegin_, ctsIn_.begin() + ctsEnd_, ctsIn_.begin());
      ctsEnd_ -= ctsBegin_;
      ctsBegin_ = 0;
    }
    iovec iov{&ctsIn_[ctsEnd_], ctsIn_.size() - ctsEnd_};
    IoResult r = recvSome(control_.get(), &iov, 1);
    if (r.kind == IoResult::WouldBlock) return Status::success();
    if (r.kind == IoResult::Failed) return fail("control socket: " + errnoText(r.error));
    if (r.kind == IoResult::Closed) {
      peerClosed_ = true;
      if (ctrlSeq_ != nextSeq_ || ctsBegin_ != ctsEnd_) {
        return fail("peer closed the connection with messages in flight");
      }
      for (int i = 0; i < streamCount_; ++i) {
        if (!streams_[i].empty()) return fail("peer closed the connection mid-message");
      }
      return Status::success();
    }
    ctsEnd_ += r.bytes;
  }
}

Status SocketSendComm::acceptCts(const wire::Cts& cts) {
  if (cts.group != ctsGroups_) {
    return fail("protocol error: receive " + std::to_string(cts.group) + " out of order");
  }
  // The peer may only have kMaxInflight buffers outstanding; more would overwrite our ring.
  if (known_.outstanding() + cts.n > static_cast<uint32_t>(kMaxInflight)) {
    return fail("protocol error: more receives posted than the connection allows");
  }
  for (int i = 0; i < cts.n; ++i) capacity_[known_.push(cts.tags[i]) & kRingMask] = cts.capacity[i];
  ++ctsGroups_;
  return Status::success();
}

Status SocketSendComm::confirmWaiting() {
  // Oldest first; a message whose tag has an older one still waiting keeps waiting too.
  TagSet waiting;
  int kept = 0;
  for (int i = 0; i < unconfirmedCount_; ++i) {
    const Unconfirmed u = unconfirmed_[i];
    uint32_t index = 0;
    if (!waiting.contains(u.tag) && known_.take(u.tag, &index)) {
      const uint64_t capacity = capacity_[index & kRingMask];
      if (u.size > capacity) return fail(tooLarge(u.tag, u.size, capacity));
      unconfirmedBytes_ -= u.size;
      continue;
    }
    waiting.add(u.tag);
    unconfirmed_[kept++] = u;
  }
  unconfirmedCount_ = kept;
  return Status::success();
}

Status SocketSendComm::writeControl(const Message* tested) {
  // Several small messages per system call, but no more new ones once 64 KiB are gathered:
  // the kernel imports every iovec of every call, also of the calls that move little, and a
  // write of many times 64K leaves back to back, which BBR's pacing (this kind of host's
  // default) spreads out with a timer per write. Gathering 256K of 32K messages was paced
  // 4.5x as often and ran 0.70x NCCL's Socket over veth; 64K: 1.16x (docs/performance.md).
  // A large message still goes whole behind what is gathered.
  constexpr int kMaxIov = 64;
  constexpr size_t kMaxBatchBytes = size_t{64} << 10;
  while (ctrlSeq_ != nextSeq_) {
    iovec iov[kMaxIov];
    int count = 0;
    size_t skip = ctrlMoved_;
    size_t batched = 0;
    for (uint32_t seq = ctrlSeq_;
         seq != nextSeq_ && count + 2 <= kMaxIov && batched < kMaxBatchBytes; ++seq) {
      Message& m = message(seq);
      const size_t inlineBytes = m.plan.chunks == 0 ? m.size : 0;
      if (skip < sizeof(m.header)) {
        iov[count++] = {m.header + skip, sizeof(m.header) - skip};
        batched += sizeof(m.header) - skip;
        skip = 0;
      } else {
        skip -= sizeof(m.header);
      }
      if (inlineBytes > skip) {
        iov[count++] = {const_cast<uint8_t*>(m.data) + skip, inlineBytes - skip};
        batched += inlineBytes - skip;
      }
      skip = 0;
    }
    IoResult r = sendSome(control_.get(), iov, count);
    if (r.kind == IoResult::WouldBlock) return Status::success();
    if (r.kind != IoResult::Moved) return fail("control socket: " + errnoText(r.error));
    size_t moved = r.bytes;
    while (moved > 0) {
      Message& m = message(ctrlSeq_);
      const size_t total = sizeof(m.header) + (m.plan.chunks == 0 ? m.size : 0);
      const size_t step = std::min(moved, total - ctrlMoved_);
      ctrlMoved_ += step;
      moved -= step;
      if (ctrlMoved_ == total) {
        m.headerSent = true;
        settle(m);
        ++ctrlSeq_;
        ctrlMoved_ = 0;
      }
    }
    // The tested message is out: return so NCCL frees (and refills) its buffer now, not after
    // the steps queued behind it were copied too (they wait for their own test).
    if (tested != nullptr && tested->headerSent) break;
  }
  return Status::success();
}

StreamPass SocketSendComm::writeStream(StreamCursor& stream) {
  const uint32_t n = static_cast<uint32_t>(streamCount_);
  while (!stream.empty()) {
    Message& m = message(stream.front());
    if (!stream.started) {
      stream.chunk = (static_cast<uint32_t>(stream.index) + n - m.base % n) % n;
      stream.moved = 0;
      stream.started = true;
    }
    const uint64_t offset = static_cast<uint64_t>(stream.chunk) * m.plan.chunkBytes;
    const uint64_t length = std::min(m.plan.chunkBytes, m.size - offset);
    if (stream.moved == 0) {
      wire::encodeChunkHeader({m.seq, static_cast<uint32_t>(length), offset}, stream.header);
    }
    iovec iov[2];
    int count = 0;
    const uint64_t hdr = wire::ChunkHeader::kBytes;
    if (stream.moved < hdr) iov[count++] = {stream.header + stream.moved, hdr - stream.moved};
    const uint64_t payloadDone = stream.moved > hdr ? stream.moved - hdr : 0;
    iov[count++] = {const_cast<uint8_t*>(m.data) + offset + payloadDone, length - payloadDone};
    IoResult r = sendSome(stream.fd.get(), iov, count);
    if (r.kind == IoResult::WouldBlock) return {true, {}};
    if (r.kind != IoResult::Moved) {
      return {false, "data stream " + std::to_string(stream.index) + ": " + errnoText(r.error)};
    }
    stream.moved += r.bytes;
    if (stream.moved < hdr + length) continue;
    stream.moved = 0;
    stream.chunk += n;
    if (stream.chunk >= m.plan.chunks) {
      ++stream.head;
      stream.started = false;
    }
    // Last: once the count reaches 0 the message may be reused at once.
    m.chunksLeft.fetch_sub(1, std::memory_order_acq_rel);
  }
  return {};
}

}  // namespace pilot::net
