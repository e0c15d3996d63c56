// What a sweep measured: runs of nccl-tests, each under one forcing configuration, as parsed
// from text or -J JSON output. The parsers (sweep side) produce a Dataset; fit consumes it.
// This layer is for the tool only (never linked into the plugin), so it may use more than the
// standard library (nlohmann-json).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pilot::calibration {

/// A forcing configuration: which NCCL variables the run set. Empty fields were not forced.
struct Config {
  std::string label;   ///< human label: "default", "ring", "auto_ll", or the spec itself
  std::string algo;    ///< NCCL_ALGO as given ("Ring", "ring,tree"); "" = NCCL's choice
  std::string proto;   ///< NCCL_PROTO as given ("LL128"); "" = NCCL's choice
  int minChannels = 0;  ///< NCCL_MIN_NCHANNELS; 0 = not forced
  int maxChannels = 0;  ///< NCCL_MAX_NCHANNELS; 0 = not forced

  bool isDefault() const {
    return algo.empty() && proto.empty() && minChannels == 0 && maxChannels == 0;
  }
};

/// One row of nccl-tests output (one placement: out-of-place or in-place).
struct Sample {
  uint64_t size = 0;    ///< bytes, nccl-tests' size column (= NCCL's nBytes for the tuner)
  uint64_t count = 0;   ///< elements per rank
  double timeUs = 0;    ///< nccl-tests time column (µs)
  double algbw = 0;     ///< GB/s
  double busbw = 0;     ///< GB/s
  long wrong = 0;       ///< #wrong; -1 = N/A (-c 0)
  bool inPlace = false;
};

/// One nccl-tests invocation.
struct Run {
  std::string source;      ///< "file:line" where the run starts
  std::string collective;  ///< "allreduce", "allgather", "reducescatter", "broadcast", "reduce"
  int nodes = 0;           ///< 0 = unknown
  int ranks = 0;           ///< 0 = unknown
  std::string ncclVersion;  ///< "2.29.2" when the output says
  Config config;
  int repeat = 0;          ///< 0-based index among runs with the same config, shape and collective
  std::vector<Sample> samples;
  bool failed = false;      ///< excluded from fitting (launch failure, #wrong > 0, FAILED, ...)
  std::vector<std::string> problems;  ///< why it failed or what was odd, one line each
};

struct Dataset {
  std::vector<Run> runs;
  std::vector<std::string> problems;  ///< input-level problems (unreadable file, ...)
};

}  // namespace pilot::calibration
