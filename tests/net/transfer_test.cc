// Data-path behaviour over loopback, sender and receiver on two threads as in NCCL's proxy:
// exact payloads for every size class, FIFO with many requests in flight, grouped receives
// matched by tag, receives larger than sends.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <thread>

#include "net_test_support.h"

namespace nettest {
namespace {

/// Data streams per connection, and helper threads moving them (0: the progress thread does).
struct Layout {
  int streams;
  int threads;
};

class Transfer : public ::testing::TestWithParam<Layout> {
 protected:
  void SetUp() override {
    transport_ = loopbackTransport(
        log_, {{"NCCL_PILOT_SOCKET_NSTREAMS", std::to_string(GetParam().streams)},
               {"NCCL_PILOT_SOCKET_NTHREADS", std::to_string(GetParam().threads)},
               // A quarter of the default chunk, so 512K..3M messages are striped too.
               {"NCCL_PILOT_SOCKET_CHUNK", "128K"}});
    ASSERT_NE(transport_, nullptr);
    pair_ = connectPair(*transport_);
    ASSERT_NE(pair_.send, nullptr);
    ASSERT_NE(pair_.recv, nullptr);
  }
  void TearDown() override {
    if (transport_) closePair(*transport_, pair_);
    EXPECT_EQ(log_.lines(LogLevel::Warn).size(), 0u) << log_.dump();
  }

  /// One message of `size` bytes from `out` into `in` (whose whole size is posted), both ends
  /// tested alternately in this thread; returns the size the receiver reports.
  size_t moveOne(const std::vector<uint8_t>& out, size_t size, std::vector<uint8_t>& in) {
    Transport& t = *transport_;
    void* data[1] = {in.data()};
    size_t room[1] = {in.size()};
    int tags[1] = {0};
    Request* rr = postRecv(t, pair_.recv, 1, data, room, tags);
    announce(t, rr);
    Request* sr = postSend(t, pair_.send, out.data(), size, 0);
    EXPECT_NE(rr, nullptr);
    EXPECT_NE(sr, nullptr);
    if (rr == nullptr || sr == nullptr) return SIZE_MAX;
    TestResult rres, sres;
    while (!rres.done || !sres.done) {
      if (!sres.done && !t.test(sr, &sres).ok()) return SIZE_MAX;
      if (!rres.done && !t.test(rr, &rres).ok()) return SIZE_MAX;
    }
    return rres.sizes[0];
  }

  RecordingLogger log_;
  std::unique_ptr<Transport> transport_;
  Pair pair_;
};

TEST_P(Transfer, EverySizeArrivesByteForByte) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{65536}, size_t{1} << 20,
                      size_t{16} << 20, size_t{256} << 20}) {
    SCOPED_TRACE("size " + std::to_string(size));
    std::vector<uint8_t> out(size), in(size + 1, 0xee);
    fillPattern(out.data(), size, size);
    Transport& t = *transport_;
    std::thread sender([&] {
      Request* r = postSend(t, pair_.send, out.data(), size, 7);
      ASSERT_NE(r, nullptr);
      std::string error;
      TestResult res = waitDone(t, r, 60000, &error);
      ASSERT_TRUE(res.done) << error;
      EXPECT_EQ(res.sizes[0], size);
    });
    void* data[1] = {in.data()};
    size_t sizes[1] = {size};
    int tags[1] = {7};
    Request* r = postRecv(t, pair_.recv, 1, data, sizes, tags);
    ASSERT_NE(r, nullptr);
    std::string error;
    TestResult res = waitDone(t, r, 60000, &error);
    sender.join();
    ASSERT_TRUE(res.done) << error;
    EXPECT_EQ(res.count, 1);
    EXPECT_EQ(res.sizes[0], size);
    EXPECT_EQ(firstMismatch(in.data(), size, size), SIZE_MAX);
    EXPECT_EQ(in[size], 0xee) << "wrote past the message";
  }
}

TEST_P(Transfer, ManyInFlightCompleteInOrder) {
  constexpr int kDepth = 8, kRounds = 40;
  const size_t kSizes[] = {0, 100, 8192, 8193, 65536, 600000, 1 << 20, 3 << 20};
  Transport& t = *transport_;
  std::vector<std::vector<uint8_t>> out(kDepth), in(kDepth);
  for (int i = 0; i < kDepth; ++i) {
    out[i].resize(kSizes[i]);
    in[i].resize(kSizes[i]);
  }
  std::thread sender([&] {
    for (int round = 0; round < kRounds; ++round) {
      std::vector<Request*> reqs;
      for (int i = 0; i < kDepth; ++i) {
        fillPattern(out[i].data(), out[i].size(), round * 100 + i);
        reqs.push_back(postSend(t, pair_.send, out[i].data(), out[i].size(), 1));
        ASSERT_NE(reqs.back(), nullptr);
      }
      for (int i = 0; i < kDepth; ++i) {
        TestResult res = waitDone(t, reqs[i]);
        ASSERT_TRUE(res.done);
      }
    }
  });
  for (int round = 0; round < kRounds; ++round) {
    std::vector<Request*> reqs;
    for (int i = 0; i < kDepth; ++i) {
      void* data[1] = {in[i].data()};
      size_t sizes[1] = {in[i].size()};
      int tags[1] = {1};
      reqs.push_back(postRecv(t, pair_.recv, 1, data, sizes, tags));
      ASSERT_NE(reqs.back(), nullptr);
    }
    for (int i = 0; i < kDepth; ++i) {  // NCCL tests only the oldest: so do we
      TestResult res = waitDone(t, reqs[i]);
      ASSERT_TRUE(res.done);
      ASSERT_EQ(res.sizes[0], in[i].size());
      ASSERT_EQ(firstMismatch(in[i].data(), in[i].size(), round * 100 + i), SIZE_MAX)
          << "round " << round << " message " << i;
    }
  }
  sender.join();
}

TEST_P(Transfer, GroupedReceivesMatchByTag) {
  constexpr int kGroups = 30;
  Transport& t = *transport_;
  std::mt19937 rng(42);
  // Sizes per tag: small (inline), medium, large (striped over the streams).
  auto sizeOf = [](int group, int tag) -> size_t {
    const size_t choices[] = {0, 17, 8192, 20000, 131072, 1 << 20, 2500000, 64};
    return choices[(group + tag) % 8];
  };
  std::vector<std::vector<uint8_t>> out(kMaxRecvs), in(kMaxRecvs);
  std::vector<std::vector<int>> orders(kGroups);
  for (auto& order : orders) {
    order.resize(kMaxRecvs);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
  }
  for (int i = 0; i < kMaxRecvs; ++i) {
    out[i].resize(4 << 20);
    in[i].resize(4 << 20);
  }
  std::thread sender([&] {
    for (int g = 0; g < kGroups; ++g) {
      std::vector<Request*> reqs;
      for (int tag : orders[g]) {
        fillPattern(out[tag].data(), sizeOf(g, tag), g * 1000 + tag);
        reqs.push_back(postSend(t, pair_.send, out[tag].data(), sizeOf(g, tag), 100 + tag));
        ASSERT_NE(reqs.back(), nullptr);
      }
      for (Request* r : reqs) ASSERT_TRUE(waitDone(t, r).done);
    }
  });
  for (int g = 0; g < kGroups; ++g) {
    void* data[kMaxRecvs];
    size_t sizes[kMaxRecvs];
    int tags[kMaxRecvs];
    for (int i = 0; i < kMaxRecvs; ++i) {
      data[i] = in[i].data();
      sizes[i] = in[i].size();  // larger than any message
      tags[i] = 100 + i;
    }
    Request* r = postRecv(t, pair_.recv, kMaxRecvs, data, sizes, tags);
    ASSERT_NE(r, nullptr);
    TestResult res = waitDone(t, r);
    ASSERT_TRUE(res.done);
    ASSERT_EQ(res.count, kMaxRecvs);
    for (int i = 0; i < kMaxRecvs; ++i) {
      ASSERT_EQ(res.sizes[i], sizeOf(g, i)) << "group " << g << " tag " << i;
      ASSERT_EQ(firstMismatch(in[i].data(), res.sizes[i], g * 1000 + i), SIZE_MAX);
    }
  }
  sender.join();
}

TEST_P(Transfer, ReceiveLargerThanSendReportsTheRealSize) {
  for (size_t size : {size_t{0}, size_t{1000}, size_t{300000}}) {
    std::vector<uint8_t> out(size), in(1 << 20);
    fillPattern(out.data(), size, 9);
    EXPECT_EQ(moveOne(out, size, in), size);
    EXPECT_EQ(firstMismatch(in.data(), size, 9), SIZE_MAX);
  }
}

TEST_P(Transfer, TagsFillReceivesInPostingOrderAndRequestsCompleteInOrder) {
  // The k-th message with tag T lands in the k-th buffer posted with T (where NCCL's IB
  // transport puts it), whatever order the tags are sent in; a request is reported done only
  // after every older one.
  Transport& t = *transport_;
  uint8_t a1[4] = {1, 1, 1, 1}, a2[4] = {2, 2, 2, 2}, b1[4] = {3, 3, 3, 3}, b2[4] = {4, 4, 4, 4};
  uint8_t c1[4] = {5, 5, 5, 5};
  uint8_t in[5][4] = {};
  void* g1[2] = {in[0], in[1]};
  void* g2[2] = {in[2], in[3]};
  void* g3[1] = {in[4]};
  size_t sizes[2] = {4, 4};
  int tags[2] = {10, 11};
  int tag12[1] = {12};
  Request* r1 = postRecv(t, pair_.recv, 2, g1, sizes, tags);
  Request* r2 = postRecv(t, pair_.recv, 2, g2, sizes, tags);
  Request* r3 = postRecv(t, pair_.recv, 1, g3, sizes, tag12);
  // Small sends complete once written (their test() writes them).
  auto send = [&](uint8_t* data, int tag) {
    Request* s = postSend(t, pair_.send, data, 4, tag);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(waitDone(t, s).done);
  };
  send(a1, 10);
  send(a2, 10);
  send(c1, 12);
  // r3 has its message, but r1 and r2 wait for tag 11: nothing is reported done yet.
  std::string error;
  EXPECT_FALSE(waitDone(t, r3, 300, &error).done) << "r3 overtook r1 and r2";
  EXPECT_NE(error.find("not done within"), std::string::npos) << error;
  send(b1, 11);
  ASSERT_TRUE(waitDone(t, r1).done);
  EXPECT_EQ(in[0][0], 1);
  EXPECT_EQ(in[1][0], 3);
  send(b2, 11);
  ASSERT_TRUE(waitDone(t, r2).done);
  EXPECT_EQ(in[2][0], 2) << "the second tag-10 message fills the second receive";
  EXPECT_EQ(in[3][0], 4);
  ASSERT_TRUE(waitDone(t, r3).done);
  EXPECT_EQ(in[4][0], 5);
}

TEST_P(Transfer, CloseReportsWhatEachEndMoved) {
  // The INFO line at close is how tests/gpu/run.sh proves data went through this transport.
  Transport& t = *transport_;
  uint64_t total = 0;
  std::vector<uint8_t> out(3 << 20), in(3 << 20);
  for (size_t size : {size_t{0}, size_t{100}, size_t{70000}, size_t{3} << 20}) {
    total += size;
    ASSERT_EQ(moveOne(out, size, in), size);
  }
  closePair(t, pair_);
  const std::string moved = ": 4 messages, " + std::to_string(total) + " bytes over " +
                            std::to_string(GetParam().streams) + " data stream(s)";
  EXPECT_EQ(log_.count(LogLevel::Info, "send to "), 1) << log_.dump();
  EXPECT_EQ(log_.count(LogLevel::Info, "receive from "), 1) << log_.dump();
  EXPECT_EQ(log_.count(LogLevel::Info, " closed" + moved), 2) << log_.dump();
}

INSTANTIATE_TEST_SUITE_P(Streams, Transfer,
                         ::testing::Values(Layout{0, 0}, Layout{1, 0}, Layout{4, 0}, Layout{16, 0},
                                           Layout{1, 1}, Layout{4, 2}, Layout{16, 3}),
                         [](const ::testing::TestParamInfo<Layout>& p) {
                           return std::to_string(p.param.streams) + "streams" +
                                  std::to_string(p.param.threads) + "threads";
                         });

TEST(TransferLimits, ThirtyTwoGroupedReceivesOfEightAreInFlightAtOnce) {
  // 32 x maxRecvs: every buffer posted and every send posted before anything is tested.
  RecordingLogger log;
  auto t = loopbackTransport(log);
  ASSERT_NE(t, nullptr);
  Pair p = connectPair(*t);
  constexpr int kGroups = kMaxRequests, kSize = 20000;
  std::vector<uint8_t> out(kMaxInflight * kSize), in(kMaxInflight * kSize);
  fillPattern(out.data(), out.size(), 77);
  std::vector<Request*> recvs, sends;
  for (int g = 0; g < kGroups; ++g) {
    void* data[kMaxRecvs];
    size_t sizes[kMaxRecvs];
    int tags[kMaxRecvs];
    for (int i = 0; i < kMaxRecvs; ++i) {
      data[i] = in.data() + (g * kMaxRecvs + i) * kSize;
      sizes[i] = kSize;
      tags[i] = i;
    }
    recvs.push_back(postRecv(*t, p.recv, kMaxRecvs, data, sizes, tags));
    ASSERT_NE(recvs.back(), nullptr) << "group " << g;
  }
  // The pool is full: one more receive must wait (nullptr), not fail or allocate.
  void* extraData[1] = {in.data()};
  size_t extraSize[1] = {1};
  int extraTag[1] = {0};
  auto extra = t->irecv(p.recv, 1, extraData, extraSize, extraTag, nullptr);
  ASSERT_TRUE(extra.ok());
  EXPECT_EQ(*extra, nullptr);
  announce(*t, recvs[0]);  // writes every posted receive's CTS record
  for (int m = 0; m < kMaxInflight; ++m) {
    sends.push_back(postSend(*t, p.send, out.data() + m * kSize, kSize, m % kMaxRecvs));
    ASSERT_NE(sends.back(), nullptr) << "message " << m;
  }
  // 5 MB is more than the kernel buffers one connection: both ends must be driven, oldest
  // request first (as NCCL tests them).
  size_t sent = 0, received = 0;
  const int64_t deadline = monotonicMs() + 30000;
  while ((sent < sends.size() || received < recvs.size()) && monotonicMs() < deadline) {
    TestResult res;
    if (sent < sends.size()) {
      ASSERT_TRUE(t->test(sends[sent], &res).ok());
      if (res.done) ++sent;
    }
    if (received < recvs.size()) {
      ASSERT_TRUE(t->test(recvs[received], &res).ok());
      if (res.done) ++received;
    }
  }
  ASSERT_EQ(sent, sends.size());
  ASSERT_EQ(received, recvs.size());
  EXPECT_EQ(firstMismatch(in.data(), in.size(), 77), SIZE_MAX);
  closePair(*t, p);
}

TEST(TransferErrors, EagerSendLargerThanThePostedReceiveFailsBothEnds) {
  // Sent before the sender saw the receive (eager): the receiver refuses it before a byte is
  // placed and shuts the connection, so the sender fails too.
  RecordingLogger log;
  auto t = loopbackTransport(log);
  ASSERT_NE(t, nullptr);
  Pair p = connectPair(*t);
  std::vector<uint8_t> out(5000, 7), in(4000, 0);
  void* data[1] = {in.data()};
  size_t sizes[1] = {in.size()};
  int tags[1] = {0};
  Request* r = postRecv(*t, p.recv, 1, data, sizes, tags);
  ASSERT_NE(r, nullptr);
  Request* s = postSend(*t, p.send, out.data(), out.size(), 0);
  ASSERT_NE(s, nullptr);
  TestResult sent;
  ASSERT_TRUE(t->test(s, &sent).ok());  // writes it
  EXPECT_TRUE(sent.done);
  std::string error;
  EXPECT_FALSE(waitDone(*t, r, 5000, &error).done);
  EXPECT_NE(error.find("message of 5000 bytes (tag 0) for a buffer of 4000"), std::string::npos)
      << error;
  EXPECT_NE(error.find("127.0.0.1:"), std::string::npos) << "names the peer: " << error;
  EXPECT_EQ(in[0], 0) << "not a byte accepted";
  // The sender learns it on its next call that reads the connection.
  Expected<Request*> next = static_cast<Request*>(nullptr);
  const int64_t deadline = monotonicMs() + 5000;
  while (next.ok() && monotonicMs() < deadline) {
    next = t->isend(p.send, out.data(), 100000, 0, nullptr);  // above the eager limit: reads CTS
  }
  ASSERT_FALSE(next.ok());
  EXPECT_NE(next.error().find("peer closed the connection"), std::string::npos) << next.error();
  EXPECT_EQ(log.count(LogLevel::Warn, "127.0.0.1:"), 2) << "one line per end:\n" << log.dump();
  closePair(*t, p);
}

TEST(TransferErrors, SendLargerThanAKnownReceiveFailsAtTheSender) {
  // Without eager sends the sender knows the buffer first and refuses the message itself.
  RecordingLogger log;
  auto t = loopbackTransport(log, {{"NCCL_PILOT_SOCKET_EAGER", "0"}});
  ASSERT_NE(t, nullptr);
  Pair p = connectPair(*t);
  std::vector<uint8_t> out(5000), in(4000);
  void* data[1] = {in.data()};
  size_t sizes[1] = {in.size()};
  int tags[1] = {0};
  announce(*t, postRecv(*t, p.recv, 1, data, sizes, tags));
  Expected<Request*> r = t->isend(p.send, out.data(), out.size(), 0, nullptr);
  for (int i = 0; i < 100000 && r.ok() && *r == nullptr; ++i) {
    r = t->isend(p.send, out.data(), out.size(), 0, nullptr);
  }
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("larger than the 4000-byte buffer"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("127.0.0.1:"), std::string::npos) << "names the peer: " << r.error();
  EXPECT_EQ(log.count(LogLevel::Warn, "127.0.0.1:"), 1) << log.dump();
  closePair(*t, p);
}

TEST(TransferErrors, BadArgumentsAreErrorsNotCrashes) {
  RecordingLogger log;
  auto t = loopbackTransport(log);
  ASSERT_NE(t, nullptr);
  Pair p = connectPair(*t);
  void* data[kMaxRecvs + 1] = {};
  size_t sizes[kMaxRecvs + 1] = {};
  int tags[kMaxRecvs + 1] = {};
  EXPECT_FALSE(t->irecv(p.recv, 0, data, sizes, tags, nullptr).ok());
  EXPECT_FALSE(t->irecv(p.recv, kMaxRecvs + 1, data, sizes, tags, nullptr).ok());
  sizes[0] = 10;
  EXPECT_FALSE(t->irecv(p.recv, 1, data, sizes, tags, nullptr).ok()) << "null buffer";
  EXPECT_FALSE(t->registerMemory(p.send, data, 10, 0x2).ok()) << "CUDA memory";
  auto mr = t->registerMemory(p.send, data, 10, kPtrHost);
  ASSERT_TRUE(mr.ok());
  EXPECT_TRUE(t->deregisterMemory(p.send, *mr).ok());
  auto flush = t->iflush(p.recv, 1, data, nullptr, nullptr);
  ASSERT_TRUE(flush.ok());
  EXPECT_EQ(*flush, nullptr);
  closePair(*t, p);
}

}  // namespace
}  // namespace nettest
