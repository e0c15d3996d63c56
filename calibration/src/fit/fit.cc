#include "pilot/calibration/fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <set>

#include "fit/bands.h"
#include "fit/internal.h"
#include "pilot/core/text.h"

namespace pilot::calibration {

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100.0);
  return buf;
}

double noiseAt(const Shape& shape, size_t i, int minRepeats) {
  const Series* def = shape.defaults();
  if (def == nullptr || i >= def->sizes.size()) return 0;
  double noise = 0;
  const size_t lo = i == 0 ? 0 : i - 1;
  const size_t hi = std::min(i + 1, def->sizes.size() - 1);
  for (const Series& s : shape.series) {
    if (static_cast<int>(s.runs.size()) < minRepeats) continue;
    for (size_t k = lo; k <= hi; ++k) {
      if (const SizeStat* st = s.at(def->sizes[k].size)) noise = std::max(noise, st->spread);
    }
  }
  return noise;
}

namespace detail {

std::string formatTime(double us) {
  char buf[32];
  if (us >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.3g s", us / 1e6);
  } else if (us >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.3g ms", us / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g us", us);
  }
  return buf;
}

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string pad(const std::string& s, size_t width, bool right) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

std::string utcNow(const char* format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string bytes(uint64_t v) {
  return text::formatBytes(v);
}

std::string bandRange(const Band& band, const std::string& separator) {
  // An upper edge just below a round size (a default band up to a cliff-safe edge) reads
  // "4M-1", not "4194303".
  auto upper = [](uint64_t hi) {
    const std::string plain = bytes(hi), next = bytes(hi + 1);
    return plain == std::to_string(hi) && next != std::to_string(hi + 1) ? next + "-1" : plain;
  };
  return (band.lo == 0      ? std::string("0")
          : band.cliffBelow ? bytes(band.lo)
                            : bytes(band.lo - 1)) +
         separator + (band.hi == UINT64_MAX ? std::string() : upper(band.hi));
}

namespace {

struct Candidate {
  int series = 0;
  double timeUs = 0, gain = 0, threshold = 0;
};

/// One configuration per size, or the default. No configuration wins a size alone: across many
/// sizes and configurations some medians beat the noise bar by luck (about one size in a
/// thousand with three repeats of +-10% noise), but real crossovers span neighbouring sizes;
/// with estimated noise the run must be longer. So a configuration can be chosen only inside a
/// run of at least `bandSizes` adjacent sizes where it passed, and there, where several can,
/// the fastest is. A stretch shorter than that which one configuration took from another (a
/// near tie inside the other's run) goes back to its neighbour where that passed at every size
/// of it, else to the default: a second configuration faster at one size cannot break a band
/// the first one earned, and no band is shorter than `bandSizes`.
std::vector<int> chooseBands(const std::vector<std::vector<Candidate>>& candidates,
                             size_t bandSizes) {
  const size_t n = candidates.size();
  auto passed = [&](size_t i, int series) -> const Candidate* {
    for (const Candidate& c : candidates[i]) {
      if (c.series == series) return &c;
    }
    return nullptr;
  };
  std::set<int> all;
  for (const auto& list : candidates) {
    for (const Candidate& c : list) all.insert(c.series);
  }
  std::vector<int> choice(n, kDefaultChoice);
  std::vector<double> chosenUs(n, std::numeric_limits<double>::infinity());
  for (int series : all) {
    for (size_t i = 0; i < n;) {
      size_t end = i;
      while (end < n && passed(end, series) != nullptr) ++end;
      if (end - i >= bandSizes) {
        for (size_t k = i; k < end; ++k) {
          const double t = passed(k, series)->timeUs;
          if (t < chosenUs[k]) chosenUs[k] = t, choice[k] = series;
        }
      }
      i = std::max(end, i + 1);
    }
  }
  // Short stretches, first to last, until none is left (each pass shortens or merges one).
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n && !changed;) {
      size_t end = i + 1;
      while (end < n && choice[end] == choice[i]) ++end;
      if (choice[i] != kDefaultChoice && end - i < bandSizes) {
        auto passesAll = [&](int series) {
          if (series == kDefaultChoice) return false;
          for (size_t k = i; k < end; ++k) {
            if (passed(k, series) == nullptr) return false;
          }
          return true;
        };
        const int left = i > 0 ? choice[i - 1] : kDefaultChoice;
        const int right = end < n ? choice[end] : kDefaultChoice;
        const int to = passesAll(left) ? left : passesAll(right) ? right : kDefaultChoice;
        for (size_t k = i; k < end; ++k) choice[k] = to;
        changed = true;
      }
      i = end;
    }
  }
  return choice;
}

}  // namespace

std::vector<Decision> decideShape(const Shape& shape, const std::vector<bool>& expressible,
                                  const ShapeEvidence& evidence, std::string& note) {
  std::vector<Decision> out;
  const Series* def = shape.defaults();
  if (def == nullptr) {
    note = "NCCL's default was not measured: nothing to compare against";
    return out;
  }
  const bool trusted = evidence.kind != EvidenceKind::TooLittle;
  const bool calls = evidence.kind == EvidenceKind::Calls;
  if (!trusted) note = evidence.summary;
  const size_t bandSizes = static_cast<size_t>(std::max(1, evidence.bandSizes));

  // Candidates per size: configurations whose gain beats the noise there, fastest first.
  const size_t n = def->sizes.size();
  std::vector<std::vector<Candidate>> candidates(n);
  std::vector<Decision> base(n);
  std::vector<uint64_t> fastestCallsAt(n, 0), baselineCalls(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const SizeStat& d = def->sizes[i];
    Decision& dec = base[i];
    dec.shape = shape.key;
    dec.size = d.size;
    dec.defaultTimeUs = d.timeUs;
    dec.defaultSpread = d.spread;
    dec.spread = i < evidence.noise.size() ? evidence.noise[i] : 0.0;
    dec.threshold = evidence.bar(i);
    dec.lossBar = evidence.noiseBar(i);
    uint64_t fastestCalls = 0;
    dec.fastestLabel = "default";
    double fastestTime = d.timeUs;
    for (size_t c = 0; c < shape.series.size(); ++c) {
      const Series& s = shape.series[c];
      if (s.isDefault() || !expressible[c]) continue;
      const SizeStat* st = s.at(d.size);
      if (st == nullptr) continue;
      // Per-call samples: each alternative's bar comes from its own calls and the baseline's.
      const Candidate cand{static_cast<int>(c), st->timeUs, 1.0 - st->timeUs / d.timeUs,
                           calls ? callsBar(*st, d, evidence.floor) : dec.threshold};
      if (st->timeUs < fastestTime) {
        fastestTime = st->timeUs;
        dec.fastest = cand.series;
        dec.fastestLabel = s.label;
        dec.fastestGain = cand.gain;
        fastestCalls = st->calls;
        if (calls) dec.threshold = cand.threshold;
      }
      // Faster by more than the noise, and in every run: no repeat of the configuration may
      // be slower than the default's fastest (one repeat's luck must not carry a median).
      // Per-call samples: enough calls of both instead (the bar holds their standard errors).
      const bool everyRun =
          calls ? st->calls >= kMinCalls && d.calls >= kMinCalls : st->maxUs < d.minUs;
      if (trusted && cand.gain > cand.threshold && everyRun) candidates[i].push_back(cand);
    }
    fastestCallsAt[i] = fastestCalls, baselineCalls[i] = d.calls;
    std::sort(candidates[i].begin(), candidates[i].end(),
              [](const Candidate& a, const Candidate& b) { return a.timeUs < b.timeUs; });
  }

  const std::vector<int> choice = chooseBands(candidates, bandSizes);
  for (size_t i = 0; i < n; ++i) {
    Decision dec = base[i];
    const Candidate* picked = nullptr;
    for (const Candidate& c : candidates[i]) {
      if (c.series == choice[i]) picked = &c;
    }
    if (picked != nullptr) {
      dec.chosen = picked->series;
      dec.chosenLabel = shape.series[static_cast<size_t>(picked->series)].label;
      dec.timeUs = picked->timeUs;
      dec.gain = picked->gain;
      dec.threshold = picked->threshold;
      dec.reason = "gain " + percent(dec.gain) + " beats the noise bar " + percent(dec.threshold);
    } else {
      dec.chosenLabel = "default";
      dec.timeUs = dec.defaultTimeUs;
      if (!trusted) {
        dec.reason = "too little evidence to override NCCL";
      } else if (dec.fastest == kDefaultChoice) {
        dec.reason = "the default is the fastest measured";
      } else if (!candidates[i].empty()) {
        dec.reason = bandSizes <= 2
                         ? std::string(
                               "a win at this size alone (a band needs two "
                               "adjacent sizes)")
                         : "a win alone or in too short a run (with " +
                               std::string(evidenceName(evidence.kind)) + " a band needs " +
                               std::to_string(bandSizes) + " adjacent sizes)";
      } else if (calls && baselineCalls[i] < kMinCalls) {
        dec.reason = "the baseline ran only " + std::to_string(baselineCalls[i]) +
                     " calls here (fewer than " + std::to_string(kMinCalls) + ")";
      } else if (calls && fastestCallsAt[i] < kMinCalls) {
        dec.reason = dec.fastestLabel + " ran only " + std::to_string(fastestCallsAt[i]) +
                     " calls here (fewer than " + std::to_string(kMinCalls) +
                     "): too few to "
                     "override NCCL";
      } else if (dec.fastestGain > dec.threshold) {
        dec.reason = "a run of " + dec.fastestLabel + " was slower than the default's fastest";
      } else {
        dec.reason = dec.fastestLabel + "'s gain " + percent(dec.fastestGain) +
                     " does not beat the noise bar " + percent(dec.threshold);
      }
    }
    out.push_back(std::move(dec));
  }
  return out;
}

SizeExtension extendLastBand(const Shape& shape, const Decision& last, std::vector<Band>& bands) {
  SizeExtension ext;
  if (bands.empty() || bands.back().series == kDefaultChoice) return ext;
  Band& band = bands.back();
  const Series& chosen = shape.series[static_cast<size_t>(band.series)];
  const Series& def = *shape.defaults();
  ext.attempted = true;
  ext.label = chosen.label;
  // The models are fitted over the top four octaves: the bandwidth regime that continues past
  // the sweep, not the latency regime of small messages.
  const double from = static_cast<double>(band.lastSize) / 16.0;
  auto top = [from](const Series& s) {
    std::vector<SizeTime> pts;
    for (const SizeStat& st : s.sizes) {
      if (static_cast<double>(st.size) >= from)
        pts.push_back({static_cast<double>(st.size), st.timeUs});
    }
    return pts;
  };
  const auto pc = top(chosen), pd = top(def);
  if (pc.size() < 3 || pd.size() < 3) {
    ext.note = "fewer than 3 sizes in the top 4 octaves: not extended";
    return ext;
  }
  ext.chosen = fitAlphaBeta(pc);
  ext.defaults = fitAlphaBeta(pd);
  if (!ext.chosen.ok || !ext.defaults.ok) {
    ext.note = "no positive bandwidth in the alpha-beta fit: not extended";
    return ext;
  }
  const double s = static_cast<double>(band.lastSize);
  const double thr = last.threshold;
  ext.gainAtLargest = 1.0 - ext.chosen.predict(s) / ext.defaults.predict(s);
  ext.gainLimit = 1.0 - ext.chosen.usPerByte / ext.defaults.usPerByte;
  if (!(ext.gainAtLargest > thr)) {
    ext.note = "the models' gain at the largest size, " + percent(ext.gainAtLargest) +
               ", does not beat " + percent(thr) + ": not extended";
    return ext;
  }
  // time_c / time_d is monotonic in size for two alpha-beta lines, so the gain moves from
  // gainAtLargest towards gainLimit and crosses the threshold at most once.
  const double k = 1.0 - thr;
  const double cross = (k * ext.defaults.alphaUs - ext.chosen.alphaUs) /
                       (ext.chosen.usPerByte - k * ext.defaults.usPerByte);
  if (ext.gainLimit > thr || !(cross < 1.8e19)) {
    ext.until = UINT64_MAX;
    ext.note = "extended to every larger size (model gain tends to " + percent(ext.gainLimit) + ")";
  } else {
    ext.until = std::max<uint64_t>(band.lastSize,
                                   roundDownNice(static_cast<uint64_t>(std::max(cross, 0.0))));
    ext.note =
        "extended to " + bytes(ext.until) + ", where the model gain falls to " + percent(thr);
  }
  band.extended = ext.until > band.lastSize;
  band.hi = ext.until;
  return ext;
}

}  // namespace detail

namespace {

using detail::bytes;

tuner::Rule shapeRule(const ShapeKey& key) {
  tuner::Rule r;
  auto coll = tuner::parseCollective(key.collective);
  r.collectives = coll ? tuner::bit(*coll) : 0;
  if (key.nodes > 0) r.nodes = tuner::Range::exactly(static_cast<uint64_t>(key.nodes));
  if (key.ranks > 0) r.ranks = tuner::Range::exactly(static_cast<uint64_t>(key.ranks));
  return r;
}

std::string gains(const Band& b) {
  return b.minGain == b.maxGain ? percent(b.minGain)
                                : percent(b.minGain) + ".." + percent(b.maxGain);
}

std::string measuredSizes(const Band& b) {
  return std::to_string(b.sizes) + " measured size" + (b.sizes == 1 ? " " : "s ") +
         bytes(b.firstSize) + (b.sizes == 1 ? "" : ".." + bytes(b.lastSize));
}

/// The bars a band's sizes had to beat, "10.0%..17.2%".
std::string bars(const Band& b, const std::vector<Decision>& decisions) {
  double lo = 1, hi = 0;
  for (const Decision& d : decisions) {
    if (d.size < b.firstSize || d.size > b.lastSize) continue;
    lo = std::min(lo, d.threshold), hi = std::max(hi, d.threshold);
  }
  if (hi < lo) return "";
  return lo == hi ? percent(lo) : percent(lo) + ".." + percent(hi);
}

/// What a band of a measured shape rests on, for its rule's comment.
std::string evidenceOf(const Shape& shape, const Band& b, const ShapeEvidence& ev,
                       const std::vector<Decision>& decisions) {
  std::string s = "evidence: " + std::string(evidenceName(ev.kind));
  if (ev.kind == EvidenceKind::Repeats) {
    s += " (default x" + std::to_string(ev.defaultRuns) + ")";
  } else if (ev.kind == EvidenceKind::Calls) {
    uint64_t lo = UINT64_MAX, hi = 0, baseLo = UINT64_MAX, baseHi = 0;
    for (const SizeStat& st : shape.series[static_cast<size_t>(b.series)].sizes) {
      if (st.size < b.firstSize || st.size > b.lastSize) continue;
      lo = std::min(lo, st.calls), hi = std::max(hi, st.calls);
      if (const SizeStat* d = shape.defaults()->at(st.size)) {
        baseLo = std::min(baseLo, d->calls), baseHi = std::max(baseHi, d->calls);
      }
    }
    auto span = [](uint64_t a, uint64_t z) {
      return a == z ? std::to_string(a) : std::to_string(a) + ".." + std::to_string(z);
    };
    s += " (" + span(lo, hi) + " calls of it against the baseline's " + span(baseLo, baseHi) + ")";
  } else if (ev.kind == EvidenceKind::Estimated) {
    if (ev.source == NoiseSource::Twin) s += " from the twin of the default";
    s += " (default x" + std::to_string(ev.defaultRuns) + ", " + std::to_string(ev.bandSizes) +
         "+ adjacent sizes)";
  }
  s += ", bar " + bars(b, decisions);
  if (b.cliffBelow || b.cliffAbove) {
    s += std::string("; edge at the measured size ") +
         (b.cliffBelow && b.cliffAbove ? "on both sides"
          : b.cliffBelow               ? "below"
                                       : "above") +
         " (the neighbour loses beyond the bar)";
  }
  return s;
}

void addBandRule(std::vector<FittedRule>& rules, tuner::Rule shape, const tuner::Rule& choice,
                 const Band& band, const std::string& comment) {
  // Written edge to edge (size=88K..704K), as people write tables: the edge byte itself also
  // matches the band below, whose rule comes first and wins it, so only where the band below
  // is NCCL's default does that one byte, an arbitrary point between two measured sizes, go
  // to this rule instead. A cliff-safe edge is the measured size itself.
  shape.size = tuner::Range{band.lo == 0 || band.cliffBelow ? band.lo : band.lo - 1, band.hi};
  shape.algorithms = choice.algorithms;
  shape.protocols = choice.protocols;
  shape.channels = choice.channels;
  rules.push_back({shape, comment});
}

}  // namespace

FitResult fit(const Dataset& data, const FitOptions& options) {
  Measurements m = summarize(data);
  m.notes.insert(m.notes.begin(), data.problems.begin(), data.problems.end());
  FitResult result = fit(m, options);
  // Dataset::problems were not the measurements' own notes.
  result.data.notes.erase(result.data.notes.begin(),
                          result.data.notes.begin() + static_cast<long>(data.problems.size()));
  return result;
}

FitResult fit(const Measurements& data, const FitOptions& options) {
  FitResult result;
  result.options = options;
  result.data = data;
  for (const std::string& p : result.data.notes) result.notes.push_back(p);

  std::set<std::string> versions;
  for (const Shape& shape : result.data.shapes) {
    if (!shape.ncclVersion.empty()) versions.insert(shape.ncclVersion);
  }
  if (versions.size() == 1) result.ncclVersion = *versions.begin();

  // Setups the table cannot tell apart: the same collective, nodes, ranks and keys.
  std::map<std::tuple<std::string, int, int, uint64_t, uint64_t, int>, std::vector<std::string>>
      setups;
  for (const Shape& shape : result.data.shapes) {
    ShapeFit sf;
    sf.key = shape.key;
    std::vector<bool> expressible(shape.series.size(), false);
    std::vector<tuner::Rule> choices(shape.series.size());
    for (size_t c = 0; c < shape.series.size(); ++c) {
      if (shape.series[c].isDefault()) continue;
      auto rule = ruleForConfig(shape.series[c].config);
      expressible[c] = rule.ok();
      if (rule.ok()) choices[c] = *rule;
    }
    sf.evidence = assessEvidence(shape, options);
    detail::assignKeys(shape, options, sf);
    std::vector<Decision> decisions = detail::decideShape(shape, expressible, sf.evidence, sf.note);
    if (shape.perCall) detail::keepTableChoices(shape, expressible, decisions);
    if (!decisions.empty() && shape.key.nodes <= 0 && shape.key.ranks <= 0) {
      // A rule without nodes= or ranks= would apply to every communicator.
      sf.note = "node and rank counts unknown: no rules (they would apply to every shape)";
      for (Decision& d : decisions) {
        d.chosen = kDefaultChoice, d.chosenLabel = "default", d.timeUs = d.defaultTimeUs;
        d.gain = 0, d.reason = "shape unknown";
      }
    }
    std::vector<detail::SizeChoice> sc;
    for (const Decision& d : decisions) sc.push_back({d.size, d.chosen, d.chosenLabel, d.gain});
    sf.bands = detail::makeBands(sc);
    detail::cliffSafeEdges(shape, decisions, sf.bands);
    if (!decisions.empty())
      sf.extension = detail::extendLastBand(shape, decisions.back(), sf.bands);

    tuner::Rule base = shapeRule(shape.key);
    base.ncclVersions = sf.ncclVersions;
    base.fabrics = sf.fabrics;
    for (const Band& band : sf.bands) {
      if (band.series == kDefaultChoice) continue;
      const Series& chosen = shape.series[static_cast<size_t>(band.series)];
      tuner::Rule rule = base;
      rule.expected =
          detail::expectedTimes(chosen, band, rule.perRankSize, shape.key.ranks, kMaxExpectPoints);
      addBandRule(result.rules, rule, choices[static_cast<size_t>(band.series)], band,
                  shape.key.str() + ": " + band.label + " " + gains(band) +
                      " faster than the default at " + measuredSizes(band) + "; " +
                      evidenceOf(shape, band, sf.evidence, decisions) +
                      (band.extended ? "; " + sf.extension.note : ""));
    }
    if (shape.perCall && sf.evidence.kind == EvidenceKind::Calls &&
        (shape.key.nodes > 0 || shape.key.ranks > 0)) {
      detail::addExploreMarks(shape, choices, base, options, result.marks);
    }
    auto& list = setups[{shape.key.collective, shape.key.nodes, shape.key.ranks, sf.ncclVersions.lo,
                         sf.ncclVersions.hi, sf.fabrics}];
    list.push_back(shape.key.setup);
    result.decisions.insert(result.decisions.end(), decisions.begin(), decisions.end());
    result.shapes.push_back(std::move(sf));
  }
  for (const auto& [key, list] : setups) {
    if (list.size() < 2) continue;
    result.notes.push_back(std::get<0>(key) + " nodes=" + std::to_string(std::get<1>(key)) +
                           " ranks=" + std::to_string(std::get<2>(key)) + " was measured under " +
                           std::to_string(list.size()) +
                           " setups; the table cannot tell them apart, so the first setup's "
                           "rules win: fit each setup's runs separately");
  }

  result.nodeModels = detail::nodeModels(result.data);
  result.nodeRanges =
      detail::nodeRanges(result.data, result.shapes, result.decisions, result.nodeModels);
  for (const NodeRange& range : result.nodeRanges) {
    const Shape* below = nullptr;
    const ShapeFit *fitBelow = nullptr, *fitAbove = nullptr;
    for (size_t i = 0; i < result.data.shapes.size(); ++i) {
      const Shape& s = result.data.shapes[i];
      if (s.key.collective != range.collective || s.key.setup != range.setup ||
          s.key.ranksPerNode() != range.ranksPerNode) {
        continue;
      }
      if (s.key.nodes == range.below) below = &s, fitBelow = &result.shapes[i];
      if (s.key.nodes == range.above) fitAbove = &result.shapes[i];
    }
    if (below == nullptr) continue;
    tuner::Rule base = shapeRule(below->key);
    // Keys only where both measured node counts ran under the same ones.
    if (fitAbove != nullptr && fitAbove->ncclVersions.lo == fitBelow->ncclVersions.lo &&
        fitAbove->ncclVersions.hi == fitBelow->ncclVersions.hi) {
      base.ncclVersions = fitBelow->ncclVersions;
    }
    if (fitAbove != nullptr && fitAbove->fabrics == fitBelow->fabrics) {
      base.fabrics = fitBelow->fabrics;
    }
    base.nodes = tuner::Range{static_cast<uint64_t>(range.below + 1),
                              static_cast<uint64_t>(range.above - 1)};
    base.ranks = tuner::Range{};
    base.ranksPerNode = tuner::Range::exactly(static_cast<uint64_t>(range.ranksPerNode));
    const std::string nodes =
        range.below + 1 == range.above - 1
            ? std::to_string(range.below + 1)
            : std::to_string(range.below + 1) + ".." + std::to_string(range.above - 1);
    const std::string where = range.collective + " nodes=" + nodes +
                              " rpn=" + std::to_string(range.ranksPerNode) + " (not measured)";
    for (size_t b = 0; b < range.bands.size(); ++b) {
      const Band& band = range.bands[b];
      if (band.series == kDefaultChoice) continue;
      auto choice = ruleForConfig(below->series[static_cast<size_t>(band.series)].config);
      if (!choice.ok()) continue;
      addBandRule(result.rules, base, *choice, band,
                  where + ": " + band.label + " won at both " + std::to_string(range.below) +
                      " and " + std::to_string(range.above) + " nodes at " + measuredSizes(band) +
                      "; the node model predicts " + gains(band) +
                      " in between (its held-out error: " + percent(range.modelError[b]) +
                      "); no expect=: nothing was measured at these node counts");
    }
  }
  // Table order: by collective, then node count, then size. Rules overlap only in a shared
  // band edge, which ascending sizes give to the lower band, as Band says.
  std::stable_sort(result.rules.begin(), result.rules.end(),
                   [](const FittedRule& a, const FittedRule& b) {
                     return std::tie(a.rule.collectives, a.rule.nodes.lo, a.rule.size.lo) <
                            std::tie(b.rule.collectives, b.rule.nodes.lo, b.rule.size.lo);
                   });
  return result;
}

}  // namespace pilot::calibration
