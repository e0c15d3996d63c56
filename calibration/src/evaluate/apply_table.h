// A tuning table applied to a measured shape as the tuner would apply it under nccl-tests:
// first matching rule, one operation per group (numPipeOps 1), unregistered buffers, and the
// nccl= and fabric= keys checked against what the runs report. Shared by `report --table` and
// `evaluate`, so both read a table one way.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "pilot/calibration/series.h"
#include "pilot/tuner/table.h"

namespace pilot::calibration::detail {

/// The index of the first rule that applies at `size`, or -1 (NCCL decides). A key the runs do
/// not show (NCCL version or fabric unknown, or one of several fabrics) is taken to match, and
/// its name is added to `assumed`.
int firstMatchingRule(const tuner::TuningTable& table, const Shape& shape, uint64_t size,
                      std::set<std::string>* assumed = nullptr);

/// True when the rule leaves NCCL's choice as it is (only chunk=): NCCL's default ran.
bool keepsNcclChoice(const tuner::Rule& rule);

/// The shape's measured configuration whose forcing makes NCCL do what `rule` says (same
/// algorithms, protocols and channels), or -1 when none was measured.
int seriesForRule(const Shape& shape, const tuner::Rule& rule);

}  // namespace pilot::calibration::detail
