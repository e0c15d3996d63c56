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
  std::string label;    ///< human label: "default", "ring", "auto_ll", or the spec itself
  std::string algo;     ///< NCCL_ALGO as given ("Ring", "ring,tree"); "" = NCCL's choice
  std::string proto;    ///< NCCL_PROTO as given ("LL128"); "" = NCCL's choice
  int minChannels = 0;  ///< NCCL_MIN_NCHANNELS; 0 = not forced
  int maxChannels = 0;  ///< NCCL_MAX_NCHANNELS; 0 = not forced

  bool isDefault() const {
    return algo.empty() && proto.empty() && minChannels == 0 && maxChannels == 0;
  }
};

/// One row of nccl-tests output (one placement: out-of-place or in-place).
struct Sample {
  uint64_t size = 0;   ///< bytes, nccl-tests' size column (= NCCL's nBytes for the tuner)
  uint64_t count = 0;  ///< elements per rank
  double timeUs = 0;   ///< nccl-tests time column (µs)
  double algbw = 0;    ///< GB/s
  double busbw = 0;    ///< GB/s
  long wrong = 0;      ///< #wrong; -1 = N/A (-c 0)
  bool inPlace = false;
  std::string type;   ///< nccl-tests type column ("float"); several with -d all
  std::string redop;  ///< "sum", "none" (AllGather), ...
  /// Per-iteration statistics (nccl-tests -I 1), µs and %; -1 = not reported.
  double iterMinUs = -1, iterMaxUs = -1, iterP99Us = -1, iterCvPct = -1;
};

/// NCCL's own choice for one call, from its TUNING INFO line (NCCL_DEBUG=INFO,
/// NCCL_DEBUG_SUBSYS=TUNING, 2.24+): "AllReduce: 4194304 Bytes -> Algo Ring proto LL ...".
/// Under a forcing configuration it shows what the forcing produced; under the default it
/// shows NCCL's default choice per size.
struct NcclChoice {
  uint64_t bytes = 0;  ///< as NCCL logs it: count x type size, per rank for AllGather and
                       ///< ReduceScatter (nccl-tests' size column divided by ranks there)
  std::string algo;    ///< NCCL's spelling: "Ring", "Tree", "NVLS", ...
  std::string proto;   ///< "LL", "LL128", "Simple"
  int channelLo = -1, channelHi = -1;  ///< -1 = not logged
};

/// One nccl-tests invocation.
struct Run {
  std::string source;       ///< "file:line" where the run starts
  std::string collective;   ///< "allreduce", "allgather", "reducescatter", "broadcast", "reduce"
  int nodes = 0;            ///< 0 = unknown
  int ranks = 0;            ///< 0 = unknown
  std::string ncclVersion;  ///< "2.29.2" when the output says
  /// The network NCCL says it used ("Using network Socket", "IB", a net plugin's name such as
  /// "Libfabric"); "" = not logged.
  std::string network;
  /// The tuning table's fabric= bits (tuner::bit(pilot::Fabric)) this run's output implies, as
  /// topology/fabric.h defines the fabric: from the network NCCL logged, or an environment
  /// that kept NCCL's IB transport out (NCCL_IB_DISABLE, NCCL_NET); 0 = unknown.
  uint8_t fabrics = 0;
  Config config;
  int repeat = 0;  ///< 0-based index among runs with the same config, shape and collective
                   ///< (and setup), in input order; -1 for failed runs (never counted)
  /// What else set this run apart besides the forcing configuration (network settings, a
  /// fixture's "setup=(3)"); "" = nothing known. Fit never pools or compares runs whose
  /// setups differ, so one file may hold sweeps of several environments.
  std::string setup;
  std::vector<Sample> samples;
  /// Where `config` came from: "manifest" (a sweep's plan), "json" (the -J file's
  /// environment), "nccl-log" (NCCL's "NCCL_ALGO set by environment to ..." lines), "label"
  /// (a --label rule); "" = unknown, and then the run is failed ("unlabelled").
  std::string configSource;
  /// Distinct (bytes, algo, proto) choices NCCL logged during the run, in log order.
  std::vector<NcclChoice> ncclChoices;
  bool failed = false;  ///< excluded from fitting (launch failure, #wrong > 0, FAILED, ...)
  std::vector<std::string> problems;  ///< why it failed or what was odd, one line each
};

struct Dataset {
  std::vector<Run> runs;
  std::vector<std::string> problems;  ///< input-level problems (unreadable file, ...)
};

}  // namespace pilot::calibration
