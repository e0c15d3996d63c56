// `nccl-pilot monitor`'s outputs: a text table per communicator on stdout, and one
// self-contained HTML page (inline CSS and SVG, as `report` writes) with the same tables and a
// bus-bandwidth chart per collective: one line per rank, the calibrated expectation dashed.
// With live facts (live.h: the inputs held state files), both begin with a live section: each
// stalled communicator in one line, and each communicator's straggler of the last export window.
#pragma once

#include <string>

#include "monitor/analysis.h"
#include "monitor/live.h"

namespace pilot::cli::monitor {

std::string reportText(const Analysis& a, double driftThreshold, const Live& live = {});

struct HtmlOptions {
  std::string title = "nccl-pilot monitor";
  std::string toolVersion;
  double driftThreshold = 0.2;
};
std::string reportHtml(const Analysis& a, const HtmlOptions& options, const Live& live = {});

}  // namespace pilot::cli::monitor
