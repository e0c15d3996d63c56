// libFuzzer target: the profiler's JSON-lines summaries (metrics/summary.h) and their two
// readers: `fit`'s (calibration/metrics_summary.h, addMetricsText) and `monitor`'s
// (tools/monitor/summary_reader.h, readSummaries). Every input is used twice:
//  A. its bytes as a summary file, for both readers: no crash, no exception, no undefined
//     behaviour; `fit` lists a bad line as one problem naming file:line (at most 20 and a
//     count), keeps records only from "calibration" lines, with every field in its documented
//     range, and calls a file with no line of ours foreign (one problem, nothing kept); a
//     line above 1 MiB is a problem, unparsed (checked once at start);
//     `monitor` notes a bad line as file:line and reads the rest (summary_readers.cc);
//  B. its bytes as the measurements of a profiler process (communicators, aggregation keys
//     and per-call times through the real CallSamples), rendered by renderSummary and read back:
//     `fit` gives every calibration line fit can use with the same fields and bins, and one
//     problem for each other; `monitor` gives every communicator and collective line with the
//     same fields (summary_round_trip.cc).
// Any violation aborts with the details on stderr.
#include <string>

#include "fuzz_support.h"
#include "pilot/calibration/metrics_summary.h"
#include "summary_oracle.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using namespace pilot::calibration;
  const std::string line = "{\"kind\":\"process\"}\n{\"kind\":\"calibration\",\"x\":\"" +
                           std::string(kMaxMetricsLineBytes, 'x') + "\"}\n";
  MetricsData data;
  addMetricsText(data, line, "long.jsonl");
  if (!data.records.empty() || data.problems.size() != 1 ||
      data.problems[0].rfind("long.jsonl:2: line longer than 1048576 bytes", 0) != 0)
    fuzz::die("a line above 1 MiB was not refused unread");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::checkFitReader(text);
  fuzz::checkMonitorReader(text);
  fuzz::checkSummaryRoundTrip(data, size);
  return 0;
}
