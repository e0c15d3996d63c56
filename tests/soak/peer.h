// A peer process of the soak: one side (A or B) of a process pair, holding one side of each of
// the pair's communicators, in its own network namespace. The coordinator drives it over the
// control pipe (fds 3 and 4): open/connect/close communicators, stats, finish.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace soak {

struct PeerOptions {
  char side = 'A';
  int pair = 0;
  int commsPerPair = 4;
  uint64_t seed = 0;
  int hangMs = 10000;
  double bytesPerSecond = 16 << 20;  ///< this process's sends, all its communicators together
  /// The transport's settings (NCCL_SOCKET_IFNAME, NCCL_PILOT_SOCKET_*), nothing else.
  std::map<std::string, std::string> env;
};

/// Runs until the coordinator says finish (0) or goes away (1); 3 when the transport cannot
/// be made.
int runPeer(const PeerOptions& options);

}  // namespace soak
