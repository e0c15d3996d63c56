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

/// Cliff-safe edges: where the measured size just outside a band chose by fit lost to the
/// default by more than the bar there (or the band's configuration was not measured there),
/// that edge moves from the geometric midpoint to the band's own measured size (Band::cliffBelow,
/// cliffAbove). `decisions` are the shape's, one per measured size, ascending.
void cliffSafeEdges(const Shape& shape, const std::vector<Decision>& decisions,
                    std::vector<Band>& bands);

/// A band's expect= points: the configuration's median time at every measured size inside the
/// band, on the rule's size axis (size / ranks when `perRank`), thinned evenly in log-size to at
/// most `limit` points.
std::vector<tuner::ExpectedTime> expectedTimes(const Series& series, const Band& band, bool perRank,
                                               int ranks, size_t limit);

}  // namespace pilot::calibration::detail
