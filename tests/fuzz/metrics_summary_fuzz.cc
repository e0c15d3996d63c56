// libFuzzer target: the profiler's JSON-lines summaries (metrics/summary.h) and their two
// readers: `fit`'s (calibration/metrics_summary.h, addMetricsText) and `monitor`'s
// (tools/monitor/summary_reader.h, readSummaries). Every input is used twice:
//  A. its bytes as a summary file, for both readers: no crash, no exception, no undefined
//     behaviour; `fit` lists a bad line as one problem naming file:line (at most 20 and a
//     count), keeps records only from "calibration" lines, with every field in its documented
//     range, and calls a file with no line of ours foreign (one problem, nothing kept);
//     `monitor` notes a bad line as file:line and reads the rest (summary_readers.cc);
//  B. its bytes as the measurements of a profiler process (communicators, aggregation keys
//     and per-call times through the real CallSamples), rendered by renderSummary and read back:
//     `fit` gives every calibration line fit can use with the same fields and bins, and one
//     problem for each other; `monitor` gives every communicator and collective line with the
//     same fields (summary_round_trip.cc).
// Any violation aborts with the details on stderr.
#include <string>

#include "summary_oracle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::checkFitReader(text);
  fuzz::checkMonitorReader(text);
  fuzz::checkSummaryRoundTrip(data, size);
  return 0;
}
