#include "network_faults.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "net_test_support.h"
#include "pilot/net/socket.h"
#include "wire.h"

namespace soak {
namespace {

using namespace pilot;
using namespace pilot::net;

bool writeLine(int fd, const std::string& line) {
  const std::string text = line + "\n";
  return write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

}  // namespace

pid_t forkInNamespace(const std::string& ns, const std::function<int()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) _exit(125);  // the coordinator died before the line above
  const std::string path = "/run/netns/" + ns;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "soak: cannot enter network namespace %s: %s\n", ns.c_str(),
                 std::strerror(errno));
    _exit(126);
  }
  close(fd);
  _exit(body());
}

int runTool(const std::vector<std::string>& argv, std::string* output) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return -1;
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof(buffer))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (output != nullptr) output->append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool dropEverything(const std::string& ns, bool drop) {
  if (!drop)
    return runTool({"ip", "netns", "exec", ns, "nft", "delete table inet pilot_soak"}) == 0;
  return runTool({"ip", "netns", "exec", ns, "nft",
                  "add table inet pilot_soak; "
                  "add chain inet pilot_soak in { type filter hook input priority -100; "
                  "policy drop; }; "
                  "add chain inet pilot_soak out { type filter hook output priority -100; "
                  "policy drop; }"}) == 0;
}

bool setLink(const std::string& ns, const std::string& ifname, bool up) {
  return runTool({"ip", "-n", ns, "link", "set", ifname, up ? "up" : "down"}) == 0;
}

bool linkHasCarrier(const std::string& ns, const std::string& ifname) {
  std::string out;
  if (runTool({"ip", "-n", ns, "-o", "link", "show", "dev", ifname}, &out) != 0) return false;
  return out.find("LOWER_UP") != std::string::npos;
}

int floodListener(const unsigned char* handle, int count, int reportFd) {
  wire::Handle h;
  if (!wire::decodeHandle(handle, &h) || h.family != AF_INET) {
    writeLine(reportFd, "flood-fail not an IPv4 handle of this transport");
    return 1;
  }
  std::mt19937_64 rng(h.port);
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    int fd = nettest::rawConnect(handle);
    if (fd < 0) {
      writeLine(reportFd, "flood-fail connect: " + std::string(std::strerror(errno)));
      return 1;
    }
    fds.push_back(fd);
    uint8_t bytes[wire::Hello::kBytes + 64];
    size_t length = 0;
    switch (i % 4) {
      case 0:  // random bytes, shorter or longer than a hello
        length = 1 + rng() % sizeof(bytes);
        for (size_t j = 0; j < length; ++j) bytes[j] = static_cast<uint8_t>(rng());
        break;
      case 1:  // silent: holds a slot until the listener's timeout or its bound
        break;
      case 2:
      case 3: {
        wire::Hello hello;
        hello.streams = 0;
        hello.chunkBytes = 512 << 10;
        hello.secret = i % 4 == 3 ? h.secret ^ (uint64_t{1} << (rng() % 64)) : h.secret;
        hello.nonce = rng();
        wire::encodeHello(hello, bytes);
        if (i % 4 == 2) wire::put16(bytes + 4, wire::kVersion + 1);  // another version
        length = wire::Hello::kBytes;
        break;
      }
    }
    if (length > 0) (void)!send(fd, bytes, length, MSG_NOSIGNAL);
  }
  writeLine(reportFd, "flooding " + std::to_string(count));
  for (;;) pause();  // until the coordinator kills it; the kernel closes the sockets
}

int wrongSecretPeer(const unsigned char* handle, const std::map<std::string, std::string>& env,
                    int timeoutMs, int reportFd) {
  NullLogger log;
  auto transport = makeSocketTransport(nettest::mapEnv(env), log);
  wire::Handle h;
  if (!transport.ok() || (*transport)->deviceCount() < 1 || !wire::decodeHandle(handle, &h)) {
    writeLine(reportFd, "rogue-fail no transport or no handle");
    return 1;
  }
  Transport& t = **transport;
  h.secret ^= uint64_t{1} << 17;
  unsigned char stale[kHandleBytes] = {};
  wire::encodeHandle(h, stale);
  const int64_t deadline = nettest::monotonicMs() + timeoutMs + 1000;
  SendComm* comm = nullptr;
  while (comm == nullptr && nettest::monotonicMs() < deadline) {
    auto c = t.connect(0, stale, {});
    if (!c.ok()) {
      writeLine(reportFd, "rogue-fail connect: " + c.error());
      return 1;
    }
    comm = *c;
  }
  if (comm == nullptr) {
    writeLine(reportFd, "rogue-fail not connected in time");
    return 1;
  }
  // The hellos are written; the listener reads them, refuses the secret and closes. A message
  // above the eager limit waits for a CTS record that never comes: it must fail.
  const int64_t connected = nettest::monotonicMs();
  writeLine(reportFd, "rogue-connected");
  std::vector<uint8_t> message(1 << 20, 0x5a);
  std::string error;
  while (error.empty() && nettest::monotonicMs() < deadline) {
    auto r = t.isend(comm, message.data(), message.size(), 0, nullptr);
    if (!r.ok()) error = r.error();
    if (r.ok() && *r != nullptr) {
      writeLine(reportFd, "rogue-fail the listener took a send with the wrong secret");
      return 1;
    }
    if (error.empty()) usleep(1000);
  }
  const int64_t detect = nettest::monotonicMs() - connected;
  t.closeSend(comm);
  if (error.empty()) {
    writeLine(reportFd, "rogue-fail no error within " + std::to_string(timeoutMs + 1000) + " ms");
    return 1;
  }
  writeLine(reportFd, "rogue " + std::to_string(detect) + " " + error);
  return 0;
}

}  // namespace soak
