#include "communicator.h"

#include <cstring>
#include <tuple>

namespace soak {

using pilot::net::Transport;

std::string Communicator::open(Transport& t, uint32_t epoch, unsigned char* handle, int64_t nowMs) {
  close(t);
  epoch_ = epoch;
  connectSinceMs_ = nowMs;
  std::memset(handle, 0, pilot::net::kHandleBytes);
  auto listen = t.listen(0, handle);
  if (!listen) return listen.error();
  listen_ = *listen;
  state_ = State::Listening;
  return {};
}

void Communicator::connectTo(const unsigned char* handle, int64_t nowMs) {
  if (state_ != State::Listening) return;
  std::memcpy(peerHandle_, handle, sizeof(peerHandle_));
  state_ = State::Connecting;
  connectSinceMs_ = nowMs;
}

void Communicator::close(Transport& t) {
  send_.stop();
  recv_.stop();
  if (listen_ != nullptr) t.closeListen(listen_);
  if (sendComm_ != nullptr) t.closeSend(sendComm_);
  if (recvComm_ != nullptr) t.closeRecv(recvComm_);
  listen_ = nullptr;
  sendComm_ = nullptr;
  recvComm_ = nullptr;
  state_ = State::Closed;
}

Communicator::Outcome Communicator::fail(Transport& t, Outcome out, const std::string& where,
                                         const std::string& message, int64_t nowMs) {
  if (state_ == State::Up) {
    out.breakage.sendSteps = send_.postedSteps();
    out.breakage.recvWaiting = recv_.oldestWaiting();
  }
  close(t);
  out.broken = true;
  out.breakage.atMs = nowMs;
  out.breakage.where = where;
  out.breakage.message = message;
  return out;
}

Communicator::Outcome Communicator::drive(Transport& t, RateLimit& limit, TrafficTotals& totals,
                                          const LaneId& send, const LaneId& recv, int hangMs,
                                          int64_t nowMs) {
  Outcome out;
  if (state_ == State::Listening || state_ == State::Connecting) {
    // Accept from the moment we listen: the peer may connect before our connect starts.
    if (recvComm_ == nullptr) {
      auto r = t.accept(listen_);
      if (!r) return fail(t, out, "accept", r.error(), nowMs);
      recvComm_ = *r;
    }
    if (state_ == State::Listening) return out;
    if (sendComm_ == nullptr) {
      auto s = t.connect(0, peerHandle_, {});
      if (!s) return fail(t, out, "connect", s.error(), nowMs);
      sendComm_ = *s;
    }
    if (sendComm_ == nullptr || recvComm_ == nullptr) {
      if (nowMs - connectSinceMs_ > hangMs) {
        out = fail(t, out, "setup", "not connected", nowMs);
        out.breakage.hung = true;
      }
      return out;
    }
    t.closeListen(listen_);
    listen_ = nullptr;
    state_ = State::Up;
    send_.start(send, sendComm_, nowMs);
    recv_.start(recv, recvComm_, nowMs);
    out.upAfterMs = nowMs - connectSinceMs_;
    out.moved = true;
  }
  if (state_ != State::Up) return out;

  LanePass s = send_.drive(t, limit, nowMs);
  if (!s.error.empty()) return fail(t, out, "send", s.error, nowMs);
  LanePass r = recv_.drive(t, totals, &out.corruption, nowMs);
  if (!r.error.empty()) return fail(t, out, "recv", r.error, nowMs);
  out.moved = s.moved || r.moved;
  // Neither done nor failed for this long: a hang (what the soak must never see).
  for (auto [lane, busy, last] : {std::tuple{"send", send_.busy(), send_.lastProgressMs()},
                                  std::tuple{"recv", recv_.busy(), recv_.lastProgressMs()}}) {
    if (busy && nowMs - last > hangMs) {
      out = fail(t, out, lane, "nothing moved for " + std::to_string(nowMs - last) + " ms", nowMs);
      out.breakage.hung = true;
      return out;
    }
  }
  return out;
}

}  // namespace soak
