// Connections opened and closed in bulk, closes with requests in flight on either side, and no
// file descriptor left behind (ASan builds check memory the same way).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "lingering_close.h"
#include "net_test_support.h"
#include "wire.h"

namespace nettest {
namespace {

TEST(Lifecycle, HundredsOfConnectionsOpenAndClose) {
  RecordingLogger log;
  auto t = loopbackTransport(log);
  ASSERT_NE(t, nullptr);
  const int fdsBefore = openFdCount();
  constexpr int kPairs = 256;
  std::vector<Pair> pairs;
  for (int i = 0; i < kPairs; ++i) {
    pairs.push_back(connectPair(*t));
    ASSERT_NE(pairs.back().send, nullptr) << "pair " << i;
  }
  // 1 control socket + the default number of data streams on each end.
  EXPECT_EQ(openFdCount() - fdsBefore, kPairs * 2 * (1 + SocketOptions().streams));
  for (int i = 0; i < kPairs; ++i) {
    uint32_t out = 0xc0ffee00u + i, in = 0;
    void* data[1] = {&in};
    size_t sizes[1] = {sizeof(in)};
    int tags[1] = {i};
    Request* r = postRecv(*t, pairs[i].recv, 1, data, sizes, tags);
    Request* s = postSend(*t, pairs[i].send, &out, sizeof(out), i);
    ASSERT_TRUE(waitDone(*t, s).done);
    ASSERT_TRUE(waitDone(*t, r).done);
    ASSERT_EQ(in, out);
  }
  for (Pair& p : pairs) closePair(*t, p);
  EXPECT_EQ(openFdCount(), fdsBefore);
  EXPECT_EQ(log.lines(LogLevel::Warn).size(), 0u) << log.dump();
}

class CloseInFlight : public ::testing::TestWithParam<int> {};

TEST_P(CloseInFlight, LeaksNothing) {
  // Helper threads (the parameter) may be in the middle of a chunk when the comm goes.
  RecordingLogger log;
  auto t = loopbackTransport(log, {{"NCCL_PILOT_SOCKET_NTHREADS", std::to_string(GetParam())},
                                   {"NCCL_PILOT_SOCKET_CHUNK", "256K"}});
  ASSERT_NE(t, nullptr);
  std::vector<uint8_t> out(8 << 20), in(8 << 20);
  const int fdsBefore = openFdCount();
  for (int cycle = 0; cycle < 50; ++cycle) {
    Pair p = connectPair(*t);
    ASSERT_NE(p.send, nullptr);
    std::vector<Request*> recvs, sends;
    for (int i = 0; i < 4; ++i) {
      void* data[1] = {in.data() + i * (2 << 20)};
      size_t sizes[1] = {2 << 20};
      int tags[1] = {0};
      recvs.push_back(postRecv(*t, p.recv, 1, data, sizes, tags));
    }
    announce(*t, recvs[0]);
    for (int i = 0; i < 3; ++i) sends.push_back(postSend(*t, p.send, out.data(), 2 << 20, 0));
    TestResult res;
    (void)t->test(recvs[0], &res);  // some bytes moved, most not
    // Alternate which side goes first: the survivor must not crash when it is closed later.
    if (cycle % 2 == 0) {
      t->closeSend(p.send);
      t->closeRecv(p.recv);
    } else {
      t->closeRecv(p.recv);
      t->closeSend(p.send);
    }
  }
  EXPECT_EQ(openFdCount(), fdsBefore);
}
INSTANTIATE_TEST_SUITE_P(Threads, CloseInFlight, ::testing::Values(0, 2),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::to_string(p.param) + "threads";
                         });

TEST(Lifecycle, PeerCloseMidTransferIsAnErrorNotAHang) {
  RecordingLogger log;
  auto t = loopbackTransport(log);
  ASSERT_NE(t, nullptr);
  Pair p = connectPair(*t);
  std::vector<uint8_t> out(64 << 20), in(64 << 20);
  void* data[1] = {in.data()};
  size_t sizes[1] = {in.size()};
  int tags[1] = {0};
  Request* r = postRecv(*t, p.recv, 1, data, sizes, tags);
  announce(*t, r);
  Request* s = postSend(*t, p.send, out.data(), out.size(), 0);
  ASSERT_NE(r, nullptr);
  ASSERT_NE(s, nullptr);
  TestResult res;
  ASSERT_TRUE(t->test(r, &res).ok());
  t->closeSend(p.send);  // the sender vanishes with most of the message unsent
  std::string error;
  res = waitDone(*t, r, 10000, &error);
  EXPECT_FALSE(res.done);
  EXPECT_NE(error.find("closed"), std::string::npos) << error;
  EXPECT_NE(error.find("127.0.0.1"), std::string::npos) << error;
  // The comm stays failed; later calls say so instead of hanging.
  EXPECT_FALSE(t->irecv(p.recv, 1, data, sizes, tags, nullptr).ok());
  t->closeRecv(p.recv);
  EXPECT_EQ(log.count(LogLevel::Warn, "receive from 127.0.0.1"), 1) << log.dump();
}

TEST(Lifecycle, ReceiverCloseFailsTheSender) {
  RecordingLogger log;
  auto t = loopbackTransport(log);
  ASSERT_NE(t, nullptr);
  Pair p = connectPair(*t);
  std::vector<uint8_t> out(64 << 20), in(64 << 20);
  void* data[1] = {in.data()};
  size_t sizes[1] = {in.size()};
  int tags[1] = {0};
  announce(*t, postRecv(*t, p.recv, 1, data, sizes, tags));
  Request* s = postSend(*t, p.send, out.data(), out.size(), 0);
  ASSERT_NE(s, nullptr);
  t->closeRecv(p.recv);
  std::string error;
  TestResult res = waitDone(*t, s, 10000, &error);
  EXPECT_FALSE(res.done);
  EXPECT_FALSE(error.empty());
  t->closeSend(p.send);
}

/// Reads the fd (blocking) until the peer's FIN or an error; the bytes read, -errno on error.
long readToEnd(int fd) {
  long total = 0;
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      total += n;
    } else if (n == 0) {
      return total;
    } else if (errno != EINTR) {
      return -errno;
    }
  }
}

/// A raw receiver for our send comm: a plain listening socket on loopback (with `window` as its
/// receive buffer, inherited by the accepted socket) takes the connection of a send comm without
/// data streams and reads its hello. The fds go to *listener and *control.
SendComm* connectToRawReceiver(Transport& t, int window, int* listener, int* control) {
  *listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(setsockopt(*listener, SOL_SOCKET, SO_RCVBUF, &window, sizeof(window)), 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(*listener, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)), 0);
  EXPECT_EQ(listen(*listener, 4), 0);
  socklen_t len = sizeof(sin);
  EXPECT_EQ(getsockname(*listener, reinterpret_cast<sockaddr*>(&sin), &len), 0);
  wire::Handle h;
  h.family = AF_INET;
  h.port = ntohs(sin.sin_port);
  std::memcpy(h.address, &sin.sin_addr, 4);
  h.secret = 7;
  unsigned char handle[kHandleBytes];
  wire::encodeHandle(h, handle);
  SendComm* comm = nullptr;
  for (int i = 0; i < 1000 && comm == nullptr; ++i) {
    auto s = t.connect(0, handle, {});
    EXPECT_TRUE(s.ok()) << s.error();
    if (!s.ok()) return nullptr;
    comm = *s;
  }
  *control = accept(*listener, nullptr, nullptr);
  uint8_t hello[wire::Hello::kBytes];
  EXPECT_EQ(recv(*control, hello, sizeof(hello), MSG_WAITALL), static_cast<ssize_t>(sizeof(hello)));
  return comm;
}

TEST(Lifecycle, ASenderThatClosedStillDeliversWhileItsReceiverWritesCtsRecords) {
  // A raw receiver reads nothing until the sender has closed, then writes a CTS record (a
  // receive posted late), then reads. Had the sender closed its control socket, the kernel
  // would answer that record with a reset and drop the part of the message it had not sent yet.
  RecordingLogger log;
  auto t = loopbackTransport(log, {{"NCCL_PILOT_SOCKET_NSTREAMS", "0"}});
  ASSERT_NE(t, nullptr);
  // A small receive window: most of the message is still in the sender's kernel when it
  // closes, as on a real network when the last step is sent.
  int listener = -1, control = -1;
  SendComm* comm = connectToRawReceiver(*t, 4096, &listener, &control);
  ASSERT_NE(comm, nullptr);
  ASSERT_GE(control, 0);

  std::vector<uint8_t> out(12000, 0x11);
  Request* r = postSend(*t, comm, out.data(), out.size(), 0);  // eager: no CTS record needed
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(waitDone(*t, r).done);
  const int lingeringBefore = lingeringSockets();
  t->closeSend(comm);
  EXPECT_EQ(lingeringSockets(), lingeringBefore + 1) << "the control socket waits for its peer";

  wire::Cts cts;
  cts.group = 0;
  cts.n = 1;
  cts.tags[0] = 0;
  cts.capacity[0] = out.size();
  uint8_t record[wire::Cts::kMaxBytes];
  const size_t recordBytes = wire::encodeCts(cts, record);
  ASSERT_EQ(send(control, record, recordBytes, MSG_NOSIGNAL), static_cast<ssize_t>(recordBytes));
  usleep(20000);  // a reset, had there been one, is back by now
  EXPECT_EQ(readToEnd(control), static_cast<long>(wire::MsgHeader::kBytes + out.size()))
      << "every byte, then a FIN (not a reset)";
  close(control);
  close(listener);
  // The receiver closed: the next sweep lets the fd go.
  for (int i = 0; i < 100 && lingeringSockets() > lingeringBefore; ++i) {
    usleep(10000);
    sweepLingeringSockets();
  }
  EXPECT_EQ(lingeringSockets(), lingeringBefore);
}

/// A closed sender's control socket goes once its receiver closed, or once the timeout passed,
/// while the process only keeps testing its other comms: no later close of a receive comm in
/// this process is needed (there may never be one). The soak found these fds still open after
/// every communicator had been re-established (tests/soak).
class LingeringWhileOthersRun : public ::testing::TestWithParam<bool> {};

TEST_P(LingeringWhileOthersRun, TheSocketGoesWithoutAnotherClose) {
  const bool receiverCloses = GetParam();
  RecordingLogger log;
  auto t = loopbackTransport(
      log, {{"NCCL_PILOT_SOCKET_NSTREAMS", "0"}, {"NCCL_PILOT_SOCKET_TIMEOUT_MS", "300"}});
  ASSERT_NE(t, nullptr);
  Pair busy = connectPair(*t);
  ASSERT_NE(busy.send, nullptr);
  int listener = -1, control = -1;
  SendComm* comm = connectToRawReceiver(*t, 1 << 16, &listener, &control);
  ASSERT_NE(comm, nullptr);
  sweepLingeringSockets();
  const int lingeringBefore = lingeringSockets();
  const int fdsBefore = openFdCount();
  t->closeSend(comm);
  ASSERT_EQ(lingeringSockets(), lingeringBefore + 1);
  if (receiverCloses) close(control);  // else it stays open, silent: the deadline must end it
  // Only traffic on the other pair from here: isend, irecv, test.
  const int64_t deadline = monotonicMs() + 2000;
  for (uint32_t i = 0; lingeringSockets() > lingeringBefore && monotonicMs() < deadline; ++i) {
    uint32_t out = i, in = 0;
    void* data[1] = {&in};
    size_t sizes[1] = {sizeof(in)};
    int tags[1] = {1};
    Request* r = postRecv(*t, busy.recv, 1, data, sizes, tags);
    Request* s = postSend(*t, busy.send, &out, sizeof(out), 1);
    ASSERT_TRUE(waitDone(*t, s).done);
    ASSERT_TRUE(waitDone(*t, r).done);
    ASSERT_EQ(in, out);
    usleep(1000);
  }
  EXPECT_EQ(lingeringSockets(), lingeringBefore)
      << (receiverCloses ? "the receiver closed" : "the timeout passed")
      << ", but the socket is still open";
  // The closed comm's socket, and the raw receiver's own when it closed.
  EXPECT_EQ(openFdCount(), fdsBefore - 1 - (receiverCloses ? 1 : 0));
  if (!receiverCloses) close(control);
  close(listener);
  closePair(*t, busy);
}

INSTANTIATE_TEST_SUITE_P(Lifecycle, LingeringWhileOthersRun, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "ReceiverClosed" : "TimeoutPassed";
                         });

TEST(Lifecycle, ConnectAndAcceptOnSeparateThreads) {
  // NCCL's service thread connects while another rank's accepts; each call returns at once.
  RecordingLogger log;
  auto t = loopbackTransport(log);
  ASSERT_NE(t, nullptr);
  for (int i = 0; i < 20; ++i) {
    unsigned char handle[kHandleBytes];
    auto listen = t->listen(0, handle);
    ASSERT_TRUE(listen.ok());
    SendComm* send = nullptr;
    std::thread connector([&] {
      unsigned char copy[kHandleBytes];
      std::memcpy(copy, handle, sizeof(copy));  // the peer only has a copy of the handle
      while (send == nullptr) {
        auto s = t->connect(0, copy, {});
        ASSERT_TRUE(s.ok()) << s.error();
        send = *s;
      }
    });
    RecvComm* recv = nullptr;
    const int64_t deadline = monotonicMs() + 10000;
    while (recv == nullptr && monotonicMs() < deadline) {
      auto r = t->accept(*listen);
      ASSERT_TRUE(r.ok());
      recv = *r;
    }
    connector.join();
    ASSERT_NE(recv, nullptr);
    t->closeListen(*listen);
    t->closeSend(send);
    t->closeRecv(recv);
  }
}

TEST(Lifecycle, ConnectToAVanishedListenerFailsWithinTheTimeout) {
  RecordingLogger log;
  auto t = loopbackTransport(log, {{"NCCL_PILOT_SOCKET_TIMEOUT_MS", "500"}});
  ASSERT_NE(t, nullptr);
  unsigned char handle[kHandleBytes];
  auto listen = t->listen(0, handle);
  ASSERT_TRUE(listen.ok());
  t->closeListen(*listen);  // the port is now closed: every attempt is refused
  const int64_t start = monotonicMs();
  Expected<SendComm*> s = t->connect(0, handle, {});
  while (s.ok() && *s == nullptr && monotonicMs() - start < 5000) s = t->connect(0, handle, {});
  ASSERT_FALSE(s.ok());
  EXPECT_LT(monotonicMs() - start, 2000);
  EXPECT_NE(s.error().find("127.0.0.1"), std::string::npos) << s.error();
  // A failed attempt leaves the handle reusable.
  s = t->connect(0, handle, {});
  EXPECT_TRUE(s.ok());
  while (s.ok() && *s == nullptr) s = t->connect(0, handle, {});
}

TEST(Lifecycle, Ipv6Works) {
  // NCCL's selection never picks ::1 (IPv6 loopback); build the device list by hand.
  NetInterface lo6;
  lo6.name = "lo";
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&lo6.address.storage);
  sin6->sin6_family = AF_INET6;
  sin6->sin6_addr = in6addr_loopback;
  lo6.address.length = sizeof(sockaddr_in6);
  RecordingLogger log;
  auto t = makeSocketTransport({lo6}, SocketOptions(), log);
  unsigned char handle[kHandleBytes];
  auto listen = t->listen(0, handle);
  if (!listen.ok() && listen.error().find("Cannot assign") != std::string::npos) {
    GTEST_SKIP() << "no IPv6 loopback here: " << listen.error();
  }
  ASSERT_TRUE(listen.ok()) << listen.error();
  t->closeListen(*listen);
  Pair p = connectPair(*t);
  ASSERT_NE(p.send, nullptr);
  std::vector<uint8_t> out(300000), in(300000);
  fillPattern(out.data(), out.size(), 6);
  void* data[1] = {in.data()};
  size_t sizes[1] = {in.size()};
  int tags[1] = {0};
  Request* r = postRecv(*t, p.recv, 1, data, sizes, tags);
  announce(*t, r);
  Request* s = postSend(*t, p.send, out.data(), out.size(), 0);
  ASSERT_TRUE(waitDone(*t, s).done);
  ASSERT_TRUE(waitDone(*t, r).done);
  EXPECT_EQ(firstMismatch(in.data(), in.size(), 6), SIZE_MAX);
  closePair(*t, p);
}

TEST(Lifecycle, ForeignHandlesAreRejected) {
  RecordingLogger log;
  auto t = loopbackTransport(log);
  ASSERT_NE(t, nullptr);
  unsigned char handle[kHandleBytes] = {};
  EXPECT_FALSE(t->connect(0, handle, {}).ok()) << "all-zero handle";
  auto listen = t->listen(0, handle);
  ASSERT_TRUE(listen.ok());
  handle[40] = 0x55;  // a ticket no connect() ever issued
  EXPECT_FALSE(t->connect(0, handle, {}).ok());
  EXPECT_FALSE(t->listen(5, handle).ok());
  EXPECT_FALSE(t->properties(-1).ok());
  t->closeListen(*listen);
}

}  // namespace
}  // namespace nettest
