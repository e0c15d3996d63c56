// Size bands: adjacent measured sizes with the same choice, and where their edges go.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pilot/calibration/fit.h"

namespace pilot::calibration::detail {

/// Rounds down to three significant binary digits (92681 -> 90112 = 88K), so that band edges
/// read well in a table and still lie within 12.5% of the exact value.
uint64_t roundDownNice(uint64_t v);

/// The last byte of the lower band between measured sizes a < b: their geometric midpoint
/// (message-size effects are multiplicative), rounded as above and kept in [a, b).
uint64_t geometricEdge(uint64_t a, uint64_t b);

struct SizeChoice {
  uint64_t size = 0;
  int series = kDefaultChoice;
  std::string label;
  double gain = 0;
};

/// Merges adjacent sizes with the same choice (ascending input). The first band starts at 0:
/// below the smallest measured size a collective is all latency, which that size represents.
/// The last band ends at the largest measured size.
std::vector<Band> makeBands(const std::vector<SizeChoice>& choices);

}  // namespace pilot::calibration::detail
