// What a shape's decisions rest on: the noise measured over repeats of NCCL's default, or,
// without them, the noise estimated from the data itself, from the twin of the default where
// enough configurations were forced, else from the curves' roughness (docs/calibration.md,
// "Evidence").
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "fit/internal.h"
#include "pilot/calibration/fit.h"

namespace pilot::calibration {
namespace {

/// Median absolute deviation to standard deviation, for normal noise.
constexpr double kMadToSigma = 1.0 / 0.6745;
/// Sizes either side of a size whose samples are pooled with its own.
constexpr size_t kPoolHalfWidth = 2;
/// A robust scale from fewer samples than this is not worth the name.
constexpr size_t kMinPoolSamples = 3;

/// Weights w_j that predict a curve's value at x0 from its values at xs by least squares: a
/// line through two points, a parabola through four. A smooth curve bends little over a few
/// size steps, noise does not; the parabola also absorbs the steady bend of an alpha-beta curve
/// between its latency and bandwidth regimes, which a line would count as noise.
std::vector<double> predictionWeights(const std::vector<double>& xs, double x0) {
  const size_t terms = xs.size() >= 4 ? 3 : 2;
  // Normal equations M a = X^T y for the basis 1, u, u^2 (u = x - x0); the prediction is a0,
  // so w = (first row of M^-1) X^T.
  double m[3][3] = {};
  for (double x : xs) {
    const double u[3] = {1, x - x0, (x - x0) * (x - x0)};
    for (size_t r = 0; r < terms; ++r) {
      for (size_t c = 0; c < terms; ++c) m[r][c] += u[r] * u[c];
    }
  }
  double first[3] = {};
  if (terms == 2) {
    const double det = m[0][0] * m[1][1] - m[0][1] * m[1][0];
    first[0] = m[1][1] / det, first[1] = -m[0][1] / det;
  } else {
    const double c00 = m[1][1] * m[2][2] - m[1][2] * m[2][1];
    const double c01 = m[1][2] * m[2][0] - m[1][0] * m[2][2];
    const double c02 = m[1][0] * m[2][1] - m[1][1] * m[2][0];
    const double det = m[0][0] * c00 + m[0][1] * c01 + m[0][2] * c02;
    // The first row of the inverse is the first column of cofactors over the determinant
    // (M is symmetric).
    first[0] = c00 / det, first[1] = c01 / det, first[2] = c02 / det;
  }
  std::vector<double> w;
  for (double x : xs) {
    const double u[3] = {1, x - x0, (x - x0) * (x - x0)};
    double v = 0;
    for (size_t r = 0; r < terms; ++r) v += first[r] * u[r];
    w.push_back(v);
  }
  return w;
}

/// Noise samples of one measurement's log-time, by size: each is an estimate of its standard
/// deviation from one point.
std::map<uint64_t, std::vector<double>> roughness(const Shape& shape, bool& usedInPlace) {
  std::map<uint64_t, std::vector<double>> samples;
  for (const Series& s : shape.series) {
    const std::vector<SizeStat>& st = s.sizes;
    // Each size against its prediction from the neighbours (two either side where there are,
    // one at the ends): the residual of a prediction with weights w has variance
    // (1 + sum w^2) sigma^2.
    for (size_t k = 1; k + 1 < st.size(); ++k) {
      const size_t reach = k >= 2 && k + 2 < st.size() ? 2 : 1;
      std::vector<double> xs, ys;
      for (size_t j = k - reach; j <= k + reach; ++j) {
        if (j == k) continue;
        xs.push_back(std::log(static_cast<double>(st[j].size)));
        ys.push_back(std::log(st[j].timeUs));
      }
      const std::vector<double> w =
          predictionWeights(xs, std::log(static_cast<double>(st[k].size)));
      double predicted = 0, spread = 1;
      for (size_t j = 0; j < w.size(); ++j) predicted += w[j] * ys[j], spread += w[j] * w[j];
      samples[st[k].size].push_back(std::fabs(std::log(st[k].timeUs) - predicted) /
                                    std::sqrt(spread));
    }
    // nccl-tests times the two placements separately; where both were printed and differ, their
    // difference is noise too (plus whatever the placement changes, which only raises the bar).
    for (const SizeStat& x : s.sizes) {
      if (x.inPlaceUs > 0 && x.inPlaceUs != x.timeUs) {
        samples[x.size].push_back(std::fabs(std::log(x.timeUs / x.inPlaceUs)) / std::sqrt(2.0));
        usedInPlace = true;
      }
    }
  }
  return samples;
}

/// A configuration that may be what NCCL picked by itself: it forces an algorithm or a protocol,
/// not a channel count.
bool mayBeNcclsPick(const Series& s) {
  return !s.isDefault() && s.config.minChannels == 0 && s.config.maxChannels == 0;
}

/// Whether NCCL's own pick was among the forced configurations at every size: each protocol
/// NCCL can pick (LL, LL128, Simple) was forced alone by one of them. Otherwise the forced
/// configuration nearest the default may be another protocol altogether (a default that keeps
/// LL beside forced LL128, Simple and Tree) and its distance no sample of the noise.
bool coversEveryProtocol(const Shape& shape) {
  bool ll = false, ll128 = false, simple = false;
  for (const Series& s : shape.series) {
    if (!mayBeNcclsPick(s)) continue;
    std::string p = s.config.proto;
    for (char& c : p) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ll = ll || p == "ll", ll128 = ll128 || p == "ll128", simple = simple || p == "simple";
  }
  return ll && ll128 && simple;
}

/// The twin of the default at each of its sizes (ShapeEvidence::twin): the forced configuration
/// whose log-time is nearest the default's, where at least two that may be NCCL's pick were
/// measured (with only one, the twin could as well be the configuration that wins).
struct Twins {
  std::vector<int> series;
  std::vector<double> distance, lead;
  std::vector<double> found;  ///< the distances of the sizes that have a twin
};

Twins findTwins(const Shape& shape, const Series& def) {
  Twins t;
  for (const SizeStat& d : def.sizes) {
    int twin = -1, forced = 0;
    double distance = 0, lead = 0;
    for (size_t c = 0; c < shape.series.size(); ++c) {
      if (!mayBeNcclsPick(shape.series[c])) continue;
      const SizeStat* st = shape.series[c].at(d.size);
      if (st == nullptr || !(st->timeUs > 0)) continue;
      ++forced;
      const double diff = std::log(d.timeUs / st->timeUs);  // > 0: faster than the default
      if (twin < 0 || std::fabs(diff) < distance) {
        twin = static_cast<int>(c), distance = std::fabs(diff), lead = std::max(diff, 0.0);
      }
    }
    if (forced < 2) twin = -1, distance = 0, lead = 0;
    t.series.push_back(twin);
    t.distance.push_back(distance);
    t.lead.push_back(lead);
    if (twin >= 0) t.found.push_back(distance);
  }
  return t;
}

std::string range(const std::vector<double>& v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *lo == *hi ? percent(*lo) : percent(*lo) + ".." + percent(*hi);
}

}  // namespace

const char* evidenceName(EvidenceKind kind) {
  switch (kind) {
    case EvidenceKind::Repeats:
      return "repeats";
    case EvidenceKind::Estimated:
      return "estimated noise";
    case EvidenceKind::Calls:
      return "per-call samples";
    case EvidenceKind::TooLittle:
      break;
  }
  return "too little evidence";
}

double ShapeEvidence::noiseBar(size_t i) const {
  return std::max(floor, i < noise.size() ? noise[i] : 0.0);
}

double ShapeEvidence::bar(size_t i) const {
  const double lead = i < twinLead.size() ? twinLead[i] : 0.0;
  return lead > 0 ? 1.0 - (1.0 - noiseBar(i)) * std::exp(-lead) : noiseBar(i);
}

ShapeEvidence assessEvidence(const Shape& shape, const FitOptions& options) {
  if (shape.perCall) return detail::assessCallsEvidence(shape, options);
  ShapeEvidence ev;
  const Series* def = shape.defaults();
  if (def == nullptr) {
    ev.summary = "too little evidence: NCCL's default was not measured, nothing to compare against";
    return ev;
  }
  ev.defaultRuns = static_cast<int>(def->runs.size());
  const size_t n = def->sizes.size();
  if (ev.defaultRuns >= options.minRepeats) {
    ev.kind = EvidenceKind::Repeats;
    ev.floor = options.margin;
    ev.bandSizes = 2;
    for (size_t i = 0; i < n; ++i) ev.noise.push_back(noiseAt(shape, i, options.minRepeats));
    std::vector<double> bars;
    for (size_t i = 0; i < n; ++i) bars.push_back(ev.bar(i));
    if (ev.defaultRuns == 1) {
      ev.summary = "single runs taken at face value (--min-repeats 1): the bar is the margin " +
                   percent(options.margin) + "; a band needs 2 adjacent winning sizes";
    } else {
      ev.summary = "noise measured: the default ran " + std::to_string(ev.defaultRuns) +
                   " times; bar max(margin " + percent(options.margin) +
                   ", the largest spread over repeats at the size and its neighbours)" +
                   (bars.empty() ? std::string() : " = " + range(bars)) +
                   "; a band needs 2 adjacent winning sizes";
    }
    return ev;
  }
  const std::string runs = "the default ran " + std::to_string(ev.defaultRuns) +
                           " time(s), fewer than --min-repeats " +
                           std::to_string(options.minRepeats);
  if (n < static_cast<size_t>(kMinSizesToEstimateNoise)) {
    ev.summary = "too little evidence: " + runs + ", and " + std::to_string(n) +
                 " measured size(s) are too few to estimate the noise from (at least " +
                 std::to_string(kMinSizesToEstimateNoise) + "): nothing is overridden";
    return ev;
  }

  ev.kind = EvidenceKind::Estimated;
  ev.floor = kEstimatedMarginFactor * options.margin;
  ev.bandSizes = kEstimatedBandSizes;
  const std::string needs =
      "; a band needs " + std::to_string(kEstimatedBandSizes) + " adjacent winning sizes";
  const std::string deviations = std::to_string(static_cast<int>(kEstimatedNoiseDeviations));

  const bool covered = coversEveryProtocol(shape);
  Twins twins = findTwins(shape, *def);
  if (covered && twins.found.size() >= static_cast<size_t>(kMinSizesToEstimateNoise)) {
    ev.source = NoiseSource::Twin;
    const double sigmaDiff = std::max(median(twins.found) / kTwinMedianToSigma, kMinTwinSigma);
    for (size_t i = 0; i < n; ++i) {
      // The largest twin distance at the size and its two neighbours: noise that changes with
      // size (or a twin that is not one) shows there before it moves the median.
      double local = 0;
      for (size_t k = i == 0 ? 0 : i - 1; k <= std::min(i + 1, n - 1); ++k) {
        if (twins.series[k] >= 0) local = std::max(local, twins.distance[k]);
      }
      ev.sigma.push_back(sigmaDiff / std::sqrt(2.0));
      const double estimated =
          1.0 - std::exp(-kEstimatedNoiseDeviations * std::max(sigmaDiff, local));
      ev.noise.push_back(std::max(estimated, noiseAt(shape, i, options.minRepeats)));
    }
    ev.twin = std::move(twins.series);
    ev.twinDistance = std::move(twins.distance);
    ev.twinLead = std::move(twins.lead);
    std::vector<double> bars;
    for (size_t i = 0; i < n; ++i) bars.push_back(ev.bar(i));
    ev.summary =
        "estimated noise from the twin of the default: " + runs +
        "; at each size the forced configuration nearest the default (what NCCL picked there "
        "anyway: a second run of it) differs from it by " +
        range(twins.found) + " in log-time, median " + percent(median(twins.found)) + " (" +
        std::to_string(twins.found.size()) + " of " + std::to_string(n) +
        " sizes), so a difference of two runs has sigma max(median / 0.674, " +
        percent(kMinTwinSigma) + ") = " + percent(sigmaDiff) + "; bar max(" + percent(ev.floor) +
        ", " + deviations +
        " x the larger of sigma and the largest twin distance at the size and its neighbours), "
        "over the faster of the default and its twin, = " +
        range(bars) + needs;
    return ev;
  }

  const std::map<uint64_t, std::vector<double>> samples = roughness(shape, ev.usedInPlace);
  for (size_t i = 0; i < n; ++i) {
    // Pool the samples of the size and its neighbours (noise changes slowly with size), widening
    // until there are enough for a robust scale.
    std::vector<double> pool;
    for (size_t half = kPoolHalfWidth; pool.size() < kMinPoolSamples && half <= n; ++half) {
      pool.clear();
      const uint64_t lo = def->sizes[i >= half ? i - half : 0].size;
      const uint64_t hi = def->sizes[std::min(i + half, n - 1)].size;
      for (auto it = samples.lower_bound(lo); it != samples.end() && it->first <= hi; ++it) {
        pool.insert(pool.end(), it->second.begin(), it->second.end());
      }
    }
    const double sigma = pool.empty() ? 0.0 : median(pool) * kMadToSigma;
    ev.sigma.push_back(sigma);
    // A gain compares two single measurements: their log difference has sigma * sqrt(2).
    const double estimated = 1.0 - std::exp(-kEstimatedNoiseDeviations * std::sqrt(2.0) * sigma);
    // Configurations that were repeated measured part of the noise outright.
    ev.noise.push_back(std::max(estimated, noiseAt(shape, i, options.minRepeats)));
  }
  std::vector<double> bars;
  for (size_t i = 0; i < n; ++i) bars.push_back(ev.bar(i));
  ev.summary = "noise estimated: " + runs +
               "; from the roughness of each configuration's log-time against log-size (around "
               "the parabola through its neighbours)" +
               (ev.usedInPlace ? " and in-place against out-of-place times" : "") + ", " +
               percent(*std::min_element(ev.sigma.begin(), ev.sigma.end())) + ".." +
               percent(*std::max_element(ev.sigma.begin(), ev.sigma.end())) +
               " per measurement; bar max(" + percent(ev.floor) + ", " + deviations +
               " standard deviations of a difference of two runs) = " + range(bars) + needs +
               (covered ? "; no twin of the default: fewer than " +
                              std::to_string(kMinSizesToEstimateNoise) +
                              " sizes with two forced configurations"
                        : "; no twin of the default: LL, LL128 and Simple were not each forced, "
                          "so NCCL's own pick may not have been measured");
  return ev;
}

}  // namespace pilot::calibration
