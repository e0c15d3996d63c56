// The profiler's JSON-lines summaries as fit input (docs/calibration.md, "Calibrate from your
// jobs"): the "kind":"calibration" lines metrics/ writes into nccl_pilot_<host>_<pid>.jsonl,
// one per (communicator, collective, exact size, algorithm, protocol, channels) and rank, each
// with a histogram of the per-call GPU time at 2% resolution. Records of the same shape
// (collective, ranks, nodes, NCCL version, fabric) are pooled over ranks and jobs into
// Measurements whose sizes carry per-call statistics (EvidenceKind::Calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pilot/calibration/series.h"

namespace pilot::calibration {

/// What is read at most: bigger files, longer lines and more are a problem each, never a crash.
constexpr size_t kMaxMetricsFileBytes = size_t{256} << 20;
constexpr size_t kMaxMetricsLineBytes = size_t{1} << 20;
constexpr size_t kMaxMetricsFiles = 10000;
constexpr size_t kMaxMetricsRecords = 1000000;
constexpr size_t kMaxMetricsBins = 4096;
/// Bin k holds the calls whose GPU time t in nanoseconds has kBinRatio^k <= t < kBinRatio^(k+1);
/// k above kMaxBinIndex (about 8 hours) is not a collective's time.
constexpr double kBinRatio = 1.02;
constexpr int kMaxBinIndex = 1600;

/// One "calibration" line: one rank's calls of one configuration at one size.
struct CallRecord {
  std::string source;  ///< "file:line"
  std::string comm, node;
  long long pid = 0;
  int rank = 0, ranks = 0, nodes = 0;
  std::string nccl;    ///< "2.28.9", or "" when the line says "unknown"
  std::string fabric;  ///< "ib", "roce", "ethernet", or "" when unknown
  std::string tableSha256;
  std::string collective;   ///< the table's spelling: "allreduce"
  uint64_t bytes = 0;       ///< NCCL's nBytes as the tuner sees it (the table's size axis)
  std::string algo, proto;  ///< the table's spellings: "tree", "simple"
  int channels = 0;
  /// A rule of the job's table chose this configuration ("decision":"rule N (line L)"); false
  /// for "NCCL" and for summaries written before the field existed.
  bool byRule = false;
  uint64_t calls = 0;
  std::vector<std::pair<int, uint64_t>> bins;  ///< (k, calls), counts summing to `calls`
};

struct MetricsData {
  std::vector<CallRecord> records;
  std::vector<std::string> files;     ///< the .jsonl files read, in order
  std::vector<std::string> problems;  ///< "file:line: why", one each; the rest is kept
  std::vector<std::string> notes;     ///< what was ignored on purpose (.prom files, other kinds)
};

/// Whether INPUT names profiler metrics: a path ending in ".jsonl", or a directory holding
/// .jsonl (or the profiler's .prom) files, directly or one level down (a directory per job).
bool isMetricsInput(const std::string& path);

/// Reads .jsonl files and directories of them (one level of subdirectories: one per job);
/// other files (.prom) are ignored with a note. A file read twice counts once.
MetricsData loadMetrics(const std::vector<std::string>& inputs);

/// Parses one file's text into `data` (what loadMetrics does per file). A file without a
/// single line of ours is foreign: one problem, nothing kept.
void addMetricsText(MetricsData& data, const std::string& text, const std::string& name);

/// Robust statistics of one pooled histogram, in log time. With g = kTrimFraction, the
/// trimmed mean drops g of the calls at each end (stragglers); its standard error is
/// s_w / ((1 - 2g) sqrt(n)) with s_w the g-winsorized standard deviation (Tukey-McLaughlin).
constexpr double kTrimFraction = 0.10;
struct CallStats {
  uint64_t calls = 0;
  double logMean = 0;   ///< trimmed mean of ln(time in microseconds)
  double logSigma = 0;  ///< s_w / (1 - 2g): the standard error is logSigma / sqrt(calls)
  double p10Us = 0, p90Us = 0;
};
CallStats callStats(const std::map<int, uint64_t>& bins);

/// Pools the records into shapes: per size, the configuration that ran the most calls is the
/// baseline, the shape's "default" series (what the job ran); every (algorithm, protocol) is a
/// series of its own, channel counts pooled. Where a rule of the job's table chose the
/// baseline, the baseline's SizeStat::keptSeries names its own series, so that a fit which
/// finds nothing faster keeps the table's choice instead of handing the size back to NCCL.
/// Problems and notes go into Measurements::notes.
Measurements summarizeMetrics(const MetricsData& data);

}  // namespace pilot::calibration
