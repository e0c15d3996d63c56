// The sending end: waits for the receiver's CTS records (what it posted), matches each isend to
// a posted buffer by tag within the oldest incomplete irecv (as NCCL's IB transport does), then
// writes the header on the control socket and the chunks on their data streams.
#include <algorithm>

#include "socket_comm.h"

namespace pilot::net {

Error FailureLatch::fail(const std::string& what) {
  if (!failed_) {
    failed_ = true;
    message_ = std::string(role_) + " " + peer_ + ": " + what;
    PILOT_LOG(log_, Warn, subsys::Net, "%s", message_.c_str());
  }
  return Error{message_};
}

Error FailureLatch::usage(const std::string& what) {
  const std::string message = std::string(role_) + " " + peer_ + ": " + what;
  PILOT_LOG(log_, Warn, subsys::Net, "%s", message.c_str());
  return Error{message};
}

void FailureLatch::logClosed(const TrafficCount& moved, int streams) const {
  PILOT_LOG(log_, Info, subsys::Net,
            "%s %s closed: %llu messages, %llu bytes over %d data stream(s)", role_, peer_.c_str(),
            static_cast<unsigned long long>(moved.messages),
            static_cast<unsigned long long>(moved.bytes), streams);
}

void adoptStreams(Connection& connection, std::array<StreamCursor, wire::kMaxStreams>& streams) {
  for (int s = 0; s < connection.streams; ++s) {
    streams[s].fd = std::move(connection.data[s]);
    streams[s].index = s;
  }
}

SocketSendComm::SocketSendComm(Connection connection, Logger& log)
    : control_(std::move(connection.control)),
      streamCount_(connection.streams),
      chunkBytes_(connection.chunkBytes),
      latch_(log, "send to", std::move(connection.peer)) {
  adoptStreams(connection, streams_);
  for (Message& m : messages_) m.owner = this;
}

SocketSendComm::~SocketSendComm() {
  latch_.logClosed(sent_, streamCount_);
}

int SocketSendComm::findSlot(int tag) const {
  if (headGroup_ == groupsKnown_) return -1;  // no receive posted that is not yet matched
  const PeerGroup& group = peerGroups_[headGroup_ & kRingMask];
  for (int r = 0; r < group.n; ++r) {
    const PeerSlot& slot = peerSlots_[(group.firstSlot + r) & kRingMask];
    if (!slot.matched && slot.tag == tag) return r;
  }
  return -1;
}

Expected<Request*> SocketSendComm::isend(const void* data, size_t size, int tag) {
  if (latch_.failed()) return latch_.error();
  if (size > wire::kMaxMessage) {
    return latch_.fail("message of " + std::to_string(size) + " bytes is above the 1 TiB limit");
  }
  if (size > 0 && data == nullptr)
    return latch_.usage("isend: null buffer for a non-empty message");
  int match = findSlot(tag);
  if (match < 0) {
    // Only now read the CTS records waiting in the socket: the control socket costs no
    // syscall while the receiver's posted buffers are known.
    if (Status s = readCts(); !s) return Error{s.error()};
    if (peerClosed_) return latch_.fail("peer closed the connection");
    match = findSlot(tag);
  }
  if (Status s = progress(); !s) return Error{s.error()};
  // No buffer for this tag in the oldest posted receive: the peer has not posted it yet.
  if (match < 0) return static_cast<Request*>(nullptr);
  PeerGroup& group = peerGroups_[headGroup_ & kRingMask];
  Message& m = message(nextSeq_);
  if (m.state != SocketRequest::State::Free) return static_cast<Request*>(nullptr);
  PeerSlot& slot = peerSlots_[(group.firstSlot + match) & kRingMask];
  if (size > slot.capacity) {
    return latch_.fail("message of " + std::to_string(size) + " bytes (tag " + std::to_string(tag) +
                       ") is larger than the " + std::to_string(slot.capacity) +
                       "-byte buffer the peer posted");
  }
  const uint32_t groupSeq = headGroup_;
  slot.matched = true;
  if (++group.matched == group.n) {
    slotsUsed_ += group.n;
    ++headGroup_;
  }

  m.kind = SocketRequest::Kind::Send;
  m.state = SocketRequest::State::Active;
  m.data = static_cast<const uint8_t*>(data);
  m.size = size;
  m.seq = nextSeq_++;
  m.headerSent = false;
  m.plan = wire::planChunks(size, streamCount_, chunkBytes_);
  m.chunksLeft = m.plan.chunks;
  m.base = nextStream_;
  wire::encodeMsgHeader({groupSeq, static_cast<uint16_t>(match), m.seq, size}, m.header);
  if (m.plan.chunks > 0) {
    nextStream_ = (nextStream_ + m.plan.chunks) % static_cast<uint32_t>(streamCount_);
    const uint32_t used = std::min<uint32_t>(m.plan.chunks, static_cast<uint32_t>(streamCount_));
    for (uint32_t c = 0; c < used; ++c) streams_[(m.base + c) % streamCount_].push(m.seq);
  }
  if (Status s = progress(); !s) return Error{s.error()};
  return static_cast<Request*>(&m);
}

Status SocketSendComm::test(SocketRequest* request, TestResult* result) {
  auto* m = static_cast<Message*>(request);
  if (m->state == SocketRequest::State::Active) {
    if (Status s = progress(); !s) return s;
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

Status SocketSendComm::progress() {
  if (latch_.failed()) return latch_.error();
  if (Status s = writeControl(); !s) return s;
  for (int i = 0; i < streamCount_; ++i) {
    if (Status s = writeStream(streams_[i]); !s) return s;
  }
  return Status::success();
}

Status SocketSendComm::readCts() {
  if (peerClosed_) return Status::success();
  for (;;) {
    // Parse every complete record in the buffer; a record is at most Cts::kMaxBytes.
    while (ctsEnd_ - ctsBegin_ >= wire::Cts::kHeadBytes) {
      wire::Cts cts;
      if (!wire::decodeCtsHead(&ctsIn_[ctsBegin_], &cts)) {
        return latch_.fail("protocol error: bad record on the control socket");
      }
      if (cts.n < 1 || cts.n > kMaxRecvs) {
        return latch_.fail("protocol error: receive of " + std::to_string(cts.n) + " buffers");
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
    if (ctsBegin_ == ctsEnd_) ctsBegin_ = ctsEnd_ = 0;
    if (ctsBegin_ > 0 && ctsEnd_ + wire::Cts::kMaxBytes > ctsIn_.size()) {
      std::copy(ctsIn_.begin() + ctsBegin_, ctsIn_.begin() + ctsEnd_, ctsIn_.begin());
      ctsEnd_ -= ctsBegin_;
      ctsBegin_ = 0;
    }
    iovec iov{&ctsIn_[ctsEnd_], ctsIn_.size() - ctsEnd_};
    IoResult r = recvSome(control_.get(), &iov, 1);
    if (r.kind == IoResult::WouldBlock) return Status::success();
    if (r.kind == IoResult::Failed) return latch_.fail("control socket: " + errnoText(r.error));
    if (r.kind == IoResult::Closed) {
      peerClosed_ = true;
      if (ctrlSeq_ != nextSeq_ || ctsBegin_ != ctsEnd_) {
        return latch_.fail("peer closed the connection with messages in flight");
      }
      for (int i = 0; i < streamCount_; ++i) {
        if (!streams_[i].empty()) return latch_.fail("peer closed the connection mid-message");
      }
      return Status::success();
    }
    ctsEnd_ += r.bytes;
  }
}

Status SocketSendComm::acceptCts(const wire::Cts& cts) {
  if (cts.group != groupsKnown_) {
    return latch_.fail("protocol error: receive " + std::to_string(cts.group) + " out of order");
  }
  // The peer may only have kMaxInflight buffers outstanding; more would overwrite our ring.
  if (slotsKnown_ - slotsUsed_ + cts.n > static_cast<uint32_t>(kMaxInflight)) {
    return latch_.fail("protocol error: more receives posted than the connection allows");
  }
  PeerGroup& g = peerGroups_[groupsKnown_ & kRingMask];
  g.firstSlot = slotsKnown_;
  g.n = cts.n;
  g.matched = 0;
  for (int i = 0; i < cts.n; ++i) {
    PeerSlot& s = peerSlots_[(slotsKnown_ + i) & kRingMask];
    s.tag = cts.tags[i];
    s.capacity = cts.capacity[i];
    s.matched = false;
  }
  slotsKnown_ += cts.n;
  ++groupsKnown_;
  return Status::success();
}

Status SocketSendComm::writeControl() {
  constexpr int kMaxIov = 64;
  while (ctrlSeq_ != nextSeq_) {
    iovec iov[kMaxIov];
    int count = 0;
    size_t skip = ctrlMoved_;
    for (uint32_t seq = ctrlSeq_; seq != nextSeq_ && count + 2 <= kMaxIov; ++seq) {
      Message& m = message(seq);
      const size_t inlineBytes = m.plan.chunks == 0 ? m.size : 0;
      if (skip < sizeof(m.header)) {
        iov[count++] = {m.header + skip, sizeof(m.header) - skip};
        skip = 0;
      } else {
        skip -= sizeof(m.header);
      }
      if (inlineBytes > skip) {
        iov[count++] = {const_cast<uint8_t*>(m.data) + skip, inlineBytes - skip};
      }
      skip = 0;
    }
    IoResult r = sendSome(control_.get(), iov, count);
    if (r.kind == IoResult::WouldBlock) return Status::success();
    if (r.kind != IoResult::Moved) return latch_.fail("control socket: " + errnoText(r.error));
    size_t moved = r.bytes;
    while (moved > 0) {
      Message& m = message(ctrlSeq_);
      const size_t total = sizeof(m.header) + (m.plan.chunks == 0 ? m.size : 0);
      const size_t step = std::min(moved, total - ctrlMoved_);
      ctrlMoved_ += step;
      moved -= step;
      if (ctrlMoved_ == total) {
        m.headerSent = true;
        if (m.chunksLeft == 0) m.state = SocketRequest::State::Complete;
        ++ctrlSeq_;
        ctrlMoved_ = 0;
      }
    }
  }
  return Status::success();
}

Status SocketSendComm::writeStream(StreamCursor& stream) {
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
    if (r.kind == IoResult::WouldBlock) return Status::success();
    if (r.kind != IoResult::Moved) {
      return latch_.fail("data stream " + std::to_string(stream.index) + ": " + errnoText(r.error));
    }
    stream.moved += r.bytes;
    if (stream.moved < hdr + length) continue;
    stream.moved = 0;
    stream.chunk += n;
    chunkDone(m);
    if (stream.chunk >= m.plan.chunks) {
      ++stream.head;
      stream.started = false;
    }
  }
  return Status::success();
}

void SocketSendComm::chunkDone(Message& m) {
  if (--m.chunksLeft == 0 && m.headerSent) m.state = SocketRequest::State::Complete;
}

}  // namespace pilot::net
