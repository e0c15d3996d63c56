// The oracles of metrics_summary_fuzz (see there): both readers on arbitrary text
// (summary_readers.cc), and the profiler's writer read back by both (summary_round_trip.cc).
// Violations abort (fuzz::die).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fuzz {

/// `fit`'s reader on `text` as the file "fuzz.jsonl".
void checkFitReader(const std::string& text);
/// `monitor`'s reader on `text` written to a file.
void checkMonitorReader(const std::string& text);
/// A profiler process made from the bytes, rendered, written and read back by both.
void checkSummaryRoundTrip(const uint8_t* data, size_t size);

}  // namespace fuzz
