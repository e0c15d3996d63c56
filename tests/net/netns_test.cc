// Fault tests across two network namespaces this test creates (ip netns + a veth pair, with
// 10.99.0.1/24 and 10.99.0.2/24 inside them and nowhere else): tc netem delay/loss/reorder,
// random loss from nftables, and a partition (every packet dropped, or the link cut). Each end
// is pilot_net_peer in its own process under `ip netns exec`. Skipped with a message where the
// machine forbids namespaces; the netem and nftables cases skip alone where the kernel lacks
// sch_netem or the nft tool is missing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "net_test_support.h"

namespace nettest {
namespace {

int sh(const std::string& command) {
  int status = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class NetnsFault : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string id = std::to_string(getpid());
    nsA_ = "pilotnetA" + id;
    nsB_ = "pilotnetB" + id;
    vethA_ = "pnA" + id;
    vethB_ = "pnB" + id;
    char dir[] = "/tmp/pilot-netns-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    if (sh("ip netns add " + nsA_) != 0) {
      GTEST_SKIP() << "`ip netns add` failed (no permission to create network namespaces "
                      "here: run as root or with CAP_SYS_ADMIN); netns fault tests skipped";
    }
    created_ = true;
    ASSERT_EQ(sh("ip netns add " + nsB_), 0);
    ASSERT_EQ(sh("ip link add " + vethA_ + " netns " + nsA_ + " type veth peer name " + vethB_ +
                 " netns " + nsB_),
              0)
        << "cannot create a veth pair inside the namespaces";
    for (const auto& [ns, dev, ip] :
         {std::tuple{nsA_, vethA_, "10.99.0.1/24"}, std::tuple{nsB_, vethB_, "10.99.0.2/24"}}) {
      ASSERT_EQ(sh("ip -n " + ns + " addr add " + ip + " dev " + dev), 0);
      ASSERT_EQ(sh("ip -n " + ns + " link set " + dev + " up"), 0);
      ASSERT_EQ(sh("ip -n " + ns + " link set lo up"), 0);
    }
    // The kernel reports carrier on a new veth pair asynchronously (link watch, ~1 s); until
    // then the interface is not RUNNING and the transport rightly skips it.
    for (const auto& [ns, dev] : {std::pair{nsA_, vethA_}, std::pair{nsB_, vethB_}}) {
      const int64_t deadline = monotonicMs() + 10000;
      while (sh("ip netns exec " + ns + " grep -qx up /sys/class/net/" + dev + "/operstate") != 0) {
        ASSERT_LT(monotonicMs(), deadline) << dev << " has no carrier";
        usleep(20000);
      }
    }
  }

  /// tc netem on both veth ends; false where the kernel has no sch_netem.
  bool addNetem(const std::string& spec) {
    for (const auto& [ns, dev] : {std::pair{nsA_, vethA_}, std::pair{nsB_, vethB_}}) {
      if (sh("ip netns exec " + ns + " tc qdisc add dev " + dev + " root netem " + spec) != 0) {
        return false;
      }
    }
    return true;
  }

  /// An nftables rule in both namespaces dropping `percent` of outgoing TCP packets (100 = a
  /// black hole); false without the nft tool.
  bool nftDrop(int percent) {
    for (const std::string& ns : {nsA_, nsB_}) {
      const std::string nft = "ip netns exec " + ns + " nft ";
      if (sh(nft + "add table inet pilot") != 0 ||
          sh(nft + "'add chain inet pilot out { type filter hook output priority 0; }'") != 0 ||
          sh(nft + "add rule inet pilot out meta l4proto tcp numgen random mod 100 \\< " +
             std::to_string(percent) + " drop") != 0) {
        return false;
      }
    }
    return true;
  }

  /// Both peers with `count` messages of up to `size`; both must verify everything in time.
  void expectExactTransfer(uint64_t count, const std::string& size, int seconds) {
    pid_t recv = spawnPeer(nsB_, vethB_, "recv", count, size, 30000);
    pid_t send = spawnPeer(nsA_, vethA_, "send", count, size, 30000);
    const int64_t deadline = monotonicMs() + seconds * 1000;
    const int sendCode = waitPeer(send, deadline);
    const int recvCode = waitPeer(recv, deadline);
    EXPECT_EQ(sendCode, 0) << "(-1 = hung)\n" << slurp(dir_ + "/send.log");
    EXPECT_EQ(recvCode, 0) << "(-1 = hung)\n" << slurp(dir_ + "/recv.log");
    EXPECT_NE(slurp(dir_ + "/recv.log").find("all verified"), std::string::npos);
  }

  void TearDown() override {
    for (pid_t pid : children_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (created_) {
      // Deleting the namespaces deletes the veth pair with them.
      sh("ip netns del " + nsA_);
      sh("ip netns del " + nsB_);
    }
    sh("rm -rf " + dir_);
  }

  /// pilot_net_peer in namespace `ns`, output to DIR/<name>.log.
  pid_t spawnPeer(const std::string& ns, const std::string& ifname, const std::string& mode,
                  uint64_t count, const std::string& size, int timeoutMs) {
    const std::string log = dir_ + "/" + mode + ".log";
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      setenv("NCCL_SOCKET_IFNAME", ("=" + ifname).c_str(), 1);
      setenv("NCCL_PILOT_SOCKET_TIMEOUT_MS", std::to_string(timeoutMs).c_str(), 1);
      const std::string countText = std::to_string(count), handle = dir_ + "/handle";
      execlp("ip", "ip", "netns", "exec", ns.c_str(), PILOT_NET_PEER, mode.c_str(), handle.c_str(),
             countText.c_str(), size.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    children_.push_back(pid);
    return pid;
  }

  /// body() in a forked child inside namespace `ns`, with a transport of its own on `ifname`
  /// (NCCL_PILOT_SOCKET_TIMEOUT_MS = timeoutMs); its exit code is body()'s.
  pid_t forkInNamespace(const std::string& ns, const std::string& ifname, int timeoutMs,
                        const std::function<int(Transport&)>& body) {
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid != 0) {
      children_.push_back(pid);
      return pid;
    }
    const int fd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(120);
    NullLogger log;
    auto t =
        makeSocketTransport(mapEnv({{"NCCL_SOCKET_IFNAME", "=" + ifname},
                                    {"NCCL_PILOT_SOCKET_TIMEOUT_MS", std::to_string(timeoutMs)}}),
                            log);
    if (!t.ok() || (*t)->deviceCount() != 1) _exit(121);
    _exit(body(**t));
  }

  /// Exit code, or -1 (and the process killed) past the deadline.
  int waitPeer(pid_t pid, int64_t deadline) {
    for (;;) {
      int status = 0;
      pid_t got = waitpid(pid, &status, WNOHANG);
      if (got == pid) {
        children_.erase(std::find(children_.begin(), children_.end(), pid));
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (monotonicMs() > deadline) {
        kill(pid, SIGKILL);
        return -1;
      }
      usleep(20000);
    }
  }

  std::string nsA_, nsB_, vethA_, vethB_, dir_;
  bool created_ = false;
  std::vector<pid_t> children_;
};

TEST_F(NetnsFault, PlainVethTransferIsExact) {
  expectExactTransfer(200, "4M", 120);
}

TEST_F(NetnsFault, DelayLossAndReorderKeepEveryByte) {
  if (!addNetem("delay 5ms loss 1% reorder 10%")) {
    GTEST_SKIP() << "`tc qdisc add ... netem` failed: this kernel has no sch_netem "
                    "(CONFIG_NET_SCH_NETEM); the nftables-loss and partition tests still run";
  }
  // 60 messages cycling 1 MiB, 1/3 MiB, 0, 1 and 8 KiB + 1 bytes.
  expectExactTransfer(60, "1M", 180);
}

TEST_F(NetnsFault, RandomLossKeepsEveryByte) {
  if (!nftDrop(2)) GTEST_SKIP() << "no `nft` tool (nftables) to drop packets with";
  expectExactTransfer(60, "1M", 180);
}

TEST_F(NetnsFault, APartitionIsAnErrorWithinTheTimeout) {
  constexpr int kTimeoutMs = 3000;
  // Far more than can cross before the cut.
  pid_t recv = spawnPeer(nsB_, vethB_, "recv", 100000, "4M", kTimeoutMs);
  pid_t send = spawnPeer(nsA_, vethA_, "send", 100000, "4M", kTimeoutMs);
  // Let the connection carry data, then cut it.
  const int64_t start = monotonicMs();
  while (monotonicMs() - start < 10000 && slurp(dir_ + "/handle").empty()) usleep(20000);
  usleep(1500000);
  // nftables drops everything (both ends stay up, like a host that died: no FIN, no reset);
  // without nft the link goes down under the sender instead.
  if (!nftDrop(100)) {
    ASSERT_EQ(sh("ip -n " + nsA_ + " link set " + vethA_ + " down"), 0);
  }
  const int64_t cut = monotonicMs();
  // Keepalive and the user timeout are whole seconds in the kernel: allow some slack.
  const int64_t deadline = cut + kTimeoutMs + 8000;
  const int sendCode = waitPeer(send, deadline);
  const int recvCode = waitPeer(recv, deadline);
  EXPECT_EQ(sendCode, 2) << "(-1 = hung)\n" << slurp(dir_ + "/send.log");
  EXPECT_EQ(recvCode, 2) << "(-1 = hung)\n" << slurp(dir_ + "/recv.log");
  EXPECT_NE(slurp(dir_ + "/send.log").find("10.99.0.2"), std::string::npos)
      << "the error names the peer:\n"
      << slurp(dir_ + "/send.log");
  std::printf("partition noticed after %lld ms\n", static_cast<long long>(monotonicMs() - cut));
}

TEST_F(NetnsFault, DataWrittenAfterTheFarEndsLinkWentDownFailsWithinTheTimeout) {
  // The far end's interface goes down, so this end's veth loses its carrier (as a cable pulled
  // at the switch): data this side writes afterwards is retransmitted into nothing. The kernel's
  // TCP_USER_TIMEOUT let such connections live up to 1.8 s past a 3 s timeout (the soak,
  // tests/soak, found it); the transport must still fail within the timeout.
  constexpr int kTimeoutMs = 3000;
  int handle[2], ready[2], cut[2], report[2];
  ASSERT_EQ(pipe(handle), 0);
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(cut), 0);
  ASSERT_EQ(pipe(report), 0);
  // B receives one message, then waits on a second one until its comm fails.
  forkInNamespace(nsB_, vethB_, kTimeoutMs, [&](Transport& t) {
    unsigned char h[kHandleBytes];
    auto listen = t.listen(0, h);
    if (!listen.ok() || write(handle[1], h, sizeof(h)) != static_cast<ssize_t>(sizeof(h))) return 1;
    RecvComm* comm = nullptr;
    while (comm == nullptr) {
      auto c = t.accept(*listen);
      if (!c.ok()) return 2;
      comm = *c;
    }
    std::vector<uint8_t> buffer(1 << 20);
    for (;;) {
      void* data[1] = {buffer.data()};
      size_t sizes[1] = {buffer.size()};
      int tags[1] = {0};
      auto r = t.irecv(comm, 1, data, sizes, tags, nullptr);
      if (!r.ok() || *r == nullptr) return 3;
      TestResult res;
      while (!res.done) {
        if (!t.test(*r, &res).ok()) return 0;  // the end it waits for
      }
    }
  });
  // A sends one message, and after the cut one more, then waits for a CTS record that cannot
  // come (as NCCL's proxy retries isend): it reports how long after that write its comm failed.
  forkInNamespace(nsA_, vethA_, kTimeoutMs, [&](Transport& t) {
    unsigned char h[kHandleBytes];
    if (read(handle[0], h, sizeof(h)) != static_cast<ssize_t>(sizeof(h))) return 1;
    SendComm* comm = nullptr;
    while (comm == nullptr) {
      auto c = t.connect(0, h, {});
      if (!c.ok()) return 2;
      comm = *c;
    }
    std::vector<uint8_t> small(16 << 10, 1), large(1 << 20, 2);
    auto sendAll = [&](const std::vector<uint8_t>& m) {
      Request* r = nullptr;
      while (r == nullptr) {
        auto p = t.isend(comm, m.data(), m.size(), 0, nullptr);
        if (!p.ok()) return false;
        r = *p;
      }
      TestResult res;
      while (!res.done) {
        if (!t.test(r, &res).ok()) return false;
      }
      return true;
    };
    char byte = 0;
    if (!sendAll(small) || write(ready[1], "r", 1) != 1 || read(cut[0], &byte, 1) != 1) return 3;
    usleep(300000);
    if (!sendAll(small)) return 4;  // eager: done once the kernel has it
    const int64_t written = monotonicMs();
    std::string error;
    while (error.empty() && monotonicMs() - written < 4 * kTimeoutMs) {
      auto p = t.isend(comm, large.data(), large.size(), 0, nullptr);
      if (!p.ok()) error = p.error();
      if (p.ok() && *p != nullptr) return 5;  // a CTS record through a link that is down
      usleep(1000);
    }
    const std::string line = std::to_string(monotonicMs() - written) + " " + error + "\n";
    return write(report[1], line.data(), line.size()) > 0 ? 0 : 6;
  });
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "the first message did not go through";
  ASSERT_EQ(sh("ip -n " + nsB_ + " link set " + vethB_ + " down"), 0);
  ASSERT_EQ(write(cut[1], "c", 1), 1);
  char line[512] = {};
  ASSERT_GT(read(report[0], line, sizeof(line) - 1), 0) << "the sender reported nothing";
  const long failedAfter = std::strtol(line, nullptr, 10);
  std::printf("the sender failed %ld ms after its write: %s", failedAfter, std::strchr(line, ' '));
  EXPECT_LE(failedAfter, kTimeoutMs + 500) << line;
  EXPECT_NE(std::string(line).find("10.99.0.2"), std::string::npos) << "the error names the peer";
  for (int fd : {handle[0], handle[1], ready[0], ready[1], cut[0], cut[1], report[0], report[1]}) {
    close(fd);
  }
}

}  // namespace
}  // namespace nettest
