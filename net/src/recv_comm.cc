// The receiving end: every irecv becomes a CTS record (what the sender may count on); message
// headers arrive on the control socket in sequence and each is matched by tag to a posted
// buffer and checked against it before a byte of its payload is accepted. A small message
// whose receive is not posted yet is parked in a fixed pool until it is; anything else the
// sender could not have known to send is a protocol error. Payloads are read straight into
// the posted buffers (chunks from their data streams).
#include <poll.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "socket_comm.h"

namespace pilot::net {

SocketRecvComm::SocketRecvComm(Connection connection, Logger& log)
    : control_(std::move(connection.control)),
      streamCount_(connection.streams),
      chunkBytes_(connection.chunkBytes),
      eagerBytes_(connection.eagerBytes),
      latch_(log, "receive from", std::move(connection.peer)),
      acks_(connection.timeoutMs) {
  adoptStreams(connection, streams_);
  for (Group& g : groups_) g.owner = this;
  workers_ = StreamWorkers::start(connection.threads, streams_, streamCount_, POLLIN, this,
                                  &SocketRecvComm::moveStream);
}

SocketRecvComm::~SocketRecvComm() {
  latch_.logClosed(received_, streamCount_);
}

Error SocketRecvComm::fail(const std::string& what) {
  const bool first = !latch_.failed();
  Error e = latch_.fail(what);
  if (first) shutdownSockets(control_, streams_, streamCount_);
  return e;
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
  Group& g = group(postedGroups_);
  if (g.state != SocketRequest::State::Free) return static_cast<Request*>(nullptr);
  if (posted_.tail() - slotHead_ + static_cast<uint32_t>(n) > static_cast<uint32_t>(kMaxInflight)) {
    return static_cast<Request*>(nullptr);
  }
  g.kind = SocketRequest::Kind::Recv;
  g.state = SocketRequest::State::Active;
  g.firstSlot = posted_.tail();
  g.n = static_cast<uint16_t>(n);
  g.filled = 0;
  for (int i = 0; i < n; ++i) {
    Slot& s = slot(posted_.push(tags[i]));
    s.data = static_cast<uint8_t*>(data[i]);
    s.capacity = sizes[i];
    s.size = 0;
    s.group = postedGroups_;
    s.plan = {};
    s.chunksLeft.store(0, std::memory_order_relaxed);
  }
  ++postedGroups_;
  if (parkedCount_ > 0) {
    if (Status s = unpark(); !s) return Error{s.error()};
  }
  // After the peer's orderly close only a parked message can still fill a receive.
  if (controlClosed_ && posted_.waiting()) return fail("peer closed the connection");
  // The I/O (its CTS record, the data) happens in test(), which NCCL calls right after.
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

void SocketRecvComm::slotFilled(uint32_t n) {
  ++group(slot(n).group).filled;
  // Requests complete in posting order, even when a later one filled first.
  while (completeGroups_ != postedGroups_) {
    Group& g = group(completeGroups_);
    if (g.filled != g.n) break;
    g.state = SocketRequest::State::Complete;
    ++completeGroups_;
  }
}

Status SocketRecvComm::checkAcknowledged() {
  // The data streams carry nothing from this side: keepalive watches them.
  if (!acks_.due()) return Status::success();
  if (std::string what = acks_.inspect(0, control_.get()); !what.empty()) {
    return fail("control socket: " + what);
  }
  return Status::success();
}

Status SocketRecvComm::progress() {
  if (latch_.failed()) return latch_.error();
  if (Status s = checkAcknowledged(); !s) return s;
  bool busy = false;
  if (Status s = readControl(&busy); !s) return s;
  if (workers_) {
    if (workers_->failed()) return fail(workers_->error());
  } else {
    for (int i = 0; i < streamCount_; ++i) {
      if (!streams_[i].empty()) {
        StreamPass pass = readStream(streams_[i]);
        if (!pass.error.empty()) return fail(pass.error);
      }
    }
  }
  settleStriped();
  // CTS records go out in batches while small messages keep arriving (the sender is ahead and
  // can wait), and at once when the control socket is quiet (the sender may be waiting for
  // them) or large messages come (each waits for its record).
  const uint32_t pending = postedGroups_ - ctsSent_;
  if (pending > 0 && (!busy || ctsMoved_ > 0 || pending >= kCtsBatch || lastSize_ > eagerBytes_)) {
    if (Status s = writeCts(); !s) return s;
  }
  return Status::success();
}

Status SocketRecvComm::writeCts() {
  for (;;) {
    if (ctsMoved_ == ctsLength_) {
      // Encode every pending record (up to a batch) into one write.
      ctsLength_ = ctsMoved_ = 0;
      ctsBatched_ = 0;
      for (uint32_t g = ctsSent_; g != postedGroups_ && ctsBatched_ < kCtsBatch; ++g) {
        const Group& group = this->group(g);
        wire::Cts cts;
        cts.group = g;
        cts.n = group.n;
        for (int i = 0; i < group.n; ++i) {
          cts.tags[i] = posted_.tagOf(group.firstSlot + i);
          cts.capacity[i] = slot(group.firstSlot + i).capacity;
        }
        ctsLength_ += wire::encodeCts(cts, ctsOut_.data() + ctsLength_);
        ++ctsBatched_;
      }
      if (ctsLength_ == 0) return Status::success();
    }
    iovec iov{ctsOut_.data() + ctsMoved_, ctsLength_ - ctsMoved_};
    IoResult r = sendSome(control_.get(), &iov, 1);
    if (r.kind == IoResult::WouldBlock) return Status::success();
    if (r.kind != IoResult::Moved) return fail("control socket: " + errnoText(r.error));
    ctsMoved_ += r.bytes;
    if (ctsMoved_ < ctsLength_) continue;
    ctsSent_ += ctsBatched_;
    ctsMoved_ = ctsLength_ = 0;
    if (ctsSent_ == postedGroups_) return Status::success();
  }
}

Status SocketRecvComm::readControl(bool* busy) {
  if (controlClosed_) return Status::success();
  for (;;) {
    const size_t avail = inEnd_ - inBegin_;
    if (payload_.left > 0) {
      if (avail > 0) {
        const size_t step = static_cast<size_t>(std::min<uint64_t>(avail, payload_.left));
        std::memcpy(payload_.data, &in_[inBegin_], step);
        inBegin_ += step;
        payload_.data += step;
        payload_.left -= step;
        if (payload_.left == 0) {
          if (Status s = payloadDone(); !s) return s;
        }
        continue;
      }
      // Nothing buffered: the rest of the payload straight into place, and what follows into
      // in_ in the same call. Behind a large payload only the next header: the payload after
      // it goes straight into its own buffer too, instead of through in_.
      inBegin_ = inEnd_ = 0;
      const size_t behind = payload_.left > wire::kMaxEager ? wire::MsgHeader::kBytes : in_.size();
      iovec iov[2] = {{payload_.data, static_cast<size_t>(payload_.left)}, {in_.data(), behind}};
      IoResult r = recvSome(control_.get(), iov, 2);
      if (r.kind == IoResult::WouldBlock) return Status::success();
      if (r.kind == IoResult::Failed) return fail("control socket: " + errnoText(r.error));
      if (r.kind == IoResult::Closed) {
        controlClosed_ = true;
        return fail("peer closed the connection mid-message");
      }
      *busy = true;
      const size_t direct = static_cast<size_t>(std::min<uint64_t>(r.bytes, payload_.left));
      payload_.data += direct;
      payload_.left -= direct;
      inEnd_ = r.bytes - direct;
      if (payload_.left == 0) {
        if (Status s = payloadDone(); !s) return s;
      }
      continue;
    }
    if (avail >= wire::MsgHeader::kBytes) {
      wire::MsgHeader header;
      if (!wire::decodeMsgHeader(&in_[inBegin_], &header)) {
        return fail("protocol error: bad message header");
      }
      inBegin_ += wire::MsgHeader::kBytes;
      if (Status s = onHeader(header); !s) return s;
      continue;
    }
    // Read even with no receive waiting: what comes is either for a posted buffer or fits the
    // parking pool (the sender's budget), and a drained socket lets the sender's writes
    // complete instead of waiting for this side's next receive.
    if (inBegin_ > 0) {
      std::memmove(in_.data(), &in_[inBegin_], avail);
      inBegin_ = 0;
      inEnd_ = avail;
    }
    iovec iov{&in_[inEnd_], in_.size() - inEnd_};
    IoResult r = recvSome(control_.get(), &iov, 1);
    if (r.kind == IoResult::WouldBlock) return Status::success();
    if (r.kind == IoResult::Failed) return fail("control socket: " + errnoText(r.error));
    if (r.kind == IoResult::Closed) {
      controlClosed_ = true;
      if (avail > 0 || posted_.waiting()) {
        return fail("peer closed the connection with receives pending");
      }
      return Status::success();  // an orderly end: every posted receive has its message
    }
    *busy = true;
    inEnd_ += r.bytes;
  }
}

Status SocketRecvComm::onHeader(const wire::MsgHeader& h) {
  // Everything below is checked against what this side posted before anything is placed.
  if (h.seq != nextMsgSeq_) {
    return fail("protocol error: message " + std::to_string(h.seq) + " out of sequence");
  }
  ++nextMsgSeq_;
  lastSize_ = h.size;
  // A parked message with this tag is older: it takes the next buffer with the tag first.
  bool olderParked = false;
  for (int i = 0; i < parkedCount_ && !olderParked; ++i) olderParked = parked_[i].tag == h.tag;
  uint32_t index = 0;
  if (!olderParked && posted_.take(h.tag, &index)) return place(index, h);
  return park(h);
}

Status SocketRecvComm::place(uint32_t index, const wire::MsgHeader& h) {
  Slot& s = slot(index);
  if (h.size > s.capacity) {
    return fail("protocol error: message of " + std::to_string(h.size) + " bytes (tag " +
                std::to_string(h.tag) + ") for a buffer of " + std::to_string(s.capacity));
  }
  s.size = h.size;
  s.seq = h.seq;
  s.plan = wire::planChunks(h.size, streamCount_, chunkBytes_);
  if (s.plan.chunks == 0) {
    if (h.size == 0) {
      slotFilled(index);
    } else {
      payload_ = {s.data, h.size, static_cast<int64_t>(index)};
    }
    return Status::success();
  }
  s.chunksLeft.store(s.plan.chunks, std::memory_order_relaxed);
  s.base = nextStream_;
  striped_[stripedTail_++ & kRingMask] = index;
  const uint32_t n = static_cast<uint32_t>(streamCount_);
  nextStream_ = (nextStream_ + s.plan.chunks) % n;
  const uint32_t used = std::min<uint32_t>(s.plan.chunks, n);
  // Everything above is written before the push publishes the buffer to the streams.
  for (uint32_t c = 0; c < used; ++c) streams_[(s.base + c) % n].push(index);
  if (workers_) workers_->wake();
  return Status::success();
}

Status SocketRecvComm::park(const wire::MsgHeader& h) {
  // Only what the sender may send unconfirmed: up to kMaxParked messages of at most its eager
  // limit, kParkBytes in all. Anything else could only fill memory: it ends the connection.
  if (eagerBytes_ == 0 || h.size > eagerBytes_) {
    return fail("protocol error: message of " + std::to_string(h.size) + " bytes (tag " +
                std::to_string(h.tag) + ") for no posted receive");
  }
  if (parkedCount_ == wire::kMaxParked || parkedBytes_ + h.size > wire::kParkBytes) {
    return fail("protocol error: more unexpected messages than the connection allows (" +
                std::to_string(wire::kMaxParked) + " messages, " +
                std::to_string(wire::kParkBytes) + " bytes)");
  }
  if (h.size > 0 && !pool_) {
    pool_.reset(new (std::nothrow) uint8_t[wire::kParkBytes]);
    if (!pool_) return fail("out of memory for the parking pool");
  }
  if (poolTop_ + h.size > wire::kParkBytes) {
    // Parked messages leave in tag order, so holes open up: close them (in offset order, so
    // every move goes down). The sender's budget guarantees the total fits.
    size_t at = 0;
    for (int i = 0; i < parkedCount_; ++i) {
      Parked& p = parked_[i];
      if (p.size > 0 && p.offset != at)
        std::memmove(pool_.get() + at, pool_.get() + p.offset, p.size);
      p.offset = at;
      at += p.size;
    }
    poolTop_ = at;
  }
  Parked& p = parked_[parkedCount_++];
  p.tag = h.tag;
  p.size = h.size;
  p.offset = poolTop_;
  p.complete = h.size == 0;
  poolTop_ += h.size;
  parkedBytes_ += h.size;
  if (h.size > 0) payload_ = {pool_.get() + p.offset, h.size, -1};
  return Status::success();
}

Status SocketRecvComm::payloadDone() {
  const PayloadTarget done = payload_;
  payload_ = {};
  if (done.slot >= 0) {
    slotFilled(static_cast<uint32_t>(done.slot));
    return Status::success();
  }
  parked_[parkedCount_ - 1].complete = true;  // a parked payload is always the newest one
  return unpark();
}

Status SocketRecvComm::unpark() {
  TagSet waiting;  // tags with an older parked message that stays
  int kept = 0;
  for (int i = 0; i < parkedCount_; ++i) {
    const Parked p = parked_[i];
    uint32_t index = 0;
    if (p.complete && !waiting.contains(p.tag) && posted_.take(p.tag, &index)) {
      Slot& s = slot(index);
      if (p.size > s.capacity) {
        return fail("protocol error: message of " + std::to_string(p.size) + " bytes (tag " +
                    std::to_string(p.tag) + ") for a buffer of " + std::to_string(s.capacity));
      }
      if (p.size > 0) std::memcpy(s.data, pool_.get() + p.offset, p.size);
      s.size = p.size;
      parkedBytes_ -= p.size;
      slotFilled(index);
      continue;
    }
    waiting.add(p.tag);
    parked_[kept++] = p;
  }
  parkedCount_ = kept;
  if (kept == 0) poolTop_ = 0;
  return Status::success();
}

StreamPass SocketRecvComm::readStream(StreamCursor& stream) {
  const uint32_t n = static_cast<uint32_t>(streamCount_);
  const uint64_t hdr = wire::ChunkHeader::kBytes;
  while (!stream.empty()) {
    const uint32_t index = stream.front();
    Slot& s = slot(index);
    if (!stream.started) {
      stream.chunk = (static_cast<uint32_t>(stream.index) + n - s.base % n) % n;
      stream.moved = 0;
      stream.started = true;
    }
    const uint64_t offset = static_cast<uint64_t>(stream.chunk) * s.plan.chunkBytes;
    const uint64_t length = std::min(s.plan.chunkBytes, s.size - offset);
    iovec iov[2];
    int count = 0;
    if (stream.moved < hdr) iov[count++] = {stream.header + stream.moved, hdr - stream.moved};
    const uint64_t payloadDone = stream.moved > hdr ? stream.moved - hdr : 0;
    iov[count++] = {s.data + offset + payloadDone, length - payloadDone};
    IoResult r = recvSome(stream.fd.get(), iov, count);
    if (r.kind == IoResult::WouldBlock) return {true, {}};
    auto name = [&] { return "data stream " + std::to_string(stream.index); };
    if (r.kind == IoResult::Closed) return {false, name() + " closed by the peer mid-message"};
    if (r.kind == IoResult::Failed) return {false, name() + ": " + errnoText(r.error)};
    const uint64_t before = stream.moved;
    stream.moved += r.bytes;
    if (before < hdr && stream.moved >= hdr) {
      wire::ChunkHeader c;
      if (!wire::decodeChunkHeader(stream.header, &c) || c.seq != s.seq || c.length != length ||
          c.offset != offset) {
        return {false, "protocol error: " + name() + " out of step"};
      }
    }
    if (stream.moved < hdr + length) continue;
    stream.chunk += n;
    stream.moved = 0;
    if (stream.chunk >= s.plan.chunks) {
      ++stream.head;
      stream.started = false;
    }
    // Last: the release orders the bytes just read before the progress thread's acquire.
    s.chunksLeft.fetch_sub(1, std::memory_order_acq_rel);
  }
  return {};
}

void SocketRecvComm::settleStriped() {
  while (stripedHead_ != stripedTail_) {
    const uint32_t index = striped_[stripedHead_ & kRingMask];
    if (slot(index).chunksLeft.load(std::memory_order_acquire) != 0) return;
    ++stripedHead_;
    slotFilled(index);
  }
}

}  // namespace pilot::net
