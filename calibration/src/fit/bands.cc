#include "fit/bands.h"

#include <algorithm>
#include <cmath>

namespace pilot::calibration::detail {

uint64_t roundDownNice(uint64_t v) {
  if (v < 16) return v;
  int top = 63;
  while (((v >> top) & 1u) == 0) --top;
  const uint64_t step = uint64_t{1} << (top - 3);
  return v / step * step;
}

uint64_t geometricEdge(uint64_t a, uint64_t b) {
  if (b <= a + 1) return a;
  const double mid = std::sqrt(static_cast<double>(a) * static_cast<double>(b));
  uint64_t edge = roundDownNice(static_cast<uint64_t>(mid));
  return std::clamp(edge, a, b - 1);
}

std::vector<Band> makeBands(const std::vector<SizeChoice>& choices) {
  std::vector<Band> bands;
  for (size_t i = 0; i < choices.size(); ++i) {
    const SizeChoice& c = choices[i];
    if (bands.empty() || bands.back().series != c.series) {
      Band band;
      band.lo = i == 0 ? 0 : geometricEdge(choices[i - 1].size, c.size) + 1;
      band.series = c.series;
      band.label = c.label;
      band.firstSize = c.size;
      band.minGain = band.maxGain = c.gain;
      bands.push_back(band);
    }
    Band& band = bands.back();
    band.lastSize = c.size;
    band.hi = i + 1 < choices.size() ? geometricEdge(c.size, choices[i + 1].size) : c.size;
    ++band.sizes;
    band.minGain = std::min(band.minGain, c.gain);
    band.maxGain = std::max(band.maxGain, c.gain);
  }
  return bands;
}

}  // namespace pilot::calibration::detail
