// Measurements summarised for fitting: runs grouped by communicator shape and forcing
// configuration, with one median time and one spread per message size. Fitting, evaluation
// and reports all read this form, never the raw runs, so they agree on what was measured.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pilot/calibration/measurements.h"

namespace pilot::calibration {

/// One communicator shape: what a table rule can tell apart (collective, nodes, ranks) plus
/// the run's setup, because runs under different setups must never be compared.
struct ShapeKey {
  std::string collective;
  int nodes = 0;  ///< 0 = unknown
  int ranks = 0;  ///< 0 = unknown
  std::string setup;

  /// "allreduce nodes=2 ranks=8" (+ " setup=...").
  std::string str() const;
  /// Ranks per node, or 0 when unknown or uneven.
  int ranksPerNode() const;
  bool operator<(const ShapeKey& o) const;
  bool operator==(const ShapeKey& o) const;
};

/// One message size of one series.
struct SizeStat {
  uint64_t size = 0;
  double timeUs = 0;  ///< median over the runs of each run's out-of-place time
  double spread = 0;  ///< (max - min) / median over the runs; 0 with one run
  double minUs = 0, maxUs = 0;
  /// Median in-place time; 0 when no run printed one. Not compared with out-of-place times
  /// (another buffer arrangement), only a second look at the noise where the two differ.
  double inPlaceUs = 0;
  double busbw = 0;           ///< median bus bandwidth, GB/s
  std::vector<double> times;  ///< one per run that measured this size, in run order
  /// Per-call samples (profiler metrics) only, else 0: the calls pooled over ranks and jobs,
  /// and CallStats::logSigma (timeUs is then exp of the trimmed mean of log time, minUs and
  /// maxUs its 2-standard-error interval, spread their distance over timeUs).
  uint64_t calls = 0;
  double logSigma = 0;
  /// Per-call samples, the default (baseline) series only: the index of the baseline's own
  /// series in Shape::series when a rule of the job's table chose it; -1 = NCCL chose it.
  int keptSeries = -1;
};

/// Every usable run of one configuration on one shape.
struct Series {
  Config config;
  std::string label;            ///< "default" for NCCL's defaults, else the first run's label
  std::vector<int> runs;        ///< indices into Dataset::runs (MetricsData::records), in order
  std::vector<SizeStat> sizes;  ///< ascending
  uint64_t calls = 0;           ///< per-call samples: the calls over every size; 0 for sweeps

  /// How much was measured, as the table and the report say it: "x3" (runs), "760 calls".
  std::string countText() const;
  bool isDefault() const { return config.isDefault(); }
  /// The statistics at exactly `size`, or nullptr when this series did not measure it.
  const SizeStat* at(uint64_t size) const;
};

struct Shape {
  ShapeKey key;
  std::vector<Series> series;
  int defaultSeries = -1;   ///< index of NCCL's default in `series`, -1 when not measured
  std::string ncclVersion;  ///< the version the runs report when they agree, else ""
  uint8_t fabrics = 0;      ///< Run::fabrics when every run knows it and they agree, else 0
  std::string network;      ///< Run::network when every run logged the same one, else ""
  /// From the profiler's metrics: the default is the baseline (at each size the configuration
  /// the job ran most), sizes carry per-call statistics, and series.runs index records.
  bool perCall = false;

  const Series* defaults() const {
    return defaultSeries < 0 ? nullptr : &series[static_cast<size_t>(defaultSeries)];
  }
};

/// A run left out of every fit, and why. Reported, never dropped silently.
struct ExcludedRun {
  int run = -1;  ///< index into Dataset::runs
  std::string source, collective, label;
  std::vector<std::string> reasons;
};

struct Measurements {
  std::vector<Shape> shapes;  ///< sorted by ShapeKey
  std::vector<ExcludedRun> excluded;
  std::vector<std::string> notes;  ///< odd but usable input (dropped rows), one line each
};

/// What a configuration forces as one string, names lowercased; labels are ignored, so
/// "iteration_1" and "iteration_2" both count as repeats of the default.
std::string seriesKey(const Config& c);
bool sameForcing(const Config& a, const Config& b);

/// Groups the usable runs. Out-of-place times only: in-place rows measure a different buffer
/// arrangement, and for AllGather a different amount of copying. Size-0 rows are dropped
/// (nothing moves; nccl-tests prints them for AllGather counts that round down to zero).
Measurements summarize(const Dataset& data);

/// One run's out-of-place time per size (the median where a size repeats), size 0 and rows
/// without a usable time left out; the form summarize() reads runs in.
std::map<uint64_t, double> runTimes(const Run& run);

/// The median of a non-empty list.
double median(std::vector<double> values);

}  // namespace pilot::calibration
