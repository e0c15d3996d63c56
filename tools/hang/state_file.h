// One process's live state file (nccl_pilot_<node>_<pid>.state.json, format
// "nccl-pilot-state" version 1, written by metrics/ while the job runs): per communicator what
// it launched and completed, the oldest operation in flight and the last export window. Read
// from other nodes' bytes, so every field is checked against its bounds; a file that breaks one
// is refused whole, with one reason.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pilot/core/result.h"

namespace pilot::cli::hang {

constexpr size_t kMaxStateBytes = 8u << 20;
constexpr size_t kMaxComms = 65536;
constexpr int kMaxRanks = 1 << 20;
constexpr int kStateVersion = 1;
/// Write times (unix ms) past this (the year 33658) are no clock's: bounded so time arithmetic
/// cannot overflow.
constexpr int64_t kMaxUnixMs = 1'000'000'000'000'000;
/// Names and ids longer than this are no writer's of ours.
constexpr size_t kMaxTextBytes = 1024;

struct Counts {
  uint64_t launched = 0, done = 0;
};

struct OpRef {
  std::string op;  ///< AllReduce, ..., Send, Recv
  uint64_t seq = 0;
  uint64_t bytes = 0;
  int peer = -1;  ///< the other rank of a Send/Recv, -1 for a collective
  double ageS = 0;
};

struct ProxyEntry {
  int channel = 0;
  int peer = 0;
  bool send = false;
  int64_t steps = -1;  ///< -1: unknown
  int64_t of = 0;
};

struct InFlight : OpRef {
  int channels = 0;
  std::vector<int> started, stopped;
  std::vector<ProxyEntry> proxy;
};

struct WindowKey {
  std::string op;
  uint64_t bytes = 0;
  uint64_t calls = 0;
  double meanUs = 0;
};

struct CommState {
  std::string comm, commName;
  int rank = 0, nRanks = 0, nNodes = 0;
  std::map<std::string, Counts> ops;   ///< per collective kind
  std::map<int, Counts> sends, recvs;  ///< per peer rank
  uint64_t inFlight = 0;
  std::optional<OpRef> last;
  std::optional<double> lastDoneAgeS;
  std::optional<InFlight> oldest;
  double waitingS = 0;
  bool stalled = false;
  double windowS = 0;
  std::vector<WindowKey> window;
};

struct StateFile {
  std::string path;   ///< where it was read; not part of the format
  std::string input;  ///< the input (a directory given, or the file) it was found under
  std::string node;
  int64_t pid = 0;
  std::string job, library;
  int64_t writtenMs = 0, nextDueMs = 0;
  double stallS = 0;
  bool final = false;
  std::vector<CommState> comms;
};

/// Its writer has an operation in flight on some communicator and is not done: it promised a
/// rewrite within a second (metrics/ state_file.h).
bool busyWriter(const StateFile& s);

/// Reads `text` as the state file `path`. The error says why in a few words ("not JSON
/// (truncated?)", "format is ..., not nccl-pilot-state", "comms[2]: rank 9 outside [0, 8)").
Expected<StateFile> parseStateFile(const std::string& text, const std::string& path);

}  // namespace pilot::cli::hang
