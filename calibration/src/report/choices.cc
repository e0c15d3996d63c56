// The choices a report shows: the fit's, or what a given table's rules pick per measured size.
#include <cmath>
#include <limits>

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

namespace {

bool matches(const tuner::Rule& r, tuner::Collective coll, const ShapeKey& key, uint64_t size) {
  if ((r.collectives & tuner::bit(coll)) == 0) return false;
  const bool perRank =
      r.perRankSize && key.ranks > 0 &&
      (coll == tuner::Collective::AllGather || coll == tuner::Collective::ReduceScatter);
  if (!r.size.contains(perRank ? size / static_cast<uint64_t>(key.ranks) : size)) return false;
  auto fits = [](const tuner::Range& range, int v) {
    return range.any() || (v > 0 && range.contains(static_cast<uint64_t>(v)));
  };
  // nccl-tests issues one operation per group on unregistered buffers.
  return fits(r.nodes, key.nodes) && fits(r.ranks, key.ranks) &&
         fits(r.ranksPerNode, key.ranksPerNode()) && r.pipeOps.contains(1) && r.regBuff != 1;
}

bool sameChoice(const tuner::Rule& a, const tuner::Rule& b) {
  return a.algorithms == b.algorithms && a.protocols == b.protocols && a.channels == b.channels;
}

}  // namespace

ReportChoices tableChoices(const FitResult& fit, const tuner::TuningTable& table,
                           const std::string& path) {
  ReportChoices out;
  out.source = path;
  out.decisions = fit.decisions;
  for (size_t i = 0; i < fit.data.shapes.size(); ++i) {
    const Shape& shape = fit.data.shapes[i];
    const auto coll = tuner::parseCollective(shape.key.collective);
    std::vector<detail::SizeChoice> choices;
    for (Decision& d : out.decisions) {
      if (!(d.shape == shape.key)) continue;
      d.chosen = kDefaultChoice;
      d.chosenLabel = "default";
      d.timeUs = d.defaultTimeUs;
      d.gain = 0;
      d.reason = "no rule matches";
      for (size_t k = 0; coll && k < table.rules.size(); ++k) {
        const tuner::Rule& rule = table.rules[k];
        if (!matches(rule, *coll, shape.key, d.size)) continue;
        const std::string line = "line " + std::to_string(rule.line);
        d.reason = line + ": " + tuner::formatRule(rule);
        if (!rule.namesChoice() && rule.channels == 0) break;  // chunk= only: NCCL's choice
        d.chosen = kUnmeasuredRule - static_cast<int>(k);
        d.chosenLabel = line + " (not measured)";
        d.timeUs = std::numeric_limits<double>::quiet_NaN();
        d.gain = std::numeric_limits<double>::quiet_NaN();
        for (size_t c = 0; c < shape.series.size(); ++c) {
          const Series& s = shape.series[c];
          if (s.isDefault()) continue;
          auto forced = ruleForConfig(s.config);
          const SizeStat* st = s.at(d.size);
          if (!forced.ok() || !sameChoice(*forced, rule) || st == nullptr) continue;
          d.chosen = static_cast<int>(c);
          d.chosenLabel = s.label;
          d.timeUs = st->timeUs;
          d.gain = 1.0 - st->timeUs / d.defaultTimeUs;
        }
        break;
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
  return out;
}

}  // namespace pilot::calibration
