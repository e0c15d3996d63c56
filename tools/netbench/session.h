// The two sides of a netbench run and their conversation over the bootstrap socket:
//   sender -> receiver: hello (channels, protocol, buffer sizes, timeout)
//   receiver -> sender: hello (its plugin, ABI, device), handles (one listen handle per channel)
//   both: connect / accept + regMr on their service threads; receiver -> sender: ready
//   per size: run -> posted (receives are up) -> the sender sends -> result (the receiver's
//   verified bytes and time, or the first corruption)
//   sender -> receiver: quit; both tear down; receiver -> sender: bye
// Either side sends `abort` with its error when it fails; the other stops and reports it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "netbench/loader.h"
#include "netbench/plan.h"
#include "netbench/wire.h"

namespace pilot::cli {

struct NetbenchOptions {
  std::string plugin;  ///< NCCL_NET_PLUGIN syntax; empty: NCCL's default
  std::vector<uint64_t> sizes;
  int channels = 2;
  uint64_t iters = 20;
  uint64_t warmup = 5;
  uint64_t minBytes = 0;
  Proto proto = Proto::Simple;
  int sliceSteps = 1;
  int dev = 0;
  int abi = 0;  ///< 0: the newest exported
  bool json = false;
  bool verbose = false;
  double timeoutS = 60;
};

/// The sender: drives the run and prints the results on stdout (rows as they finish; JSON at
/// the end). `peer` describes the other side for the header. The error is not printed.
Status runSenderSide(const NetbenchOptions& options, const NetPluginLibrary& lib, WireSocket wire,
                     const std::string& peer);

/// Reads and checks the sender's hello; fails on anything else (a port scan, a stale peer).
struct SenderHello {
  int channels = 0;
  Proto proto = Proto::Simple;
  int sliceSteps = 1;
  ProtoBufferSizes buffers{};
  double timeoutS = 60;
};
Expected<SenderHello> readSenderHello(WireSocket& wire, double timeoutS);

/// The receiver, after a valid hello: --plugin, --dev, --abi and --verbose are its own, the
/// rest comes from the sender. Its errors also go to the sender. `quiet`: no progress lines
/// on stderr (the peer netbench spawned itself).
Status runReceiverSide(const NetbenchOptions& local, const SenderHello& hello,
                       const NetPluginLibrary& lib, WireSocket wire, bool quiet);

/// The ABI to drive: `requested`, or the newest exported; fails if not exported.
Expected<int> chooseAbi(const NetPluginLibrary& lib, int requested);

}  // namespace pilot::cli
