// `nccl-pilot hang`'s outputs: text (a block per stalled communicator: the lists, the suspects,
// why, a row per rank; then the stragglers) and one JSON object (tools/README.md has the
// schema). Notes are the caller's to print.
#pragma once

#include <string>

#include "hang/judge.h"

namespace pilot::cli::hang {

std::string reportText(const HangReport& report);
std::string reportJson(const HangReport& report);

}  // namespace pilot::cli::hang
