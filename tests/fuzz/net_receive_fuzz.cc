// libFuzzer target: a peer that knows the secret and then writes arbitrary bytes. The input
// configures a real receive comm (data streams, eager limit, chunk size), the receives posted
// before and one posted after the bytes arrived, and its remaining bytes are what the peer
// wrote on the control socket and each data stream (socketpairs). The comm is then driven as NCCL
// drives it until it fails or stops moving. Every buffer is its own heap block of exactly the
// posted size, so ASan catches any byte placed outside one; on top of that:
//  1. a receive reports done only after every older one (requests complete in posting order);
//  2. a done receive reports n sizes, each at most its buffer's capacity;
//  3. once the comm failed, every later call fails too (the latch holds).
// Any violation aborts with the details on stderr.
#include <fcntl.h>
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
  std::fprintf(stderr, "net_receive_fuzz: %s\n", what.c_str());
  std::abort();
}

/// Reads the input front to back; past the end everything is 0.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  const uint8_t* rest() const { return data_ + at_; }
  size_t left() const { return size_ - at_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

struct Posted {
  Request* request = nullptr;
  int n = 0;
  std::vector<std::vector<uint8_t>> buffers;
};

/// `ours` stays with the comm; the peer end gets the fuzz bytes, then its write side shut.
bool socketPair(Fd* ours, int* peer) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return false;
  *ours = Fd(fds[0]);
  *peer = fds[1];
  return true;
}

void feed(int peer, const uint8_t* bytes, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(peer, bytes, size, MSG_NOSIGNAL);
    if (n <= 0) break;  // the socketpair holds far more than an input
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  ::shutdown(peer, SHUT_WR);
}

Posted post(SocketRecvComm& comm, Input& in) {
  static const size_t kCapacities[] = {0, 16, 4096, 70000, 600000};
  Posted p;
  p.n = 1 + in.byte() % 3;
  void* data[kMaxRecvs];
  size_t sizes[kMaxRecvs];
  int tags[kMaxRecvs];
  p.buffers.resize(static_cast<size_t>(p.n));
  for (int i = 0; i < p.n; ++i) {
    const uint8_t b = in.byte();
    p.buffers[i].resize(kCapacities[b % 5]);
    data[i] = p.buffers[i].empty() ? nullptr : p.buffers[i].data();
    sizes[i] = p.buffers[i].size();
    tags[i] = (b >> 4) % 3;
  }
  auto r = comm.irecv(p.n, data, sizes, tags);
  p.request = r.ok() ? *r : nullptr;
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  Connection c;
  c.streams = in.byte() % 3;
  static const uint64_t kEager[] = {0, 4096, wire::kMaxEager};
  static const uint64_t kChunk[] = {wire::kMinChunk, 128 << 10, 512 << 10};
  c.eagerBytes = kEager[in.byte() % 3];
  c.chunkBytes = kChunk[in.byte() % 3];
  c.peer = "fuzz";
  const int groups = 1 + in.byte() % 4;
  const size_t controlBytes = in.byte() * 16;

  int peers[1 + wire::kMaxStreams];
  if (!socketPair(&c.control, &peers[0])) return 0;
  for (int s = 0; s < c.streams; ++s) {
    if (!socketPair(&c.data[s], &peers[1 + s])) die("socketpair");
  }
  const int streams = c.streams;
  auto comm = std::make_unique<SocketRecvComm>(std::move(c), nullLogger());

  std::vector<Posted> posted;
  for (int g = 0; g < groups; ++g) posted.push_back(post(*comm, in));
  const uint8_t lateSpec[4] = {in.byte(), in.byte(), in.byte(), in.byte()};
  // What the peer wrote: first the control socket's share, then the streams' in turn.
  const size_t onControl = std::min(controlBytes, in.left());
  feed(peers[0], in.rest(), onControl);
  const uint8_t* streamBytes = in.rest() + onControl;
  const size_t perStream = streams > 0 ? (in.left() - onControl) / streams : 0;
  for (int s = 0; s < streams; ++s) feed(peers[1 + s], streamBytes + s * perStream, perStream);

  bool failed = false;
  size_t done = 0;
  for (int round = 0; round < 64 && !failed && done < posted.size(); ++round) {
    for (size_t i = done; i < posted.size(); ++i) {
      if (posted[i].request == nullptr) continue;
      TestResult result;
      Status s = comm->test(static_cast<SocketRequest*>(posted[i].request), &result);
      if (!s.ok()) {
        failed = true;
        break;
      }
      if (!result.done) continue;
      if (i != done)
        die("receive " + std::to_string(i) + " done before receive " + std::to_string(done));
      if (result.count != posted[i].n) die("done with the wrong count");
      for (int k = 0; k < result.count; ++k) {
        if (result.sizes[k] > posted[i].buffers[k].size()) die("size above the capacity");
      }
      ++done;
      posted[i].request = nullptr;
    }
    // A late receive: parked messages move into it.
    if (round == 2 && !failed) {
      Input late(lateSpec, sizeof(lateSpec));
      posted.push_back(post(*comm, late));
    }
  }
  if (failed) {
    std::vector<uint8_t> buffer(16);
    void* bufs[1] = {buffer.data()};
    size_t sizes[1] = {buffer.size()};
    int tags[1] = {0};
    if (comm->irecv(1, bufs, sizes, tags).ok()) die("a failed comm accepted another receive");
  }
  comm.reset();  // closes with whatever is still in flight
  for (int s = 0; s <= streams; ++s) ::close(peers[s]);
  return 0;
}
