// What a shape of per-call samples (the profiler's metrics) rests on: at each size the baseline
// (what the job ran most) against each alternative, with standard errors from the calls
// (docs/calibration.md, "Calibrate from your jobs").
#include <algorithm>
#include <cmath>

#include "fit/internal.h"
#include "pilot/calibration/fit.h"
#include "pilot/calibration/metrics_summary.h"

namespace pilot::calibration {
namespace {

/// The alternative's statistics are the baseline's own: it is the configuration the job ran.
bool isBaseline(const SizeStat& st, const SizeStat& def) {
  return st.calls == def.calls && st.timeUs == def.timeUs && st.logSigma == def.logSigma;
}

std::string range(double lo, double hi, bool asPercent) {
  auto one = [&](double v) {
    return asPercent ? percent(v) : std::to_string(static_cast<unsigned long long>(v));
  };
  return lo == hi ? one(lo) : one(lo) + ".." + one(hi);
}

}  // namespace

double callsBar(const SizeStat& alt, const SizeStat& def, double floor) {
  if (alt.calls == 0 || def.calls == 0) return 1.0;
  const double s = std::max(alt.logSigma, def.logSigma);
  const double se = std::sqrt(s * s / static_cast<double>(alt.calls) +
                              def.logSigma * def.logSigma / static_cast<double>(def.calls));
  return std::max(floor, 1.0 - std::exp(-kCallsDeviations * se));
}

namespace detail {

ShapeEvidence assessCallsEvidence(const Shape& shape, const FitOptions& options) {
  ShapeEvidence ev;
  const Series* def = shape.defaults();
  if (def == nullptr || def->sizes.empty()) {
    ev.summary = "too little evidence: no calls measured";
    return ev;
  }
  ev.defaultRuns = static_cast<int>(def->runs.size());
  ev.floor = options.callsMargin;
  ev.bandSizes = 1;
  double baseLo = 1e300, baseHi = 0, altLo = 1e300, altHi = 0, sigLo = 1e300, sigHi = 0;
  double barLo = 1, barHi = 0;
  size_t alternatives = 0, usable = 0;
  for (const SizeStat& d : def->sizes) {
    const double c = static_cast<double>(d.calls);
    baseLo = std::min(baseLo, c), baseHi = std::max(baseHi, c);
    sigLo = std::min(sigLo, d.logSigma), sigHi = std::max(sigHi, d.logSigma);
    ev.sigma.push_back(d.logSigma);
    // The noise at the size: what a difference must exceed to count, for the least sampled
    // alternative there (the baseline against itself where none ran enough calls).
    double noise = -1;
    for (const Series& s : shape.series) {
      const SizeStat* st = s.isDefault() ? nullptr : s.at(d.size);
      if (st == nullptr || isBaseline(*st, d)) continue;
      ++alternatives;
      const double n = static_cast<double>(st->calls);
      altLo = std::min(altLo, n), altHi = std::max(altHi, n);
      if (st->calls < kMinCalls || d.calls < kMinCalls) continue;
      ++usable;
      noise = std::max(noise, callsBar(*st, d, 0.0));
      barLo = std::min(barLo, callsBar(*st, d, ev.floor));
      barHi = std::max(barHi, callsBar(*st, d, ev.floor));
    }
    if (noise < 0) {
      noise = d.calls == 0
                  ? 1.0
                  : 1.0 - std::exp(-kCallsDeviations * std::sqrt(2.0) * d.logSigma / std::sqrt(c));
    }
    ev.noise.push_back(noise);
  }
  const std::string minCalls = std::to_string(kMinCalls);
  if (alternatives == 0) {
    ev.summary =
        "too little evidence: only the job's own choice ran at every size, no alternative to "
        "compare it with (run the job with NCCL_PILOT_TUNER_EXPLORE=0.05): nothing is "
        "overridden";
    return ev;
  }
  if (usable == 0) {
    ev.summary = "too little evidence: no alternative ran " + minCalls +
                 " calls at any size (at most " + range(altHi, altHi, false) +
                 "; run the job longer, or with a larger NCCL_PILOT_TUNER_EXPLORE): nothing "
                 "is overridden";
    return ev;
  }
  ev.kind = EvidenceKind::Calls;
  ev.summary =
      "per-call samples, ranks and jobs pooled: at each size the baseline (the configuration "
      "the job ran most) ran " +
      range(baseLo, baseHi, false) + " calls, the alternatives " + range(altLo, altHi, false) +
      "; per-call noise " + range(sigLo, sigHi, true) +
      " (winsorized sd of log time / 0.8); a gain must beat max(margin " + percent(ev.floor) +
      ", " + std::to_string(static_cast<int>(kCallsDeviations)) +
      " standard errors of the difference of the 10%-trimmed means of log time) = " +
      range(barLo, barHi, true) + "; fewer than " + minCalls +
      " calls at a size never override; one winning size makes a band";
  return ev;
}

void keepTableChoices(const Shape& shape, const std::vector<bool>& expressible,
                      std::vector<Decision>& decisions) {
  const Series* def = shape.defaults();
  if (def == nullptr) return;
  for (Decision& d : decisions) {
    if (d.chosen != kDefaultChoice) continue;
    const SizeStat* base = def->at(d.size);
    if (base == nullptr || base->keptSeries < 0) continue;
    const size_t kept = static_cast<size_t>(base->keptSeries);
    if (kept >= shape.series.size() || !expressible[kept]) continue;
    d.chosen = base->keptSeries;
    d.chosenLabel = shape.series[kept].label;
    d.timeUs = d.defaultTimeUs;
    d.gain = 0;
    d.reason = "keeps the table's choice " + d.chosenLabel + " (a rule chose it in the job; " +
               d.reason + ")";
  }
}

}  // namespace detail
}  // namespace pilot::calibration
