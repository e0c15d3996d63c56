// Strangers on the listening port (random bytes, half-open connections, a wrong secret, a
// malformed hello) are dropped without disturbing the real peer; a peer that knows the secret
// but breaks the protocol fails its own connection (and shuts it) and nothing else.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "net_test_support.h"
#include "wire.h"

namespace nettest {
namespace {

void writeAll(int fd, const void* data, size_t size) {
  ASSERT_EQ(send(fd, data, size, MSG_NOSIGNAL), static_cast<ssize_t>(size));
}

/// The hello a real connector would send, with fields to spoil.
std::array<uint8_t, wire::Hello::kBytes> hello(const unsigned char* handle, uint16_t index,
                                               uint16_t streams, uint64_t nonce) {
  wire::Handle h;
  EXPECT_TRUE(wire::decodeHandle(handle, &h));
  wire::Hello hi;
  hi.index = index;
  hi.streams = streams;
  hi.chunkBytes = 512 << 10;
  hi.eagerBytes = 64 << 10;
  hi.secret = h.secret;
  hi.nonce = nonce;
  std::array<uint8_t, wire::Hello::kBytes> out{};
  wire::encodeHello(hi, out.data());
  return out;
}

/// Accepts until a comm appears or the deadline passes.
RecvComm* acceptWithin(Transport& t, ListenComm* l, int ms) {
  const int64_t deadline = monotonicMs() + ms;
  while (monotonicMs() < deadline) {
    auto r = t.accept(l);
    EXPECT_TRUE(r.ok()) << r.error();
    if (!r.ok() || *r != nullptr) return r.ok() ? *r : nullptr;
  }
  return nullptr;
}

TEST(Listener, StrangersAreDroppedAndTheRealPeerStillConnects) {
  RecordingLogger log;
  auto t = loopbackTransport(log, {{"NCCL_PILOT_SOCKET_TIMEOUT_MS", "300"}});
  ASSERT_NE(t, nullptr);
  unsigned char handle[kHandleBytes];
  auto listen = t->listen(0, handle);
  ASSERT_TRUE(listen.ok());

  std::vector<int> strangers;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 8; ++i) {  // random bytes, some shorter than a hello, some longer
    int fd = rawConnect(handle);
    ASSERT_GE(fd, 0);
    std::vector<uint8_t> junk(i * 13 + 5);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    writeAll(fd, junk.data(), junk.size());
    strangers.push_back(fd);
  }
  strangers.push_back(rawConnect(handle));  // half-open: connects, says nothing
  {
    auto wrong = hello(handle, 0, 4, 99);
    wrong[16] ^= 1;  // one bit of the secret
    int fd = rawConnect(handle);
    writeAll(fd, wrong.data(), wrong.size());
    strangers.push_back(fd);
  }
  {
    auto tooMany = hello(handle, 0, 200, 98);  // more streams than allowed
    int fd = rawConnect(handle);
    writeAll(fd, tooMany.data(), tooMany.size());
    strangers.push_back(fd);
  }
  {
    // A right secret but only the control socket of a 4-stream connection: incomplete.
    auto partial = hello(handle, 0, 4, 97);
    int fd = rawConnect(handle);
    writeAll(fd, partial.data(), partial.size());
    strangers.push_back(fd);
  }
  // None of them is a connection.
  EXPECT_EQ(acceptWithin(*t, *listen, 100), nullptr);

  // The real peer connects through the same listener.
  SendComm* send = nullptr;
  while (send == nullptr) {
    auto s = t->connect(0, handle, {});
    ASSERT_TRUE(s.ok()) << s.error();
    send = *s;
  }
  RecvComm* recv = acceptWithin(*t, *listen, 5000);
  ASSERT_NE(recv, nullptr);
  // Past the timeout, the half-open and the incomplete connections are gone too.
  EXPECT_EQ(acceptWithin(*t, *listen, 600), nullptr);
  EXPECT_GE(log.count(LogLevel::Info, "wrong secret"), 1) << log.dump();
  EXPECT_GE(log.count(LogLevel::Info, "not a nccl-pilot peer"), 1) << log.dump();
  EXPECT_GE(log.count(LogLevel::Info, "malformed hello"), 1) << log.dump();
  EXPECT_GE(log.count(LogLevel::Info, "no hello in time"), 1) << log.dump();
  EXPECT_GE(log.count(LogLevel::Info, "connection incomplete in time"), 1) << log.dump();
  EXPECT_EQ(log.lines(LogLevel::Warn).size(), 0u) << log.dump();

  // And it works.
  uint64_t out = 0x1122334455667788ull, in = 0;
  void* data[1] = {&in};
  size_t sizes[1] = {sizeof(in)};
  int tags[1] = {3};
  Request* r = postRecv(*t, recv, 1, data, sizes, tags);
  Request* s = postSend(*t, send, &out, sizeof(out), 3);
  ASSERT_TRUE(waitDone(*t, s).done);
  ASSERT_TRUE(waitDone(*t, r).done);
  EXPECT_EQ(in, out);
  for (int fd : strangers) close(fd);
  t->closeSend(send);
  t->closeRecv(recv);
  t->closeListen(*listen);
}

TEST(Listener, AFloodOfStrangersIsBounded) {
  RecordingLogger log;
  auto t = loopbackTransport(log);
  ASSERT_NE(t, nullptr);
  unsigned char handle[kHandleBytes];
  auto listen = t->listen(0, handle);
  ASSERT_TRUE(listen.ok());
  std::vector<int> fds;
  for (int i = 0; i < 300; ++i) fds.push_back(rawConnect(handle));
  const int fdsNow = openFdCount();
  EXPECT_EQ(acceptWithin(*t, *listen, 300), nullptr);
  // We hold at most kMaxPendingSockets of them; the rest were closed as they came.
  EXPECT_LE(openFdCount() - fdsNow, 64);
  EXPECT_GE(log.count(LogLevel::Info, "too many connections without a hello"), 1);
  for (int fd : fds) close(fd);
  t->closeListen(*listen);
}

/// A peer that knows the secret (it got the handle) but then writes what it wants on the
/// control socket of a 1-stream connection (eager limit 64 KiB, striped above 512 KiB).
class RoguePeer : public ::testing::Test {
 protected:
  void SetUp() override {
    transport_ = loopbackTransport(log_);
    ASSERT_NE(transport_, nullptr);
    auto listen = transport_->listen(0, handle_);
    ASSERT_TRUE(listen.ok());
    control_ = rawConnect(handle_);
    data_ = rawConnect(handle_);
    auto h0 = hello(handle_, 0, 1, 5), h1 = hello(handle_, 1, 1, 5);
    writeAll(control_, h0.data(), h0.size());
    writeAll(data_, h1.data(), h1.size());
    recv_ = acceptWithin(*transport_, *listen, 5000);
    transport_->closeListen(*listen);
    ASSERT_NE(recv_, nullptr);
    request_ = post(buffer_.data(), buffer_.size(), 1);
    ASSERT_NE(request_, nullptr);
  }
  void TearDown() override {
    if (recv_ != nullptr) transport_->closeRecv(recv_);
    close(control_);
    close(data_);
  }
  Request* post(void* data, size_t size, int tag) {
    void* buffers[1] = {data};
    size_t sizes[1] = {size};
    int tags[1] = {tag};
    return postRecv(*transport_, recv_, 1, buffers, sizes, tags);
  }
  /// A message header (and `payload` bytes of 0x5a behind it) on the control socket.
  void sendMessage(const wire::MsgHeader& h, size_t payload = 0) {
    std::vector<uint8_t> bytes(wire::MsgHeader::kBytes + payload, 0x5a);
    wire::encodeMsgHeader(h, bytes.data());
    writeAll(control_, bytes.data(), bytes.size());
  }
  /// The receive fails naming `what`, and not a byte reached its buffer.
  void expectFailure(Request* request, const std::string& what) {
    std::string error;
    TestResult res = waitDone(*transport_, request, 5000, &error);
    EXPECT_FALSE(res.done);
    EXPECT_NE(error.find(what), std::string::npos) << error;
    EXPECT_EQ(buffer_[0], 0) << "nothing may be written into the buffer";
    EXPECT_EQ(log_.count(LogLevel::Warn, what), 1) << log_.dump();
    // The comm shut its sockets: past the CTS records it wrote, the peer sees the end.
    char bytes[4096];
    ssize_t got = 0;
    for (int i = 0; i < 100 && (got = recv(control_, bytes, sizeof(bytes), 0)) > 0; ++i) {
    }
    EXPECT_EQ(got, 0);
  }

  RecordingLogger log_;
  std::unique_ptr<Transport> transport_;
  unsigned char handle_[kHandleBytes];
  int control_ = -1, data_ = -1;
  RecvComm* recv_ = nullptr;
  Request* request_ = nullptr;
  std::array<uint8_t, 4096> buffer_{};
};

TEST_F(RoguePeer, MessageLargerThanThePostedBuffer) {
  sendMessage({0, 1, 1u << 30});
  expectFailure(request_, "message of 1073741824 bytes (tag 1) for a buffer of 4096");
}
TEST_F(RoguePeer, LargeMessageForNoPostedReceive) {
  // Above the eager limit a sender must have seen the receive's CTS record: this one cannot.
  sendMessage({0, 9, 1u << 20});
  expectFailure(request_, "message of 1048576 bytes (tag 9) for no posted receive");
}
TEST_F(RoguePeer, MessageOutOfSequence) {
  sendMessage({9, 1, 10});
  expectFailure(request_, "out of sequence");
}
TEST_F(RoguePeer, GarbageOnTheControlSocket) {
  uint8_t junk[64];
  std::memset(junk, 0xab, sizeof(junk));
  writeAll(control_, junk, sizeof(junk));
  expectFailure(request_, "bad message header");
}
TEST_F(RoguePeer, MoreUnexpectedMessagesThanTheParkingPoolHolds) {
  // A sender may have at most kMaxParked small messages out before it knows their receive.
  for (uint32_t i = 0; i <= wire::kMaxParked; ++i) sendMessage({i, 9, 16}, 16);
  expectFailure(request_, "more unexpected messages than the connection allows");
}
TEST_F(RoguePeer, MoreUnexpectedBytesThanTheParkingPoolHolds) {
  // 17 messages of the 64 KiB eager limit: one more than fits kParkBytes (1 MiB). The writer
  // runs beside the receiver: that much does not fit in the socket's buffers.
  static_assert(wire::kParkBytes / wire::kMaxEager == 16, "the count below");
  std::thread writer([&] {
    for (uint32_t i = 0; i < 17; ++i) {
      std::vector<uint8_t> bytes(wire::MsgHeader::kBytes + wire::kMaxEager, 0x5a);
      wire::encodeMsgHeader({i, 9, wire::kMaxEager}, bytes.data());
      if (send(control_, bytes.data(), bytes.size(), MSG_NOSIGNAL) < 0) return;  // shut by then
    }
  });
  std::string error;
  EXPECT_FALSE(waitDone(*transport_, request_, 10000, &error).done);
  EXPECT_NE(error.find("more unexpected messages than the connection allows"), std::string::npos)
      << error;
  EXPECT_EQ(buffer_[0], 0);
  writer.join();
}
TEST_F(RoguePeer, AParkedMessageLandsWhenItsReceiveIsPosted) {
  sendMessage({0, 9, 4}, 4);  // no receive with tag 9 yet: parked
  sendMessage({1, 1, 3}, 3);  // fills the posted receive
  TestResult first = waitDone(*transport_, request_);
  ASSERT_TRUE(first.done) << log_.dump();
  EXPECT_EQ(first.sizes[0], 3u);
  EXPECT_EQ(buffer_[0], 0x5a);
  std::array<uint8_t, 8> late{};
  Request* second = post(late.data(), late.size(), 9);
  ASSERT_NE(second, nullptr);
  TestResult res = waitDone(*transport_, second);
  ASSERT_TRUE(res.done) << log_.dump();
  EXPECT_EQ(res.sizes[0], 4u);
  EXPECT_EQ(late[3], 0x5a);
  EXPECT_EQ(late[4], 0) << "only the message's bytes";
  EXPECT_EQ(log_.lines(LogLevel::Warn).size(), 0u) << log_.dump();
}
TEST_F(RoguePeer, ChunkHeaderThatDoesNotMatchThePlan) {
  // Up to 512 KiB the payload follows its header; a 600 KiB one is two chunks on the stream.
  // Complete the first receive with a small message, then aim the second at the stream.
  sendMessage({0, 1, 4}, 4);
  ASSERT_TRUE(waitDone(*transport_, request_).done);
  buffer_[0] = 0;
  std::vector<uint8_t> big(600 << 10);
  Request* second = post(big.data(), big.size(), 1);
  ASSERT_NE(second, nullptr);
  sendMessage({1, 1, big.size()});
  uint8_t chunk[wire::ChunkHeader::kBytes];
  wire::encodeChunkHeader({1, 512 << 10, 4096}, chunk);  // chunk 0 starts at offset 0
  writeAll(data_, chunk, sizeof(chunk));
  expectFailure(second, "out of step");
  EXPECT_EQ(big[0], 0);
}

}  // namespace
}  // namespace nettest
