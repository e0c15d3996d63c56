// The receiving end: every irecv becomes a CTS record the sender matches against; message
// headers arrive on the control socket in sequence and are checked against what was posted
// before any byte is placed; chunks are read from their data streams straight into the
// posted buffers.
#include <algorithm>
#include <cstring>

#include "socket_comm.h"

namespace pilot::net {

SocketRecvComm::SocketRecvComm(Connection connection, Logger& log)
    : control_(std::move(connection.control)),
      streamCount_(connection.streams),
      chunkBytes_(connection.chunkBytes),
      latch_(log, "receive from", std::move(connection.peer)) {
  adoptStreams(connection, streams_);
  for (Group& g : groups_) g.owner = this;
}

SocketRecvComm::~SocketRecvComm() {
  latch_.logClosed(received_, streamCount_);
}

Expected<Request*> SocketRecvComm::irecv(int n, void* const* data, const size_t* sizes,
                                         const int* tags) {
  if (latch_.failed()) return latch_.error();
  if (n < 1 || n > kMaxRecvs) {
    return latch_.usage("irecv: " + std::to_string(n) + " buffers (the transport takes 1 to " +
                        std::to_string(kMaxRecvs) + ")");
  }
  for (int i = 0; i < n; ++i) {
    if (sizes[i] > 0 && data[i] == nullptr) return latch_.usage("irecv: null buffer");
  }
  if (Status s = progress(); !s) return Error{s.error()};
  if (controlClosed_) return latch_.fail("peer closed the connection");
  Group& g = group(postedGroups_);
  if (g.state != SocketRequest::State::Free) return static_cast<Request*>(nullptr);
  if (slotTail_ - slotHead_ + static_cast<uint32_t>(n) > static_cast<uint32_t>(kMaxInflight)) {
    return static_cast<Request*>(nullptr);
  }
  g.kind = SocketRequest::Kind::Recv;
  g.state = SocketRequest::State::Active;
  g.firstSlot = slotTail_;
  g.n = static_cast<uint16_t>(n);
  g.announced = 0;
  g.completed = 0;
  for (int i = 0; i < n; ++i) {
    Slot& s = slot(slotTail_++);
    s.data = static_cast<uint8_t*>(data[i]);
    s.capacity = sizes[i];
    s.size = 0;
    s.tag = tags[i];
    s.announced = false;
  }
  ++postedGroups_;
  if (Status s = progress(); !s) return Error{s.error()};
  return static_cast<Request*>(&g);
}

Status SocketRecvComm::test(SocketRequest* request, TestResult* result) {
  auto* g = static_cast<Group*>(request);
  if (g->state == SocketRequest::State::Active) {
    if (Status s = progress(); !s) return s;
  }
  result->done = g->state == SocketRequest::State::Complete;
  result->count = g->n;
  if (result->done) {
    for (int i = 0; i < g->n; ++i) {
      result->sizes[i] = slot(g->firstSlot + i).size;
      received_.add(result->sizes[i]);
    }
    release(*g);
  }
  return Status::success();
}

void SocketRecvComm::release(Group& g) {
  g.state = SocketRequest::State::Free;
  // Slots are handed out in posting order; they come back once every older request has.
  while (oldestGroup_ != postedGroups_ && group(oldestGroup_).state == SocketRequest::State::Free) {
    slotHead_ += group(oldestGroup_).n;
    ++oldestGroup_;
  }
}

Status SocketRecvComm::progress() {
  if (latch_.failed()) return latch_.error();
  if (Status s = writeCts(); !s) return s;
  // Headers only come for posted buffers: with none waiting, the control socket costs nothing.
  if (announceGroup_ != postedGroups_ || inlineMessage_ != nullptr) {
    if (Status s = readControl(); !s) return s;
  }
  for (int i = 0; i < streamCount_; ++i) {
    if (Status s = readStream(streams_[i]); !s) return s;
  }
  return Status::success();
}

Status SocketRecvComm::writeCts() {
  while (ctsSent_ != postedGroups_) {
    if (ctsLength_ == 0) {
      const Group& g = group(ctsSent_);
      wire::Cts cts;
      cts.group = ctsSent_;
      cts.n = g.n;
      for (int i = 0; i < g.n; ++i) {
        cts.tags[i] = slot(g.firstSlot + i).tag;
        cts.capacity[i] = slot(g.firstSlot + i).capacity;
      }
      ctsLength_ = wire::encodeCts(cts, ctsOut_);
      ctsMoved_ = 0;
    }
    iovec iov{ctsOut_ + ctsMoved_, ctsLength_ - ctsMoved_};
    IoResult r = sendSome(control_.get(), &iov, 1);
    if (r.kind == IoResult::WouldBlock) return Status::success();
    if (r.kind != IoResult::Moved) return latch_.fail("control socket: " + errnoText(r.error));
    ctsMoved_ += r.bytes;
    if (ctsMoved_ == ctsLength_) {
      ++ctsSent_;
      ctsLength_ = 0;
    }
  }
  return Status::success();
}

Status SocketRecvComm::readControl() {
  if (controlClosed_) return Status::success();
  for (;;) {
    const size_t avail = inEnd_ - inBegin_;
    if (inlineMessage_ != nullptr && avail > 0) {
      Message& m = *inlineMessage_;
      const size_t step = static_cast<size_t>(std::min<uint64_t>(avail, m.size - inlineMoved_));
      std::memcpy(slot(m.slot).data + inlineMoved_, &in_[inBegin_], step);
      inBegin_ += step;
      inlineMoved_ += step;
      if (inlineMoved_ == m.size) {
        inlineMessage_ = nullptr;
        messageDone(m);
      }
      continue;
    }
    if (inlineMessage_ == nullptr && avail >= wire::MsgHeader::kBytes) {
      wire::MsgHeader header;
      if (!wire::decodeMsgHeader(&in_[inBegin_], &header)) {
        return latch_.fail("protocol error: bad message header");
      }
      inBegin_ += wire::MsgHeader::kBytes;
      if (Status s = onHeader(header); !s) return s;
      continue;
    }
    // Not enough buffered to act on: make room at the end and read more.
    if (inBegin_ > 0) {
      std::memmove(in_.data(), &in_[inBegin_], avail);
      inBegin_ = 0;
      inEnd_ = avail;
    }
    iovec iov{&in_[inEnd_], in_.size() - inEnd_};
    IoResult r = recvSome(control_.get(), &iov, 1);
    if (r.kind == IoResult::WouldBlock) return Status::success();
    if (r.kind == IoResult::Failed) return latch_.fail("control socket: " + errnoText(r.error));
    if (r.kind == IoResult::Closed) {
      controlClosed_ = true;
      if (inlineMessage_ != nullptr || inEnd_ != inBegin_ || announceGroup_ != postedGroups_) {
        return latch_.fail("peer closed the connection with receives pending");
      }
      return Status::success();
    }
    inEnd_ += r.bytes;
  }
}

Status SocketRecvComm::onHeader(const wire::MsgHeader& h) {
  // Everything below is checked against what this side posted before anything is placed.
  if (h.seq != nextMsgSeq_) {
    return latch_.fail("protocol error: message " + std::to_string(h.seq) + " out of sequence");
  }
  if (announceGroup_ == postedGroups_ || h.group != announceGroup_) {
    return latch_.fail("protocol error: message for receive " + std::to_string(h.group) +
                       " which is not the next one posted");
  }
  Group& g = group(announceGroup_);
  if (h.slot >= g.n) return latch_.fail("protocol error: message for a buffer not posted");
  Slot& s = slot(g.firstSlot + h.slot);
  if (s.announced) return latch_.fail("protocol error: two messages for one buffer");
  if (h.size > s.capacity) {
    return latch_.fail("protocol error: message of " + std::to_string(h.size) +
                       " bytes for a buffer of " + std::to_string(s.capacity));
  }
  Message& m = messages_[h.seq & kRingMask];
  if (m.busy) return latch_.fail("protocol error: more messages in flight than posted");
  s.announced = true;
  s.size = h.size;
  if (++g.announced == g.n) ++announceGroup_;
  ++nextMsgSeq_;
  m.busy = true;
  m.group = h.group;
  m.slot = g.firstSlot + h.slot;
  m.size = h.size;
  m.plan = wire::planChunks(h.size, streamCount_, chunkBytes_);
  m.chunksLeft = m.plan.chunks;
  m.base = nextStream_;
  if (m.plan.chunks == 0) {
    if (m.size == 0) {
      messageDone(m);
    } else {
      inlineMessage_ = &m;
      inlineMoved_ = 0;
    }
    return Status::success();
  }
  const uint32_t n = static_cast<uint32_t>(streamCount_);
  nextStream_ = (nextStream_ + m.plan.chunks) % n;
  const uint32_t used = std::min<uint32_t>(m.plan.chunks, n);
  for (uint32_t c = 0; c < used; ++c) {
    StreamCursor& stream = streams_[(m.base + c) % n];
    if (stream.closed) return latch_.fail("data stream closed by the peer");
    stream.push(h.seq);
  }
  return Status::success();
}

Status SocketRecvComm::readStream(StreamCursor& stream) {
  const uint32_t n = static_cast<uint32_t>(streamCount_);
  const uint64_t hdr = wire::ChunkHeader::kBytes;
  while (!stream.empty()) {
    const uint32_t seq = stream.front();
    Message& m = messages_[seq & kRingMask];
    if (!stream.started) {
      stream.chunk = (static_cast<uint32_t>(stream.index) + n - m.base % n) % n;
      stream.moved = 0;
      stream.started = true;
    }
    const uint64_t offset = static_cast<uint64_t>(stream.chunk) * m.plan.chunkBytes;
    const uint64_t length = std::min(m.plan.chunkBytes, m.size - offset);
    iovec iov[2];
    int count = 0;
    if (stream.moved < hdr) iov[count++] = {stream.header + stream.moved, hdr - stream.moved};
    const uint64_t payloadDone = stream.moved > hdr ? stream.moved - hdr : 0;
    iov[count++] = {slot(m.slot).data + offset + payloadDone, length - payloadDone};
    IoResult r = recvSome(stream.fd.get(), iov, count);
    if (r.kind == IoResult::WouldBlock) return Status::success();
    if (r.kind == IoResult::Closed) {
      stream.closed = true;
      return latch_.fail("data stream " + std::to_string(stream.index) +
                         " closed by the peer mid-message");
    }
    if (r.kind == IoResult::Failed) {
      return latch_.fail("data stream " + std::to_string(stream.index) + ": " + errnoText(r.error));
    }
    const uint64_t before = stream.moved;
    stream.moved += r.bytes;
    if (before < hdr && stream.moved >= hdr) {
      wire::ChunkHeader c;
      wire::decodeChunkHeader(stream.header, &c);
      if (c.seq != seq || c.length != length || c.offset != offset) {
        return latch_.fail("protocol error: data stream " + std::to_string(stream.index) +
                           " out of step");
      }
    }
    if (stream.moved < hdr + length) continue;
    stream.chunk += n;
    stream.moved = 0;
    if (stream.chunk >= m.plan.chunks) {
      ++stream.head;
      stream.started = false;
    }
    if (--m.chunksLeft == 0) messageDone(m);
  }
  return Status::success();
}

void SocketRecvComm::messageDone(Message& m) {
  m.busy = false;
  Group& g = group(m.group);
  if (++g.completed == g.n) g.state = SocketRequest::State::Complete;
}

}  // namespace pilot::net
