// The choices a report shows: the fit's, or what a given table's rules pick per measured size.
#include <cmath>
#include <limits>
#include <set>

#include "evaluate/apply_table.h"
#include "fit/bands.h"
#include "pilot/calibration/report.h"
#include "pilot/tuner/names.h"

namespace pilot::calibration {

ReportChoices fitChoices(const FitResult& fit) {
  ReportChoices out;
  out.source = "fit";
  out.decisions = fit.decisions;
  for (const ShapeFit& s : fit.shapes) out.bands.push_back(s.bands);
  return out;
}

ReportChoices tableChoices(const FitResult& fit, const tuner::TuningTable& table,
                           const std::string& path) {
  ReportChoices out;
  out.source = path;
  out.decisions = fit.decisions;
  std::set<std::string> assumed;
  for (size_t i = 0; i < fit.data.shapes.size(); ++i) {
    const Shape& shape = fit.data.shapes[i];
    std::vector<detail::SizeChoice> choices;
    for (Decision& d : out.decisions) {
      if (!(d.shape == shape.key)) continue;
      d.chosen = kDefaultChoice;
      d.chosenLabel = "default";
      d.timeUs = d.defaultTimeUs;
      d.gain = 0;
      d.reason = "no rule matches";
      const int k = detail::firstMatchingRule(table, shape, d.size, &assumed);
      if (k >= 0) {
        const tuner::Rule& rule = table.rules[static_cast<size_t>(k)];
        const std::string line = "line " + std::to_string(rule.line);
        d.reason = line + ": " + tuner::formatRule(rule);
        if (!detail::keepsNcclChoice(rule)) {
          d.chosen = kUnmeasuredRule - k;
          d.chosenLabel = line + " (not measured)";
          d.timeUs = std::numeric_limits<double>::quiet_NaN();
          d.gain = std::numeric_limits<double>::quiet_NaN();
          const int c = detail::seriesForRule(shape, rule);
          const SizeStat* st = c < 0 ? nullptr : shape.series[static_cast<size_t>(c)].at(d.size);
          if (st != nullptr) {
            d.chosen = c;
            d.chosenLabel = shape.series[static_cast<size_t>(c)].label;
            d.timeUs = st->timeUs;
            d.gain = 1.0 - st->timeUs / d.defaultTimeUs;
          }
        }
      }
      choices.push_back({d.size, d.chosen, d.chosenLabel, std::isfinite(d.gain) ? d.gain : 0});
    }
    out.bands.push_back(detail::makeBands(choices));
    for (const Decision& d : out.decisions) {
      if (d.shape == shape.key && d.chosen <= kUnmeasuredRule) {
        out.notes.push_back(shape.key.str() + ": " + d.reason +
                            " picks a configuration that was not measured");
        break;
      }
    }
  }
  for (const std::string& key : assumed) {
    out.notes.push_back("the runs do not say their " +
                        std::string(key == "nccl" ? "NCCL version" : "fabric") + ": rules keyed " +
                        key + "= were applied as if it matched");
  }
  return out;
}

}  // namespace pilot::calibration
