// Loopback throughput of the socket transport for a list of stream counts, two processes (a
// forked sender, this process receiving), NCCL-like depth of 8 messages in flight. Not a test:
// it prints one line per (streams, size) for docs/performance.md.
//
//   pilot_net_stream_bench [--streams 1,2,4,8] [--sizes 128K,1M,4M] [--bytes 4G] [--depth 8]
//                          [--spin]
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "net_test_support.h"
#include "pilot/core/text.h"

namespace {

using namespace nettest;

bool gYield = true;  // --spin: never yield (a dedicated core per side)

std::vector<uint64_t> parseList(const char* arg, bool bytes) {
  std::vector<uint64_t> out;
  for (std::string_view item : pilot::text::split(arg, ',')) {
    auto v = bytes ? pilot::text::parseBytes(item) : pilot::text::parseUnsigned(item);
    if (v) out.push_back(*v);
  }
  return out;
}

int runSender(const unsigned char* handle, int streams, size_t size, uint64_t total, int depth) {
  NullLogger log;
  auto t = makeSocketTransport(
      loopbackEnv({{"NCCL_PILOT_SOCKET_NSTREAMS", std::to_string(streams)}}), log);
  if (!t.ok()) return 2;
  Transport& tr = **t;
  unsigned char h[kHandleBytes];
  std::memcpy(h, handle, kHandleBytes);
  SendComm* comm = nullptr;
  while (comm == nullptr) {
    auto c = tr.connect(0, h, {});
    if (!c.ok()) return 3;
    comm = *c;
  }
  std::vector<uint8_t> buffer(size * depth, 1);
  const uint64_t count = total / size;
  std::vector<Request*> inflight(depth, nullptr);
  uint64_t posted = 0, done = 0;
  while (done < count) {
    for (int i = 0; i < depth && posted < count; ++i) {
      if (inflight[posted % depth] != nullptr) break;
      auto r = tr.isend(comm, buffer.data() + (posted % depth) * size, size, 0, nullptr);
      if (!r.ok()) return 4;
      if (*r == nullptr) break;
      inflight[posted++ % depth] = *r;
    }
    Request*& oldest = inflight[done % depth];
    if (oldest ==
        nullptr) {  // nothing could be posted (no CTS record yet): a pass without progress
      if (gYield) sched_yield();
      continue;
    }
    TestResult res;
    if (!tr.test(oldest, &res).ok()) return 5;
    if (res.done) {
      oldest = nullptr;
      ++done;
    } else {
      if (gYield) sched_yield();  // as NCCL's proxy thread does when a pass made no progress
    }
  }
  tr.closeSend(comm);
  return 0;
}

double runReceiver(Transport& tr, ListenComm* listen, size_t size, uint64_t total, int depth) {
  RecvComm* comm = nullptr;
  while (comm == nullptr) {
    auto c = tr.accept(listen);
    if (!c.ok()) return -1;
    comm = *c;
  }
  std::vector<uint8_t> buffer(size * depth);
  const uint64_t count = total / size;
  std::vector<Request*> inflight(depth, nullptr);
  uint64_t posted = 0, done = 0;
  int64_t start = 0;
  while (done < count) {
    for (int i = 0; i < depth && posted < count; ++i) {
      if (inflight[posted % depth] != nullptr) break;
      void* data[1] = {buffer.data() + (posted % depth) * size};
      size_t sizes[1] = {size};
      int tags[1] = {0};
      auto r = tr.irecv(comm, 1, data, sizes, tags, nullptr);
      if (!r.ok()) return -1;
      if (*r == nullptr) break;
      inflight[posted++ % depth] = *r;
    }
    Request*& oldest = inflight[done % depth];
    TestResult res;
    if (!tr.test(oldest, &res).ok()) return -1;
    if (res.done) {
      if (done == 0) start = monotonicMs();  // skip connection warm-up
      oldest = nullptr;
      ++done;
    } else if (gYield) {
      sched_yield();
    }
  }
  const double seconds = (monotonicMs() - start) / 1000.0;
  tr.closeRecv(comm);
  return static_cast<double>(size) * static_cast<double>(count - 1) / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint64_t> streamList = {1, 2, 4, 8};
  std::vector<uint64_t> sizes = {size_t{128} << 10, size_t{1} << 20, size_t{4} << 20};
  uint64_t total = uint64_t{4} << 30;
  int depth = 8;
  for (int i = 1; i < argc; ++i) {
    const char* value = i + 1 < argc ? argv[i + 1] : "";
    if (!std::strcmp(argv[i], "--spin")) {
      gYield = false;
      continue;
    }
    if (!std::strcmp(argv[i], "--streams")) streamList = parseList(value, false);
    if (!std::strcmp(argv[i], "--sizes")) sizes = parseList(value, true);
    if (!std::strcmp(argv[i], "--bytes")) total = parseList(value, true).at(0);
    if (!std::strcmp(argv[i], "--depth")) depth = static_cast<int>(parseList(value, false).at(0));
    ++i;
  }
  std::printf("%8s %10s %10s\n", "streams", "size", "GB/s");
  for (uint64_t streams : streamList) {
    for (uint64_t size : sizes) {
      NullLogger log;
      auto t = makeSocketTransport(loopbackEnv(), log);
      if (!t.ok() || (*t)->deviceCount() < 1) return 1;
      unsigned char handle[kHandleBytes];
      auto listen = (*t)->listen(0, handle);
      if (!listen.ok()) return 1;
      std::fflush(stdout);
      pid_t pid = fork();
      if (pid == 0) _exit(runSender(handle, static_cast<int>(streams), size, total, depth));
      double gbps = runReceiver(**t, *listen, size, total, depth);
      (*t)->closeListen(*listen);
      int status = 0;
      waitpid(pid, &status, 0);
      std::printf("%8llu %10s %10.2f%s\n", static_cast<unsigned long long>(streams),
                  pilot::text::formatBytes(size).c_str(), gbps,
                  WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "" : "  (sender failed)");
      std::fflush(stdout);
    }
  }
  return 0;
}
