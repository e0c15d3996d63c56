// The built libnccl-net-pilot.so end to end, through each exported ABI version, across two
// processes over loopback: a forked child is the sending rank, this process the receiving
// rank, each with its own dlopen and init, the handle passed through a pipe as NCCL's
// bootstrap would. Properties per version, NULL device handles, the 0x1 request trap, sizes of
// every class, receives larger than sends, 8 in flight, grouped receives by tag, teardown.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include "net_test_support.h"
#include "plugin_host.h"

namespace plughost {
namespace {

using nettest::fillPattern;
using nettest::firstMismatch;
using nettest::monotonicMs;

constexpr int kHost = 1, kCuda = 2;
constexpr size_t kBuffer = 4 << 20;
const size_t kSizes[] = {0, 1, 4096, 8192, 8193, 65536, 600000, 1 << 20, 4 << 20};
constexpr int kGroupOrder[8] = {5, 2, 7, 0, 3, 6, 1, 4};

/// Calls `f` until the out-pointer is set, an error, or 10 s.
template <typename F>
int until(void** out, F f) {
  const int64_t deadline = monotonicMs() + 10000;
  while (monotonicMs() < deadline) {
    int r = f();
    if (r != 0 || *out != nullptr) return r;
  }
  return -1;
}

int waitRequest(Net& net, void* request, int* sizes) {
  int done = 0;
  const int64_t deadline = monotonicMs() + 30000;
  while (!done) {
    int r = net.test(request, &done, sizes);
    if (r != 0) return r;
    if (monotonicMs() > deadline) return -1;
  }
  return 0;
}

/// The sending rank (child). Returns the exit code: the number of the step that failed.
int sendingRank(int version, int handleFd) {
  void* module = openModule();
  if (module == nullptr) return 2;
  Net net = loadNet(module, version);
  void* ctx = nullptr;
  if (net.version == 0 || net.init(&ctx) != 0) return 3;
  unsigned char handle[128];
  if (read(handleFd, handle, sizeof(handle)) != static_cast<ssize_t>(sizeof(handle))) return 4;
  void* send = nullptr;
  void* devHandle = reinterpret_cast<void*>(0xdead);
  if (until(&send, [&] { return net.connect(ctx, 0, handle, &send, &devHandle); }) != 0) return 5;
  if (version >= 7 && devHandle != nullptr) return 6;
  std::vector<uint8_t> buffer(kBuffer);
  void* mh = nullptr;
  if (net.regMr(send, buffer.data(), buffer.size(), kHost, &mh) != 0) return 7;
  auto sendOne = [&](size_t size, int tag, uint64_t seed) -> int {
    fillPattern(buffer.data(), size, seed);
    void* req = nullptr;
    if (until(&req, [&] { return net.isend(send, buffer.data(), size, tag, mh, &req); }) != 0) {
      return 1;
    }
    int sizes[1] = {-1};
    if (waitRequest(net, req, sizes) != 0 || sizes[0] != static_cast<int>(size)) return 1;
    return 0;
  };
  for (size_t i = 0; i < std::size(kSizes); ++i) {
    if (sendOne(kSizes[i], 9, i) != 0) return 10;
  }
  // 8 in flight: all posted before the oldest is tested.
  std::vector<void*> reqs;
  for (int i = 0; i < 8; ++i) {
    void* req = nullptr;
    uint8_t* at = buffer.data() + i * (kBuffer / 8);
    fillPattern(at, kBuffer / 8, 100 + i);
    if (until(&req, [&] { return net.isend(send, at, kBuffer / 8, 3, mh, &req); }) != 0) return 11;
    reqs.push_back(req);
  }
  for (void* req : reqs) {
    if (waitRequest(net, req, nullptr) != 0) return 12;
  }
  // One grouped receive on the other side; the sends come in another order of tags.
  reqs.clear();
  for (int tag : kGroupOrder) {
    uint8_t* at = buffer.data() + tag * (kBuffer / 8);
    const size_t size = 1000 * tag;
    fillPattern(at, size, 200 + tag);
    void* req = nullptr;
    if (until(&req, [&] { return net.isend(send, at, size, 40 + tag, mh, &req); }) != 0) {
      return 13;
    }
    reqs.push_back(req);
  }
  for (void* req : reqs) {
    if (waitRequest(net, req, nullptr) != 0) return 14;
  }
  if (net.deregMr(send, mh) != 0) return 15;
  if (net.closeSend(send) != 0) return 16;
  if (net.finalize(ctx) != 0) return 17;
  return warnCount() == 0 ? 0 : 18;
}

void receivingRank(int version, int handleFd) {
  void* module = openModule();
  ASSERT_NE(module, nullptr);
  Net net = loadNet(module, version);
  ASSERT_EQ(net.version, version);
  void* ctx = nullptr;
  ASSERT_EQ(net.init(&ctx), 0) << loggedLines();
  if (version >= 11) {
    EXPECT_NE(ctx, nullptr);
    EXPECT_EQ(net.setNetAttr(ctx), 0);
  }
  int ndev = -1;
  ASSERT_EQ(net.devices(&ndev), 0);
  ASSERT_EQ(ndev, 1) << loggedLines();

  Props p;
  ASSERT_EQ(net.getProperties(0, &p), 0);
  EXPECT_EQ(p.name, "lo");
  EXPECT_EQ(p.pciPath, nullptr) << "lo is virtual";
  EXPECT_EQ(p.ptrSupport, kHost);
  EXPECT_EQ(p.speed, 10000);
  EXPECT_EQ(p.maxRecvs, 8);
  EXPECT_GT(p.maxComms, 0);
  EXPECT_EQ(p.latency, 0.0f);
  if (version >= 7) {
    EXPECT_EQ(p.netDeviceType, 0) << "NCCL_NET_DEVICE_HOST";
    EXPECT_EQ(p.netDeviceVersion, 0);
    EXPECT_EQ(net.irecvConsumed, nullptr) << "NCCL would call it after every receive";
  }
  if (version >= 8) {
    EXPECT_EQ(p.regIsGlobal, 0);
  }
  if (version >= 9) {
    EXPECT_EQ(p.forceFlush, 0);
    EXPECT_EQ(p.vNdevs, 1);
    EXPECT_EQ(p.vDev0, 0);
    EXPECT_EQ(p.maxP2pBytes, size_t{1} << 40);
    EXPECT_EQ(p.maxCollBytes, size_t{512} << 20);
    EXPECT_EQ(net.makeVDevice, nullptr) << "NULL keeps NCCL on the physical devices";
  }
  if (version >= 11) {
    EXPECT_EQ(p.maxMultiRequestSize, 1);
  }
  if (version >= 12) {
    EXPECT_EQ(p.railId, -1);
    EXPECT_EQ(p.planeId, -1);
  }

  unsigned char handle[128];
  void* listen = nullptr;
  ASSERT_EQ(net.listen(ctx, 0, handle, &listen), 0);
  ASSERT_NE(listen, nullptr);
  ASSERT_EQ(write(handleFd, handle, sizeof(handle)), static_cast<ssize_t>(sizeof(handle)));
  void* recv = nullptr;
  void* devHandle = reinterpret_cast<void*>(0xdead);
  ASSERT_EQ(until(&recv, [&] { return net.accept(listen, &recv, &devHandle); }), 0);
  ASSERT_NE(recv, nullptr);
  if (version >= 7) {
    EXPECT_EQ(devHandle, nullptr);
  }
  ASSERT_EQ(net.closeListen(listen), 0);  // NCCL closes it right after accept

  std::vector<uint8_t> buffer(kBuffer + 4096);
  void* mh = nullptr;
  ASSERT_EQ(net.regMr(recv, buffer.data(), buffer.size(), kHost, &mh), 0);
  ASSERT_NE(mh, nullptr);

  // The data path on another thread, as NCCL's progress thread does it.
  std::thread progress([&] {
    for (size_t i = 0; i < std::size(kSizes); ++i) {
      SCOPED_TRACE("size " + std::to_string(kSizes[i]));
      void* data[1] = {buffer.data()};
      size_t capacity[1] = {kSizes[i] + 4096};  // larger than the message
      int tags[1] = {9};
      void* req = nullptr;
      ASSERT_EQ(until(&req, [&] { return net.irecv(recv, 1, data, capacity, tags, &mh, &req); }),
                0);
      ASSERT_NE(req, reinterpret_cast<void*>(0x1));
      int sizes[1] = {-1};
      ASSERT_EQ(waitRequest(net, req, sizes), 0) << loggedLines();
      EXPECT_EQ(sizes[0], static_cast<int>(kSizes[i]));
      EXPECT_EQ(firstMismatch(buffer.data(), kSizes[i], i), SIZE_MAX);
      void* flush = reinterpret_cast<void*>(0x1);
      int flushSizes[1] = {static_cast<int>(kSizes[i])};
      ASSERT_EQ(net.iflush(recv, 1, data, flushSizes, &mh, &flush), 0);
      EXPECT_EQ(flush, nullptr) << "host memory needs no flush";
    }
    std::vector<void*> reqs;
    for (int i = 0; i < 8; ++i) {
      void* data[1] = {buffer.data() + i * (kBuffer / 8)};
      size_t capacity[1] = {kBuffer / 8};
      int tags[1] = {3};
      void* req = nullptr;
      ASSERT_EQ(until(&req, [&] { return net.irecv(recv, 1, data, capacity, tags, &mh, &req); }),
                0);
      reqs.push_back(req);
    }
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(waitRequest(net, reqs[i], nullptr), 0);
      EXPECT_EQ(firstMismatch(buffer.data() + i * (kBuffer / 8), kBuffer / 8, 100 + i), SIZE_MAX);
    }
    void* data[8];
    size_t capacity[8];
    int tags[8];
    void* mhs[8];
    for (int i = 0; i < 8; ++i) {
      data[i] = buffer.data() + i * (kBuffer / 8);
      capacity[i] = kBuffer / 8;
      tags[i] = 40 + i;
      mhs[i] = mh;
    }
    void* req = nullptr;
    ASSERT_EQ(until(&req, [&] { return net.irecv(recv, 8, data, capacity, tags, mhs, &req); }), 0);
    int sizes[8];
    std::memset(sizes, 0xff, sizeof(sizes));
    ASSERT_EQ(waitRequest(net, req, sizes), 0);
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(sizes[i], 1000 * i) << "tag " << 40 + i;
      EXPECT_EQ(firstMismatch(static_cast<uint8_t*>(data[i]), 1000 * i, 200 + i), SIZE_MAX);
    }
  });
  progress.join();
  EXPECT_EQ(warnCount(), 0) << loggedLines();

  // Misuse is an error and a WARN, never a crash.
  void* cudaMh = reinterpret_cast<void*>(0x1);
  EXPECT_NE(net.regMr(recv, buffer.data(), 64, kCuda, &cudaMh), 0);
  EXPECT_EQ(cudaMh, nullptr);
  if (version <= 8) {
    void* req = reinterpret_cast<void*>(0x1);
    size_t negative[1] = {static_cast<size_t>(-5)};  // narrowed to int -5 by the host
    void* data[1] = {buffer.data()};
    int tags[1] = {0};
    EXPECT_EQ(net.irecv(recv, 1, data, negative, tags, &mh, &req), 4) << "ncclInvalidArgument";
    EXPECT_EQ(req, nullptr);
  }
  EXPECT_GE(warnCount(), 1);
  ASSERT_EQ(net.deregMr(recv, mh), 0);
  ASSERT_EQ(net.closeRecv(recv), 0);
  EXPECT_EQ(net.finalize(ctx), 0);
}

class PluginEndToEnd : public ::testing::TestWithParam<int> {};

TEST_P(PluginEndToEnd, TwoRanksOverLoopback) {
  const int version = GetParam();
  // Both ranks: the TCP transport (opt-in: auto leaves Ethernet to NCCL's Socket) on lo, no
  // topology detection of this host.
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  setenv("NCCL_PILOT_TOPO", "0", 1);
  setenv("NCCL_PILOT_TRANSPORT", "socket", 1);
  int pipeFds[2];
  ASSERT_EQ(pipe(pipeFds), 0);
  std::fflush(stdout);
  // Both ranks are forked, so each dlopens a fresh module and this test process stays clean.
  pid_t sender = fork();
  if (sender == 0) {
    close(pipeFds[1]);
    _exit(sendingRank(version, pipeFds[0]));
  }
  close(pipeFds[0]);
  pid_t receiver = fork();
  if (receiver == 0) {
    receivingRank(version, pipeFds[1]);
    std::fflush(stdout);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  close(pipeFds[1]);
  int status = 0;
  ASSERT_EQ(waitpid(receiver, &status, 0), receiver);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "receiving rank failed";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) kill(sender, SIGKILL);
  ASSERT_EQ(waitpid(sender, &status, 0), sender);
  EXPECT_TRUE(WIFEXITED(status)) << "sending rank killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "sending rank failed at step " << WEXITSTATUS(status);
}

INSTANTIATE_TEST_SUITE_P(Versions, PluginEndToEnd, ::testing::Values(6, 7, 8, 9, 10, 11, 12),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return "v" + std::to_string(p.param);
                         });

}  // namespace
}  // namespace plughost
