// The communicators a process finalized, folded so that a week-long job that creates and
// destroys tens of thousands of them (RL weight-sync groups rebuilt at every sync, elastic
// resizes, inference engines' transfer groups) costs the same at the end as at the start.
//
// A finalized communicator's last report is folded, once, into the record of its name and shape
// (name, ranks, nodes, its rank, GPU, profiler ABI, NCCL, fabric and table): counts, keys and
// calibration samples add up exactly (totals, bins, minimum and maximum), so `monitor` reads the
// same calls and bandwidth and `fit` the same per-call samples as if each had been kept. A
// record holding one communicator carries its id; with more, an id every rank derives alike
// from the name and shape, so the ranks' records of one group still meet in `monitor`. Each
// record's summary lines are rendered when it changes and kept as text: an export copies them.
//
// Bounded: kMaxRecords records, least recently finished dropped first (counted: communicators
// and calls); per record the keys and samples of one communicator's bounds, more sharing its
// "other" key or counting as calibration overflow.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "pilot/metrics/report.h"

namespace pilot::metrics {

class FinishedComms {
 public:
  static constexpr size_t kMaxRecords = 256;
  static constexpr size_t kMaxKeys = CommMonitor::kMaxKeys;
  static constexpr size_t kMaxSamples = CallSamples::kMaxKeys;

  /// Folds a finalized communicator's last report into its record; `process` names the node and
  /// pid its lines carry.
  void add(const CommReport& report, const ProcessReport& process);
  /// Every record's summary lines, least recently finished first.
  void appendSummary(std::string* out) const;
  /// The counts a ProcessReport carries (live is the caller's).
  CommCounts counts() const;
  /// The records, least recently finished first (tests).
  std::vector<const CommReport*> records() const;

  /// The id of a record holding several communicators of this name and shape.
  static uint64_t foldedId(const CommIdentity& identity);

 private:
  struct Record {
    std::string identity;  ///< the record's key (name and shape)
    CommReport report;
    std::map<std::tuple<bool, uint64_t>, size_t> keys;  ///< (other, packed fields) -> index
    std::map<uint64_t, size_t> samples;  ///< CallSamples::pack(key) -> index in report.samples
    std::string text;                    ///< its summary lines as last rendered
  };
  void fold(Record& r, const CommReport& c);

  std::list<Record> records_;  // least recently finished first
  std::map<std::string, std::list<Record>::iterator> byIdentity_;
  uint64_t finished_ = 0, dropped_ = 0, droppedCalls_ = 0;
};

}  // namespace pilot::metrics
