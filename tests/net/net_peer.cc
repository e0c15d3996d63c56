// One end of a transfer in its own process, for the network-namespace tests (run under
// `ip netns exec`). Settings come from the real environment (NCCL_SOCKET_IFNAME, ...), the
// handle travels through a file.
//
//   pilot_net_peer recv HANDLE_FILE COUNT SIZE     listen, write the handle, receive and check
//   pilot_net_peer send HANDLE_FILE COUNT SIZE     wait for the handle, connect, send
//
// Messages carry pattern i; sizes cycle through SIZE, SIZE/3, 0, 1, 8 KiB + 1. Exit codes:
// 0 all verified, 1 payload mismatch, 2 transport error (printed), 3 setup problem.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "net_test_support.h"
#include "pilot/core/text.h"

namespace {

using namespace nettest;

class StderrLogger final : public Logger {
 public:
  void write(LogLevel level, unsigned long, const char*, int, const std::string& m) override {
    if (level == LogLevel::Warn) std::fprintf(stderr, "peer: WARN %s\n", m.c_str());
  }
};

size_t sizeOf(uint64_t i, size_t size) {
  const size_t cycle[] = {size, size / 3, 0, 1, 8193};
  return cycle[i % 5];
}

/// Closes what is still open on every way out (error paths too: sanitizer builds check leaks).
struct Comms {
  Transport& t;
  ListenComm* listen = nullptr;
  SendComm* send = nullptr;
  RecvComm* recv = nullptr;
  ~Comms() {
    if (listen != nullptr) t.closeListen(listen);
    if (send != nullptr) t.closeSend(send);
    if (recv != nullptr) t.closeRecv(recv);
  }
};

int fail(int code, const std::string& what) {
  std::fprintf(stderr, "peer: %s\n", what.c_str());
  return code;
}

int receive(Transport& t, const std::string& file, uint64_t count, size_t size) {
  unsigned char handle[kHandleBytes];
  auto listen = t.listen(0, handle);
  if (!listen.ok()) return fail(3, listen.error());
  Comms comms{t};
  comms.listen = *listen;
  const std::string tmp = file + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, handle, sizeof(handle)) != static_cast<ssize_t>(sizeof(handle))) {
    return fail(3, "cannot write " + tmp);
  }
  close(fd);
  if (rename(tmp.c_str(), file.c_str()) != 0) return fail(3, "cannot rename " + tmp);
  RecvComm*& comm = comms.recv;
  while (comm == nullptr) {
    auto c = t.accept(*listen);
    if (!c.ok()) return fail(2, c.error());
    comm = *c;
  }
  t.closeListen(*listen);
  comms.listen = nullptr;
  std::vector<uint8_t> buffer(size + 64);
  uint64_t bytes = 0;
  const int64_t start = monotonicMs();
  for (uint64_t i = 0; i < count; ++i) {
    void* data[1] = {buffer.data()};
    size_t capacity[1] = {buffer.size()};
    int tags[1] = {static_cast<int>(i % 3)};
    Request* r = nullptr;
    while (r == nullptr) {
      auto p = t.irecv(comm, 1, data, capacity, tags, nullptr);
      if (!p.ok()) return fail(2, p.error());
      r = *p;
    }
    TestResult res;
    while (!res.done) {
      Status s = t.test(r, &res);
      if (!s.ok()) return fail(2, s.error());
    }
    if (res.sizes[0] != sizeOf(i, size)) return fail(1, "message " + std::to_string(i) + ": size");
    if (firstMismatch(buffer.data(), res.sizes[0], i) != SIZE_MAX) {
      return fail(1, "message " + std::to_string(i) + ": payload differs");
    }
    bytes += res.sizes[0];
  }
  const double seconds = std::max<int64_t>(1, monotonicMs() - start) / 1000.0;
  std::printf("peer: received %llu messages, all verified (%.3f GB/s)\n",
              static_cast<unsigned long long>(count), static_cast<double>(bytes) / seconds / 1e9);
  return 0;
}

int sendAll(Transport& t, const std::string& file, uint64_t count, size_t size) {
  unsigned char handle[kHandleBytes];
  for (int tries = 0;; ++tries) {
    int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = read(fd, handle, sizeof(handle));
      close(fd);
      if (n == static_cast<ssize_t>(sizeof(handle))) break;
    }
    if (tries > 3000) return fail(3, "no handle in " + file);
    usleep(10000);
  }
  Comms comms{t};
  SendComm*& comm = comms.send;
  while (comm == nullptr) {
    auto c = t.connect(0, handle, {});
    if (!c.ok()) return fail(2, c.error());
    comm = *c;
  }
  std::vector<uint8_t> buffer(size);
  for (uint64_t i = 0; i < count; ++i) {
    fillPattern(buffer.data(), sizeOf(i, size), i);
    Request* r = nullptr;
    while (r == nullptr) {
      auto p = t.isend(comm, buffer.data(), sizeOf(i, size), static_cast<int>(i % 3), nullptr);
      if (!p.ok()) return fail(2, p.error());
      r = *p;
    }
    TestResult res;
    while (!res.done) {
      Status s = t.test(r, &res);
      if (!s.ok()) return fail(2, s.error());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) return fail(3, "usage: pilot_net_peer recv|send HANDLE_FILE COUNT SIZE");
  const std::string mode = argv[1];
  auto count = pilot::text::parseUnsigned(argv[3]);
  auto size = pilot::text::parseBytes(argv[4]);
  if (!count || !size) return fail(3, "bad COUNT or SIZE");
  StderrLogger log;
  auto t = makeSocketTransport(pilot::processEnv(), log);
  if (!t.ok()) return fail(3, t.error());
  if ((*t)->deviceCount() < 1) return fail(3, "no usable interface (NCCL_SOCKET_IFNAME?)");
  if (mode == "recv") return receive(**t, argv[2], *count, *size);
  if (mode == "send") return sendAll(**t, argv[2], *count, *size);
  return fail(3, "mode must be recv or send");
}
