// Not a test: does MSG_ZEROCOPY pay for the TCP transport's large sends here? Two processes
// over loopback TCP move 4 GiB in 512 KiB sends (NCCL's Simple step), once with plain copying
// sends and once with SO_ZEROCOPY + MSG_ZEROCOPY (completions reaped from the error queue, 8
// sends in flight as NCCL keeps them), and print GB/s, the CPU time of both processes per GB,
// and how many completions report that the kernel copied after all
// (SO_EE_CODE_ZEROCOPY_COPIED). docs/performance.md, "TCP transport", has the figures.
// Usage: pilot_net_zerocopy_bench [ROUNDS]   (alternates the two, default 3 rounds)
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr size_t kMessage = 512 << 10;
constexpr size_t kTotal = size_t{4} << 30;
constexpr unsigned kInFlight = 8;

double cpuSeconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Completions {
  unsigned pending = 0;
  unsigned done = 0;
  unsigned copied = 0;
  /// Reads every zerocopy completion waiting on `fd`'s error queue.
  void reap(int fd) {
    char control[128];
    for (;;) {
      msghdr m{};
      m.msg_control = control;
      m.msg_controllen = sizeof(control);
      if (::recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;
      for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
        const auto* e = reinterpret_cast<const sock_extended_err*>(CMSG_DATA(c));
        if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
        const unsigned n = e->ee_data - e->ee_info + 1;
        done += n;
        pending -= n;
        if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) copied += n;
      }
    }
  }
};

int runOnce(bool zerocopy) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    std::perror("listen");
    return 1;
  }
  const double childrenBefore = cpuSeconds(RUSAGE_CHILDREN);  // earlier rounds' receivers
  const pid_t receiver = ::fork();
  if (receiver == 0) {
    const int fd = ::accept(listener, nullptr, nullptr);
    std::vector<char> sink(1 << 20);
    for (size_t got = 0; got < kTotal;) {
      const ssize_t n = ::recv(fd, sink.data(), sink.size(), 0);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    _exit(0);
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::perror("connect");
    return 1;
  }
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (zerocopy && ::setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) != 0) {
    std::perror("SO_ZEROCOPY");
    return 1;
  }
  std::vector<char> buffers(kMessage * kInFlight, 1);
  Completions zc;
  const auto start = std::chrono::steady_clock::now();
  const double cpuStart = cpuSeconds(RUSAGE_SELF);
  unsigned slot = 0;
  for (size_t sent = 0; sent < kTotal;) {
    if (zerocopy && zc.pending >= kInFlight) {  // a buffer is reused only once released
      zc.reap(fd);
      continue;
    }
    const ssize_t n =
        ::send(fd, buffers.data() + slot * kMessage, kMessage, zerocopy ? MSG_ZEROCOPY : 0);
    if (n < 0) {
      if (errno == ENOBUFS) continue;  // optmem for notifications exhausted: reap and retry
      std::perror("send");
      return 1;
    }
    if (zerocopy) ++zc.pending;
    sent += static_cast<size_t>(n);
    slot = (slot + 1) % kInFlight;
  }
  while (zerocopy && zc.pending > 0) zc.reap(fd);
  ::close(fd);
  int status = 0;
  ::waitpid(receiver, &status, 0);
  ::close(listener);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu =
      cpuSeconds(RUSAGE_SELF) - cpuStart + cpuSeconds(RUSAGE_CHILDREN) - childrenBefore;
  std::printf("%-12s %6.2f GB/s  %6.3f s CPU per GB (both processes)",
              zerocopy ? "MSG_ZEROCOPY" : "copy", static_cast<double>(kTotal) / seconds / 1e9,
              cpu / (static_cast<double>(kTotal) / 1e9));
  if (zerocopy) std::printf("  %u of %u completions: the kernel copied", zc.copied, zc.done);
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  for (int r = 0; r < rounds; ++r) {
    if (runOnce(false) != 0 || runOnce(true) != 0) return 1;
  }
  return 0;
}
