// A table scored on sweeps: per measured size, the configuration the table makes NCCL run
// against NCCL's default and the fastest configuration the sweep measured there.
#include <cmath>
#include <limits>
#include <set>

#include "evaluate/apply_table.h"
#include "pilot/calibration/evaluate.h"

namespace pilot::calibration {

TableScore scoreTable(const tuner::TuningTable& table, const Dataset& data,
                      const FitOptions& options) {
  return scoreTable(table, summarize(data), options);
}

TableScore scoreTable(const tuner::TuningTable& table, const Measurements& m,
                      const FitOptions& options) {
  TableScore out;
  std::set<std::string> assumed, unmeasured;
  std::vector<double> fraction, defaultFraction, speedup;
  for (const Shape& shape : m.shapes) {
    const Series* def = shape.defaults();
    if (def == nullptr) {
      out.notes.push_back(shape.key.str() + ": NCCL's default was not measured: not scored");
      continue;
    }
    const ShapeEvidence evidence = assessEvidence(shape, options);
    for (size_t i = 0; i < def->sizes.size(); ++i) {
      const SizeStat& d = def->sizes[i];
      TableSizeScore s;
      s.shape = shape.key;
      s.size = d.size;
      s.defaultUs = d.timeUs;
      s.noise = i < evidence.noise.size() ? evidence.noise[i] : 0.0;
      // The fastest the sweep measured here among what a table can say (and the default).
      s.bestUs = d.timeUs;
      s.best = "default";
      for (const Series& x : shape.series) {
        if (x.isDefault() || !ruleForConfig(x.config).ok()) continue;
        if (const SizeStat* st = x.at(d.size); st != nullptr && st->timeUs < s.bestUs) {
          s.bestUs = st->timeUs;
          s.best = x.label;
        }
      }
      s.chosen = "default";
      s.chosenUs = d.timeUs;
      const int k = detail::firstMatchingRule(table, shape, d.size, &assumed);
      if (k >= 0) {
        const tuner::Rule& rule = table.rules[static_cast<size_t>(k)];
        s.ruleLine = rule.line;
        if (!detail::keepsNcclChoice(rule)) {
          const int c = detail::seriesForRule(shape, rule);
          const SizeStat* st = c < 0 ? nullptr : shape.series[static_cast<size_t>(c)].at(d.size);
          if (st == nullptr) {
            s.scored = false;
            s.chosen = "line " + std::to_string(rule.line) + " (not measured)";
            s.chosenUs = std::numeric_limits<double>::quiet_NaN();
            unmeasured.insert(shape.key.str() + ": line " + std::to_string(rule.line) + " (" +
                              tuner::formatRule(rule) + ")");
          } else {
            s.chosen = shape.series[static_cast<size_t>(c)].label;
            s.chosenUs = st->timeUs;
          }
        }
      }
      if (s.scored) {
        s.speedup = s.defaultUs / s.chosenUs;
        s.fraction = s.bestUs / s.chosenUs;
        s.defaultFraction = s.bestUs / s.defaultUs;
        // Slower beyond noise: the same bar fit uses for a gain, from the other side.
        s.slower = s.chosenUs / s.defaultUs - 1.0 > std::max(s.noise, 0.0) + 1e-12;
        fraction.push_back(s.fraction);
        defaultFraction.push_back(s.defaultFraction);
        speedup.push_back(s.speedup);
        out.slowerSizes += s.slower;
        ++out.scored;
        const bool worse =
            out.worst < 0 || s.speedup < out.sizes[static_cast<size_t>(out.worst)].speedup;
        if (worse) out.worst = static_cast<int>(out.sizes.size());
      } else {
        ++out.unscored;
      }
      out.sizes.push_back(std::move(s));
    }
  }
  out.fraction = geomean(fraction);
  out.defaultFraction = geomean(defaultFraction);
  out.speedup = geomean(speedup);
  out.gapCaptured = out.defaultFraction < 1.0 - 1e-12
                        ? (out.fraction - out.defaultFraction) / (1.0 - out.defaultFraction)
                        : std::numeric_limits<double>::quiet_NaN();
  for (const std::string& u : unmeasured) {
    out.notes.push_back(u +
                        " picks a configuration the sweep did not measure: those sizes are "
                        "not scored");
  }
  for (const std::string& key : assumed) {
    out.notes.push_back("the sweep does not say its " +
                        std::string(key == "nccl" ? "NCCL version" : "fabric") +
                        " for every shape: rules keyed " + key + "= were applied as if it matched");
  }
  for (const ExcludedRun& e : m.excluded) {
    out.notes.push_back("excluded: " + e.source + " (" + e.label + "): " + e.reasons.front());
  }
  return out;
}

}  // namespace pilot::calibration
