// Shared helpers of the transport tests: a loopback transport from an injected environment, a
// logger that records, connection set-up and completion loops with deadlines, payload patterns
// and an open-fd count.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pilot/core/config.h"
#include "pilot/core/log.h"
#include "pilot/net/socket.h"
#include "pilot/net/transport.h"

namespace nettest {

using namespace pilot;
using namespace pilot::net;

/// Exactly the settings of `env`, nothing from the real environment.
EnvLookup mapEnv(const std::map<std::string, std::string>& env);
/// NCCL_SOCKET_IFNAME=lo plus `extra`, nothing from the real environment.
EnvLookup loopbackEnv(const std::map<std::string, std::string>& extra = {});

class RecordingLogger final : public Logger {
 public:
  void write(LogLevel level, unsigned long flags, const char* file, int line,
             const std::string& message) override;
  std::vector<std::string> lines(LogLevel level) const;
  /// Lines at `level` containing `needle`.
  int count(LogLevel level, const std::string& needle) const;
  std::string dump() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<LogLevel, std::string>> lines_;
};

/// A socket transport on lo; fails the test if it cannot be made or has no device.
std::unique_ptr<Transport> loopbackTransport(Logger& log,
                                             const std::map<std::string, std::string>& extra = {});

struct Pair {
  SendComm* send = nullptr;
  RecvComm* recv = nullptr;
};
/// listen + connect/accept alternated in this thread until both ends exist.
Pair connectPair(Transport& t, int timeoutMs = 10000);
void closePair(Transport& t, Pair& p);

/// Retries isend/irecv while they return nullptr; an error or the deadline fails the test.
Request* postSend(Transport& t, SendComm* c, const void* data, size_t size, int tag,
                  int timeoutMs = 10000);
Request* postRecv(Transport& t, RecvComm* c, int n, void* const* data, const size_t* sizes,
                  const int* tags, int timeoutMs = 10000);
/// One test() of a just-posted receive, as NCCL's proxy does right after posting: it writes
/// the receive's CTS record, which a sender of a message above the eager limit waits for.
void announce(Transport& t, Request* recv);
/// Tests until done; returns the result (done = false on error or deadline, with *error set).
TestResult waitDone(Transport& t, Request* r, int timeoutMs = 30000, std::string* error = nullptr);

/// Deterministic bytes for (seed, offset) so either side can check any range.
void fillPattern(uint8_t* data, size_t size, uint64_t seed);
/// Index of the first wrong byte, or SIZE_MAX when all match.
size_t firstMismatch(const uint8_t* data, size_t size, uint64_t seed);

/// A plain blocking TCP connection to the (IPv4) listener of `handle`, as a stranger makes it;
/// -1 when it cannot be made.
int rawConnect(const unsigned char* handle);

/// Entries of /proc/self/fd.
int openFdCount();
int64_t monotonicMs();

}  // namespace nettest
