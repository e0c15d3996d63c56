// netbench's output: an nccl-tests style table on stdout (a "#" header saying what ran, then
// one row per size as it finishes), or one JSON object at the end.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "netbench/driver.h"
#include "netbench/plan.h"

namespace pilot::cli {

/// What ran: the same for every size.
struct NetbenchRun {
  std::string pluginPath;
  std::string pluginName;
  int abi = 0;
  std::vector<int> abis;  ///< exported
  int dev = 0;
  NetDeviceInfo device;
  std::string peer;  ///< "127.0.0.1 (spawned peer, pid N)" or the address
  std::string peerPluginPath;
  int peerAbi = 0;
  int channels = 0;
  Proto proto = Proto::Simple;
  StepShape shape;
  uint64_t warmup = 0;
};

struct SizeResult {
  uint64_t size = 0;
  uint64_t iterations = 0;  ///< timed
  uint64_t messages = 0;    ///< timed, all channels
  uint64_t bytes = 0;       ///< timed payload received and verified
  double timeMs = 0;        ///< receiver: end of warmup -> last message consumed
  double gbps = 0;          ///< bytes / time, 1 GB = 1e9 bytes
  double latP50Us = 0;      ///< sender: first isend attempt -> test() done, per message
  double latP99Us = 0;
  /// CPU time (user + system, every thread) of each process while the timed messages moved,
  /// and both together per GB of verified payload: what the transport costs the host.
  double cpuSenderMs = 0;
  double cpuReceiverMs = 0;
  double cpuSPerGB = 0;
  bool verified = false;
};

SizeResult makeSizeResult(uint64_t size, uint64_t iterations, uint64_t messages, uint64_t bytes,
                          int64_t elapsedNs, double p50Ns, double p99Ns, bool verified);

void printHeader(std::ostream& out, const NetbenchRun& run);
void printRow(std::ostream& out, const SizeResult& row);
nlohmann::ordered_json resultsJson(const NetbenchRun& run, const std::vector<SizeResult>& rows);

/// "0x1 (HOST)", "0x3 (HOST|CUDA)".
std::string ptrSupportText(int bits);

}  // namespace pilot::cli
