// nccl-tests output as real runs leave it: the text table (with the warts of mpirun tags,
// headers that lost their '#', repeated headers, NCCL INFO/WARN lines in between, launch
// failures, truncation) and the -J JSON file. See docs/sweep.md for what is read and how.
//
// The parsers report what one output says about itself. Which forcing configuration a run
// measured is settled later (dataset_loader.h): from a sweep's manifest, the JSON's
// environment, NCCL's "set by environment" lines, or --label rules.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/calibration/measurements.h"

namespace pilot::calibration {

/// What an output says about the configuration it ran under.
struct RunEvidence {
  std::string label;  ///< `# RUN ... config=` value; "" = none
  std::string file;   ///< `# RUN ... file=` value; "" = none
  std::string setup;  ///< `# RUN ... setup=` value; "" = none
  /// Known forcing: from the JSON's environment (complete: an absent variable was unset) or
  /// from NCCL's "NCCL_ALGO set by environment to ..." lines (which NCCL prints for every
  /// variable set, so once any is seen the rest were unset). nullopt = unknown.
  std::optional<Config> config;
  std::string configSource;   ///< "json" or "nccl-log" with `config`
  bool endedCleanly = false;  ///< the footer was read (all sizes done)
};

struct ParsedRun {
  Run run;  ///< config and repeat are left for the loader
  RunEvidence evidence;
};

struct ParsedOutput {
  std::vector<ParsedRun> runs;
  std::vector<std::string> problems;  ///< about the input as a whole
};

/// One text stream. `name` is used in Run::source ("name:line") and, when nothing else names
/// the collective, to find it in the file name.
ParsedOutput parseNcclTestsText(std::string_view text, const std::string& name);

/// One -J file (nccl-tests 2.18.5+). Gives at most one run.
ParsedOutput parseNcclTestsJson(std::string_view text, const std::string& name);

/// True when the text looks like JSON (first non-blank character '{').
bool looksLikeJson(std::string_view text);

}  // namespace pilot::calibration
