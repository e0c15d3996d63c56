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

void cliffSafeEdges(const Shape& shape, const std::vector<Decision>& decisions,
                    std::vector<Band>& bands) {
  // Whether `series` lost to the default by more than the noise bar at decisions[i].
  auto loses = [&](int series, size_t i) {
    const Decision& d = decisions[i];
    const SizeStat* st = shape.series[static_cast<size_t>(series)].at(d.size);
    return st == nullptr || st->timeUs / d.defaultTimeUs - 1.0 > d.lossBar;
  };
  size_t first = 0;  // index of the band's first measured size in `decisions`
  for (Band& band : bands) {
    const size_t last = first + static_cast<size_t>(band.sizes) - 1;
    if (band.series != kDefaultChoice) {
      const size_t index = static_cast<size_t>(&band - bands.data());
      if (first > 0 && loses(band.series, first - 1)) {
        band.cliffBelow = true;
        band.lo = band.firstSize;
        // NCCL's default below now reaches up to the band (a chosen band below keeps its edge:
        // the bytes in between are NCCL's).
        if (index > 0 && bands[index - 1].series == kDefaultChoice)
          bands[index - 1].hi = band.lo - 1;
      }
      if (last + 1 < decisions.size() && loses(band.series, last + 1)) {
        band.cliffAbove = true;
        band.hi = band.lastSize;
        if (index + 1 < bands.size() && bands[index + 1].series == kDefaultChoice) {
          bands[index + 1].lo = band.hi + 1;
        }
      }
    }
    first = last + 1;
  }
}

std::vector<tuner::ExpectedTime> expectedTimes(const Series& series, const Band& band, bool perRank,
                                               int ranks, size_t limit) {
  std::vector<tuner::ExpectedTime> all;
  for (const SizeStat& st : series.sizes) {
    if (st.size < band.firstSize || st.size > band.lastSize) continue;
    const uint64_t axis = perRank && ranks > 0 ? st.size / static_cast<uint64_t>(ranks) : st.size;
    if (axis == 0 || (!all.empty() && axis <= all.back().bytes)) continue;  // strictly ascending
    // To the hundredth of a microsecond, as nccl-tests prints times.
    all.push_back({axis, std::round(st.timeUs * 100.0) / 100.0});
  }
  if (all.size() <= limit || limit < 2) {
    if (limit < 2 && all.size() > limit) all.resize(limit);
    return all;
  }
  // Evenly spaced targets in log-size, each taking the nearest point not taken yet: the ends
  // stay, and a band with a denser sweep in one region is not drawn from that region alone.
  const double lo = std::log(static_cast<double>(all.front().bytes));
  const double hi = std::log(static_cast<double>(all.back().bytes));
  std::vector<tuner::ExpectedTime> out;
  size_t next = 0;  // points before `next` are taken or skipped
  for (size_t k = 0; k < limit; ++k) {
    const double target = lo + (hi - lo) * static_cast<double>(k) / static_cast<double>(limit - 1);
    // The nearest point at or after `next`, leaving enough points for the targets still to come.
    const size_t maxIndex = all.size() - (limit - k);
    size_t best = next;
    for (size_t j = next; j <= maxIndex; ++j) {
      const double dj = std::fabs(std::log(static_cast<double>(all[j].bytes)) - target);
      const double db = std::fabs(std::log(static_cast<double>(all[best].bytes)) - target);
      if (dj < db) best = j;
    }
    out.push_back(all[best]);
    next = best + 1;
  }
  return out;
}

}  // namespace pilot::calibration::detail
