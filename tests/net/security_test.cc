// Strangers on the listening port (random bytes, half-open connections, a wrong secret, a
// malformed hello) are dropped without disturbing the real peer; a peer that knows the secret
// but breaks the protocol fails its own connection and nothing else.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "net_test_support.h"
#include "wire.h"

namespace nettest {
namespace {

/// A plain blocking TCP connection to the listener of `handle` (loopback IPv4).
int rawConnect(const unsigned char* handle) {
  wire::Handle h;
  if (!wire::decodeHandle(handle, &h)) return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(h.port);
  std::memcpy(&sin.sin_addr, h.address, 4);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

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
/// control socket of a 1-stream connection.
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
    void* data[1] = {buffer_.data()};
    size_t sizes[1] = {buffer_.size()};
    int tags[1] = {1};
    request_ = postRecv(*transport_, recv_, 1, data, sizes, tags);
    ASSERT_NE(request_, nullptr);
  }
  void TearDown() override {
    if (recv_ != nullptr) transport_->closeRecv(recv_);
    close(control_);
    close(data_);
  }
  /// Sends a message header and expects the receive to fail naming `what`.
  void expectFailure(const wire::MsgHeader& h, const std::string& what) {
    uint8_t bytes[wire::MsgHeader::kBytes];
    wire::encodeMsgHeader(h, bytes);
    writeAll(control_, bytes, sizeof(bytes));
    std::string error;
    TestResult res = waitDone(*transport_, request_, 5000, &error);
    EXPECT_FALSE(res.done);
    EXPECT_NE(error.find(what), std::string::npos) << error;
    EXPECT_EQ(buffer_[0], 0) << "nothing may be written into the buffer";
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
  expectFailure({0, 0, 0, 1u << 30}, "message of 1073741824 bytes for a buffer of 4096");
}
TEST_F(RoguePeer, MessageForAReceiveNotPosted) {
  expectFailure({7, 0, 0, 10}, "not the next");
}
TEST_F(RoguePeer, MessageForASlotNotPosted) {
  expectFailure({0, 3, 0, 10}, "buffer not posted");
}
TEST_F(RoguePeer, MessageOutOfSequence) {
  expectFailure({0, 0, 9, 10}, "out of sequence");
}
TEST_F(RoguePeer, GarbageOnTheControlSocket) {
  uint8_t junk[64];
  std::memset(junk, 0xab, sizeof(junk));
  writeAll(control_, junk, sizeof(junk));
  std::string error;
  EXPECT_FALSE(waitDone(*transport_, request_, 5000, &error).done);
  EXPECT_NE(error.find("bad message header"), std::string::npos) << error;
}
TEST_F(RoguePeer, ChunkHeaderThatDoesNotMatchThePlan) {
  // Messages up to 8 KiB travel inline; a 200 KiB one is one chunk on the data stream.
  uint8_t header[wire::MsgHeader::kBytes];
  std::vector<uint8_t> big(200 << 10);
  void* data[1] = {big.data()};
  size_t sizes[1] = {big.size()};
  int tags[1] = {1};
  // Complete the first receive with an inline message, then aim the second at the stream.
  uint8_t inlineMsg[wire::MsgHeader::kBytes + 4];
  wire::encodeMsgHeader({0, 0, 0, 4}, inlineMsg);
  std::memset(inlineMsg + wire::MsgHeader::kBytes, 1, 4);
  writeAll(control_, inlineMsg, sizeof(inlineMsg));
  ASSERT_TRUE(waitDone(*transport_, request_).done);
  Request* second = postRecv(*transport_, recv_, 1, data, sizes, tags);
  ASSERT_NE(second, nullptr);
  wire::encodeMsgHeader({1, 0, 1, big.size()}, header);
  writeAll(control_, header, sizeof(header));
  uint8_t chunk[wire::ChunkHeader::kBytes];
  wire::encodeChunkHeader({1, static_cast<uint32_t>(big.size()), 4096}, chunk);
  writeAll(data_, chunk, sizeof(chunk));
  std::string error;
  EXPECT_FALSE(waitDone(*transport_, second, 5000, &error).done);
  EXPECT_NE(error.find("out of step"), std::string::npos) << error;
}

}  // namespace
}  // namespace nettest
