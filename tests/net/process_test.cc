// Two processes over loopback, as two ranks would be: a forked child owns one end. A transfer
// across processes, and a peer killed (SIGKILL) mid-transfer, which must surface as an error
// within the configured bound on the survivor, never a hang.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "net_test_support.h"

namespace nettest {
namespace {

/// The child side: its own transport, connect with a copy of the handle, then `body`.
template <typename Body>
pid_t forkSender(const unsigned char* handle, const std::map<std::string, std::string>& env,
                 Body body) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid != 0) return pid;
  NullLogger log;
  auto t = makeSocketTransport(loopbackEnv(env), log);
  if (!t.ok()) _exit(10);
  unsigned char copy[kHandleBytes];
  std::memcpy(copy, handle, kHandleBytes);
  SendComm* send = nullptr;
  const int64_t deadline = monotonicMs() + 10000;
  while (send == nullptr && monotonicMs() < deadline) {
    auto s = (*t)->connect(0, copy, {});
    if (!s.ok()) _exit(11);
    send = *s;
  }
  if (send == nullptr) _exit(12);
  _exit(body(**t, send));
}

RecvComm* acceptFrom(Transport& t, ListenComm* listen) {
  const int64_t deadline = monotonicMs() + 10000;
  while (monotonicMs() < deadline) {
    auto r = t.accept(listen);
    if (!r.ok()) return nullptr;
    if (*r != nullptr) return *r;
  }
  return nullptr;
}

int waitChild(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(Processes, TransferAcrossTwoProcesses) {
  RecordingLogger log;
  auto t = loopbackTransport(log);
  ASSERT_NE(t, nullptr);
  unsigned char handle[kHandleBytes];
  auto listen = t->listen(0, handle);
  ASSERT_TRUE(listen.ok());
  const std::vector<size_t> sizes = {0, 1, 4096, 65536, 1 << 20, 16 << 20, 100 << 20};
  pid_t child = forkSender(handle, {}, [&](Transport& ct, SendComm* send) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<uint8_t> out(sizes[i]);
      fillPattern(out.data(), out.size(), 1000 + i);
      Request* r = nullptr;
      while (r == nullptr) {
        auto p = ct.isend(send, out.data(), out.size(), 5, nullptr);
        if (!p.ok()) return 20;
        r = *p;
      }
      TestResult res;
      while (!res.done) {
        if (!ct.test(r, &res).ok()) return 21;
      }
    }
    ct.closeSend(send);
    return 0;
  });
  RecvComm* recv = acceptFrom(*t, *listen);
  t->closeListen(*listen);
  ASSERT_NE(recv, nullptr);
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<uint8_t> in(sizes[i] + 64);
    void* data[1] = {in.data()};
    size_t capacity[1] = {in.size()};
    int tags[1] = {5};
    Request* r = postRecv(*t, recv, 1, data, capacity, tags);
    ASSERT_NE(r, nullptr);
    std::string error;
    TestResult res = waitDone(*t, r, 60000, &error);
    ASSERT_TRUE(res.done) << error;
    EXPECT_EQ(res.sizes[0], sizes[i]);
    EXPECT_EQ(firstMismatch(in.data(), sizes[i], 1000 + i), SIZE_MAX) << "size " << sizes[i];
  }
  t->closeRecv(recv);
  EXPECT_EQ(waitChild(child), 0);
}

TEST(Processes, PeerKilledMidTransferIsAnErrorWithinTheBound) {
  constexpr int kTimeoutMs = 2000;
  RecordingLogger log;
  auto t = loopbackTransport(log, {{"NCCL_PILOT_SOCKET_TIMEOUT_MS", std::to_string(kTimeoutMs)}});
  ASSERT_NE(t, nullptr);
  unsigned char handle[kHandleBytes];
  auto listen = t->listen(0, handle);
  ASSERT_TRUE(listen.ok());
  // The kill must land mid-message however fast or loaded the machine: the sender says on a
  // pipe when its isend is accepted (this side then stops reading), makes one test() call, which
  // can hand the kernel only what the socket buffers take (a few MiB of the 256) while nobody
  // reads, says so again, and stops.
  int started[2];
  ASSERT_EQ(pipe(started), 0);
  pid_t child = forkSender(handle, {{"NCCL_PILOT_SOCKET_TIMEOUT_MS", "2000"}},
                           [&](Transport& ct, SendComm* send) {
                             close(started[0]);
                             std::vector<uint8_t> out(256 << 20, 7);
                             Request* r = nullptr;
                             while (r == nullptr) {
                               auto p = ct.isend(send, out.data(), out.size(), 0, nullptr);
                               if (!p.ok()) return 30;
                               r = *p;
                             }
                             if (write(started[1], "a", 1) != 1) return 31;
                             TestResult res;
                             if (!ct.test(r, &res).ok()) return 32;
                             if (res.done) return 33;  // 256 MiB into the kernel in one call
                             if (write(started[1], "b", 1) != 1) return 34;
                             for (;;) pause();  // until the parent's SIGKILL
                           });
  close(started[1]);
  RecvComm* recv = acceptFrom(*t, *listen);
  t->closeListen(*listen);
  ASSERT_NE(recv, nullptr);
  std::vector<uint8_t> in(256 << 20);
  void* data[1] = {in.data()};
  size_t capacity[1] = {in.size()};
  int tags[1] = {0};
  Request* r = postRecv(*t, recv, 1, data, capacity, tags);
  ASSERT_NE(r, nullptr);
  // The sender's isend waits for this side's CTS record, which this side's test() writes.
  TestResult res;
  pollfd ready{started[0], POLLIN, 0};
  const int64_t deadline = monotonicMs() + 10000;
  while (::poll(&ready, 1, 0) == 0 && monotonicMs() < deadline) {
    ASSERT_TRUE(t->test(r, &res).ok());
  }
  char step = 0;
  ASSERT_EQ(read(started[0], &step, 1), 1) << "the sender's isend was never accepted";
  ASSERT_EQ(step, 'a');
  ASSERT_EQ(read(started[0], &step, 1), 1) << "the sender's first test() failed";
  ASSERT_EQ(step, 'b');
  close(started[0]);
  // Take what the kernel holds of the part that was written; the rest never comes.
  for (int i = 0; i < 200 && !res.done; ++i) ASSERT_TRUE(t->test(r, &res).ok());
  ASSERT_FALSE(res.done) << "the whole 256 MiB arrived though the sender wrote it once";
  kill(child, SIGKILL);
  EXPECT_EQ(waitChild(child), 128 + SIGKILL);
  const int64_t killed = monotonicMs();
  std::string error;
  res = waitDone(*t, r, 3 * kTimeoutMs, &error);
  EXPECT_FALSE(res.done);
  EXPECT_FALSE(error.empty());
  EXPECT_LE(monotonicMs() - killed, kTimeoutMs) << error;
  EXPECT_NE(error.find("127.0.0.1"), std::string::npos) << error;
  t->closeRecv(recv);
}

TEST(Processes, ReceiverKilledFailsTheSenderWithinTheBound) {
  constexpr int kTimeoutMs = 2000;
  RecordingLogger log;
  auto t = loopbackTransport(log, {{"NCCL_PILOT_SOCKET_TIMEOUT_MS", std::to_string(kTimeoutMs)}});
  ASSERT_NE(t, nullptr);
  unsigned char handle[kHandleBytes];
  auto listen = t->listen(0, handle);
  ASSERT_TRUE(listen.ok());
  // Here the child receives: it accepts, posts one huge receive, tests it once and then stops.
  std::fflush(stdout);
  int posted[2];
  ASSERT_EQ(pipe(posted), 0);
  pid_t child = fork();
  if (child == 0) {
    RecvComm* recv = acceptFrom(*t, *listen);
    if (recv == nullptr) _exit(40);
    static std::vector<uint8_t> in(256 << 20);
    void* data[1] = {in.data()};
    size_t capacity[1] = {in.size()};
    int tags[1] = {0};
    auto r = t->irecv(recv, 1, data, capacity, tags, nullptr);
    if (!r.ok() || *r == nullptr) _exit(41);
    TestResult once;  // NCCL's proxy tests right after posting: that writes the CTS record
    if (!t->test(*r, &once).ok()) _exit(42);
    (void)!write(posted[1], "x", 1);
    pause();  // alive, reading nothing, until killed
    _exit(0);
  }
  close(posted[1]);
  SendComm* send = nullptr;
  while (send == nullptr) {
    auto s = t->connect(0, handle, {});
    ASSERT_TRUE(s.ok()) << s.error();
    send = *s;
  }
  char byte;
  ASSERT_EQ(read(posted[0], &byte, 1), 1);
  std::vector<uint8_t> out(256 << 20, 3);
  Request* s = postSend(*t, send, out.data(), out.size(), 0);
  ASSERT_NE(s, nullptr);
  TestResult res;
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(t->test(s, &res).ok());
  ASSERT_FALSE(res.done);
  kill(child, SIGKILL);
  waitChild(child);
  const int64_t killed = monotonicMs();
  std::string error;
  res = waitDone(*t, s, 3 * kTimeoutMs, &error);
  EXPECT_FALSE(res.done);
  EXPECT_FALSE(error.empty());
  EXPECT_LE(monotonicMs() - killed, kTimeoutMs) << error;
  t->closeSend(send);
  t->closeListen(*listen);
  close(posted[0]);
}

}  // namespace
}  // namespace nettest
