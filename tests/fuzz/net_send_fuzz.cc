// libFuzzer target: a peer that knows the secret and answers a send comm with arbitrary bytes
// where its CTS records (the receives it posted) belong. The input configures a real send comm
// (data streams, eager limit, chunk size) and a script of isends (sizes, tags); the rest is
// what the peer wrote on the control socket (a socketpair). The comm is driven until the
// script ran, the comm failed, or nothing moves; what it writes is drained and dropped.
//  1. no crash, no read or write outside a buffer (ASan, UBSan);
//  2. a send above the eager limit is only posted once a record named a buffer with its tag;
//  3. once the comm failed, every later call fails too (the latch holds).
// Any violation aborts with the details on stderr.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "socket_comm.h"

using namespace pilot;
using namespace pilot::net;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "net_send_fuzz: %s\n", what.c_str());
  std::abort();
}

bool socketPair(Fd* ours, int* peer) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return false;
  *ours = Fd(fds[0]);
  *peer = fds[1];
  return true;
}

void drain(int peer) {
  static uint8_t sink[1 << 16];
  while (::recv(peer, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
  }
}

/// The tags the CTS bytes can name (record n at most kMaxRecvs; a rough read is enough: the
/// check below only needs "some record named this tag").
bool recordsName(const uint8_t* bytes, size_t size, int32_t tag) {
  for (size_t at = 0; at + wire::Cts::kHeadBytes <= size;) {
    wire::Cts cts;
    if (!wire::decodeCtsHead(bytes + at, &cts) || cts.n < 1 || cts.n > kMaxRecvs) return false;
    if (at + wire::Cts::kHeadBytes + cts.n * wire::Cts::kEntryBytes > size) return false;
    for (int i = 0; i < cts.n; ++i) {
      wire::decodeCtsEntry(bytes + at + wire::Cts::kHeadBytes + i * wire::Cts::kEntryBytes, i,
                           &cts);
      if (cts.tags[i] == tag) return true;
    }
    at += wire::Cts::kHeadBytes + cts.n * wire::Cts::kEntryBytes;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  static const uint64_t kEager[] = {0, 4096, wire::kMaxEager};
  static const uint64_t kChunk[] = {wire::kMinChunk, 128 << 10, 512 << 10};
  static const size_t kSizes[] = {0, 16, 4096, 70000, 600000};
  static std::vector<uint8_t> payload(600000, 0x5a);
  Connection c;
  c.streams = data[0] % 3;
  c.eagerBytes = kEager[data[1] % 3];
  c.chunkBytes = kChunk[data[2] % 3];
  c.peer = "fuzz";
  const int sends = 1 + data[3] % 8;
  if (size < 4 + static_cast<size_t>(sends)) return 0;
  const uint8_t* script = data + 4;
  const uint8_t* cts = script + sends;
  const size_t ctsBytes = size - 4 - static_cast<size_t>(sends);

  const int streams = c.streams;
  int peers[1 + wire::kMaxStreams];
  if (!socketPair(&c.control, &peers[0])) return 0;
  for (int s = 0; s < streams; ++s) {
    if (!socketPair(&c.data[s], &peers[1 + s])) die("socketpair");
  }
  const uint64_t eager = c.eagerBytes;
  auto comm = std::make_unique<SocketSendComm>(std::move(c), nullLogger());
  // The peer's bytes arrive all at once (a socketpair holds far more than an input).
  for (size_t at = 0; at < ctsBytes;) {
    const ssize_t n = ::send(peers[0], cts + at, ctsBytes - at, MSG_NOSIGNAL);
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }

  bool failed = false;
  std::vector<Request*> inFlight;
  for (int i = 0; i < sends && !failed; ++i) {
    const size_t bytes = kSizes[script[i] % 5];
    const int32_t tag = (script[i] >> 4) % 3;
    Request* request = nullptr;
    for (int attempt = 0; attempt < 8 && request == nullptr; ++attempt) {
      auto r = comm->isend(payload.data(), bytes, tag);
      if (!r.ok()) {
        failed = true;
        break;
      }
      request = *r;
      for (int s = 0; s <= streams; ++s) drain(peers[s]);
    }
    if (request == nullptr) continue;
    if ((eager == 0 || bytes > eager) && !recordsName(cts, ctsBytes, tag)) {
      die("a " + std::to_string(bytes) + "-byte send with tag " + std::to_string(tag) +
          " went out before any record named a buffer with that tag");
    }
    inFlight.push_back(request);
  }
  for (int round = 0; round < 64 && !failed && !inFlight.empty(); ++round) {
    TestResult result;
    Status s = comm->test(static_cast<SocketRequest*>(inFlight.front()), &result);
    if (!s.ok()) {
      failed = true;
      break;
    }
    if (result.done) inFlight.erase(inFlight.begin());
    for (int p = 0; p <= streams; ++p) drain(peers[p]);
  }
  if (failed && comm->isend(payload.data(), 1, 0).ok()) die("a failed comm took another send");
  comm.reset();  // closes with whatever is still in flight
  for (int s = 0; s <= streams; ++s) ::close(peers[s]);
  return 0;
}
