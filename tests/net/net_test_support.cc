#include "net_test_support.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "wire.h"

namespace nettest {

EnvLookup mapEnv(const std::map<std::string, std::string>& env) {
  return [env](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

EnvLookup loopbackEnv(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env = extra;
  env.emplace("NCCL_SOCKET_IFNAME", "lo");
  return mapEnv(env);
}

void RecordingLogger::write(LogLevel level, unsigned long, const char*, int,
                            const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  lines_.emplace_back(level, message);
}

std::vector<std::string> RecordingLogger::lines(LogLevel level) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [l, text] : lines_) {
    if (l == level) out.push_back(text);
  }
  return out;
}

int RecordingLogger::count(LogLevel level, const std::string& needle) const {
  int n = 0;
  for (const std::string& line : lines(level)) n += line.find(needle) != std::string::npos;
  return n;
}

std::string RecordingLogger::dump() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const auto& [level, text] : lines_) {
    out += std::to_string(static_cast<int>(level)) + " " + text + "\n";
  }
  return out;
}

std::unique_ptr<Transport> loopbackTransport(Logger& log,
                                             const std::map<std::string, std::string>& extra) {
  auto t = makeSocketTransport(loopbackEnv(extra), log);
  EXPECT_TRUE(t.ok()) << t.error();
  if (!t.ok()) return nullptr;
  EXPECT_EQ((*t)->deviceCount(), 1) << "loopback interface lo not found or not up";
  return std::move(*t);
}

Pair connectPair(Transport& t, int timeoutMs) {
  Pair p;
  unsigned char handle[kHandleBytes];
  auto listen = t.listen(0, handle);
  EXPECT_TRUE(listen.ok()) << listen.error();
  if (!listen.ok()) return p;
  const int64_t deadline = monotonicMs() + timeoutMs;
  while ((p.send == nullptr || p.recv == nullptr) && monotonicMs() < deadline) {
    if (p.send == nullptr) {
      auto s = t.connect(0, handle, {});
      EXPECT_TRUE(s.ok()) << s.error();
      if (!s.ok()) break;
      p.send = *s;
    }
    if (p.recv == nullptr) {
      auto r = t.accept(*listen);
      EXPECT_TRUE(r.ok()) << r.error();
      if (!r.ok()) break;
      p.recv = *r;
    }
  }
  t.closeListen(*listen);
  EXPECT_NE(p.send, nullptr);
  EXPECT_NE(p.recv, nullptr);
  return p;
}

void closePair(Transport& t, Pair& p) {
  if (p.send != nullptr) t.closeSend(p.send);
  if (p.recv != nullptr) t.closeRecv(p.recv);
  p = {};
}

Request* postSend(Transport& t, SendComm* c, const void* data, size_t size, int tag,
                  int timeoutMs) {
  const int64_t deadline = monotonicMs() + timeoutMs;
  while (monotonicMs() < deadline) {
    auto r = t.isend(c, data, size, tag, nullptr);
    EXPECT_TRUE(r.ok()) << r.error();
    if (!r.ok()) return nullptr;
    if (*r != nullptr) return *r;
  }
  ADD_FAILURE() << "isend not posted within " << timeoutMs << " ms";
  return nullptr;
}

Request* postRecv(Transport& t, RecvComm* c, int n, void* const* data, const size_t* sizes,
                  const int* tags, int timeoutMs) {
  const int64_t deadline = monotonicMs() + timeoutMs;
  while (monotonicMs() < deadline) {
    auto r = t.irecv(c, n, data, sizes, tags, nullptr);
    EXPECT_TRUE(r.ok()) << r.error();
    if (!r.ok()) return nullptr;
    if (*r != nullptr) return *r;
  }
  ADD_FAILURE() << "irecv not posted within " << timeoutMs << " ms";
  return nullptr;
}

void announce(Transport& t, Request* recv) {
  ASSERT_NE(recv, nullptr);
  TestResult result;
  ASSERT_TRUE(t.test(recv, &result).ok());
  ASSERT_FALSE(result.done) << "announce() is for a receive nothing was sent for yet";
}

TestResult waitDone(Transport& t, Request* r, int timeoutMs, std::string* error) {
  TestResult result;
  const int64_t deadline = monotonicMs() + timeoutMs;
  while (monotonicMs() < deadline) {
    Status s = t.test(r, &result);
    if (!s.ok()) {
      if (error != nullptr) *error = s.error();
      result.done = false;
      return result;
    }
    if (result.done) return result;
  }
  if (error != nullptr) *error = "not done within " + std::to_string(timeoutMs) + " ms";
  return result;
}

namespace {

inline uint64_t patternWord(uint64_t seed, uint64_t word) {
  uint64_t x = (seed ^ word) * 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}

/// Bytes [offset, offset + size) of the pattern; 8 at a time where aligned.
void patternAt(uint8_t* out, uint64_t offset, size_t size, uint64_t seed) {
  size_t i = 0;
  while (i < size && (offset + i) % 8 != 0) {
    const uint64_t at = offset + i;
    out[i++] = static_cast<uint8_t>(patternWord(seed, at >> 3) >> (8 * (at & 7)));
  }
  for (; i + 8 <= size; i += 8) {
    const uint64_t x = patternWord(seed, (offset + i) >> 3);
    __builtin_memcpy(out + i, &x, 8);  // little-endian: byte j is x >> 8j, as below
  }
  for (; i < size; ++i) {
    const uint64_t at = offset + i;
    out[i] = static_cast<uint8_t>(patternWord(seed, at >> 3) >> (8 * (at & 7)));
  }
}

}  // namespace

void fillPattern(uint8_t* data, size_t size, uint64_t seed) {
  patternAt(data, 0, size, seed);
}

size_t firstMismatch(const uint8_t* data, size_t size, uint64_t seed) {
  constexpr size_t kBlock = 1 << 16;
  std::vector<uint8_t> expect(kBlock);
  for (size_t off = 0; off < size; off += kBlock) {
    const size_t n = std::min(kBlock, size - off);
    patternAt(expect.data(), off, n, seed);
    if (std::memcmp(data + off, expect.data(), n) == 0) continue;
    for (size_t i = 0; i < n; ++i) {
      if (data[off + i] != expect[i]) return off + i;
    }
  }
  return SIZE_MAX;
}

int rawConnect(const unsigned char* handle) {
  wire::Handle h;
  if (!wire::decodeHandle(handle, &h) || h.family != AF_INET) return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
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

int openFdCount() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int n = 0;
  while (const dirent* e = readdir(dir)) n += e->d_name[0] != '.';
  closedir(dir);
  return n - 1;  // the directory stream's own fd
}

int64_t monotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace nettest
