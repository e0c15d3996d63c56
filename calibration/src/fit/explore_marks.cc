// What a job's exploration measured of each alternative, written into the table as `explore=`
// marks (docs/calibration.md, "Learning across jobs"): the next job with
// NCCL_PILOT_TUNER_EXPLORE does not try again what measured clearly slower, nor what it measured
// enough, and so spends its budget on what is still unknown.
#include <algorithm>
#include <map>

#include "fit/internal.h"
#include "pilot/calibration/fit.h"

namespace pilot::calibration::detail {
namespace {

/// The mark of one measured configuration at one size, and the statistics it rests on.
struct Seen {
  tuner::ExploreMark mark = tuner::ExploreMark::First;
  uint64_t calls = 0;
  double slower = 0;  ///< 1 - the fastest's time / this one's
};

/// The cell a configuration runs: one algorithm and one protocol, else -1.
int cellOf(const tuner::Rule& choice) {
  if (!choice.selectsOneCell()) return -1;
  return __builtin_ctz(choice.algorithms) * tuner::kNumProtocols + __builtin_ctz(choice.protocols);
}

}  // namespace

void addExploreMarks(const Shape& shape, const std::vector<tuner::Rule>& choices,
                     const tuner::Rule& base, const FitOptions& options,
                     std::vector<FittedRule>& marks) {
  const Series* def = shape.defaults();
  if (!shape.perCall || def == nullptr) return;
  // Per cell, the measured sizes in order with their marks.
  std::map<int, std::vector<std::pair<uint64_t, Seen>>> byCell;
  for (const SizeStat& d : def->sizes) {
    // Per cell the configuration with the most calls (channel counts are NCCL's to pick).
    std::map<int, const SizeStat*> cells;
    for (size_t c = 0; c < shape.series.size(); ++c) {
      const int cell = shape.series[c].isDefault() ? -1 : cellOf(choices[c]);
      const SizeStat* st = cell < 0 ? nullptr : shape.series[c].at(d.size);
      if (st == nullptr || st->calls == 0) continue;
      const SizeStat*& kept = cells[cell];
      if (kept == nullptr || st->calls > kept->calls) kept = st;
    }
    const SizeStat* best = nullptr;
    for (const auto& [cell, st] : cells) {
      if (st->calls >= kMinCalls && (best == nullptr || st->timeUs < best->timeUs)) best = st;
    }
    for (const auto& [cell, st] : cells) {
      Seen s;
      s.calls = st->calls;
      if (best != nullptr && st != best && st->calls >= kMinCalls) {
        s.slower = 1.0 - best->timeUs / st->timeUs;
        if (s.slower > callsBar(*st, *best, options.callsMargin)) {
          s.mark = tuner::ExploreMark::Slow;
        } else if (callsBar(*st, *best, 0.0) <= options.callsMargin) {
          // Tight enough that no gain the table would take can hide in the noise.
          s.mark = tuner::ExploreMark::Known;
        }
      } else if (st->calls >= kKnownCalls) {
        s.mark = tuner::ExploreMark::Known;
      }
      byCell[cell].push_back({d.size, s});
    }
  }
  // Adjacent measured sizes with one mark become one line, from the first to the last.
  for (const auto& [cell, seen] : byCell) {
    for (size_t i = 0; i < seen.size();) {
      size_t j = i;
      while (j + 1 < seen.size() && seen[j + 1].second.mark == seen[i].second.mark) ++j;
      tuner::Rule rule = base;
      // Measured sizes are NCCL's totals; a per-rank rule's axis is a rank's share of them.
      const uint64_t scale =
          rule.perRankSize && shape.key.ranks > 0 ? static_cast<uint64_t>(shape.key.ranks) : 1;
      rule.size = tuner::Range{seen[i].first / scale, seen[j].first / scale};
      rule.algorithms = static_cast<tuner::AlgoMask>(1u << (cell / tuner::kNumProtocols));
      rule.protocols = static_cast<tuner::ProtoMask>(1u << (cell % tuner::kNumProtocols));
      rule.explore = seen[i].second.mark;
      uint64_t fewest = seen[i].second.calls, most = fewest;
      double least = seen[i].second.slower, worst = least;
      for (size_t k = i; k <= j; ++k) {
        fewest = std::min(fewest, seen[k].second.calls);
        most = std::max(most, seen[k].second.calls);
        least = std::min(least, seen[k].second.slower);
        worst = std::max(worst, seen[k].second.slower);
      }
      const std::string calls = fewest == most
                                    ? std::to_string(fewest)
                                    : std::to_string(fewest) + ".." + std::to_string(most);
      const std::string sizes = bytes(seen[i].first) + (i == j ? "" : ".." + bytes(seen[j].first));
      std::string why;
      switch (rule.explore) {
        case tuner::ExploreMark::Slow:
          why = percent(least) + (least == worst ? "" : ".." + percent(worst)) +
                " slower than the fastest measured, beyond the noise";
          break;
        case tuner::ExploreMark::Known:
          why = "measured enough: no gain beyond the calls margin hides in the noise";
          break;
        default:
          why = "too few calls to tell it from the fastest";
          break;
      }
      marks.push_back({rule, shape.key.str() + ": explore " + tuner::exploreMarkName(rule.explore) +
                                 " at " + sizes + ": " + calls + " calls, " + why});
      i = j + 1;
    }
  }
}

}  // namespace pilot::calibration::detail
