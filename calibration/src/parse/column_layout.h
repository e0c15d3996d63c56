// Where each value sits in an nccl-tests result row, read from the column header rather than
// assumed: -C 1 renames time to cputime, -I 1 adds four per-iteration columns per placement,
// -S 1 appends a timestamp, and older releases spell the columns differently (bytes/N/op/
// error) or have no root column.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/calibration/measurements.h"

namespace pilot::calibration::detail {

struct Placement {
  bool inPlace = false;
  int time = -1, algbw = -1, busbw = -1;
  int wrong = -1;  ///< "#wrong" column; -1 when absent or when it holds an old "error" value
  int iterMin = -1, iterMax = -1, iterP99 = -1, iterCv = -1;
};

struct ColumnLayout {
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  std::vector<Placement> placements;  ///< out-of-place first, as printed
  int fields = 0;                     ///< tokens in a row, not counting the timestamp
  bool timestamp = false;             ///< -S 1: "YYYY-MM-DD HH:MM:SS" ends each row (2 tokens)
  bool cpuTime = false;               ///< -C 1: times are host CPU time
};

/// The column-name line of the header ("size count type redop root time algbw busbw #wrong
/// ..."), with or without its leading '#'. nullopt when the line is not one.
std::optional<ColumnLayout> layoutFromHeader(std::string_view line);

/// The columns of nccl-tests 2.x without -C/-I/-S, for rows whose header was lost.
ColumnLayout standardLayout();

/// True for the other two header lines ("out-of-place in-place", "(B) (elements) (us)...").
bool isHeaderDecoration(std::string_view line);

struct ParsedRow {
  std::vector<Sample> samples;  ///< one per placement
  std::string error;            ///< why the row was not read; samples empty then
};

/// Reads one row. `tokens` is the row split on whitespace.
ParsedRow parseRow(const ColumnLayout& layout, const std::vector<std::string_view>& tokens);

}  // namespace pilot::calibration::detail
