// fit --evaluate output: an aligned table per shape and the summary figures, or JSON.
#include <cstdio>
#include <sstream>

#include "fit/internal.h"
#include "pilot/calibration/evaluate.h"

namespace pilot::calibration {
using detail::fixed;
using detail::pad;

std::string evaluationText(const Evaluation& e) {
  std::ostringstream os;
  os << (e.inSample ? "in-sample evaluation (no repeats to hold out)\n"
                    : std::to_string(e.folds) +
                          " folds: run j of every configuration measured "
                          "more than once is held out in fold j\n");
  for (const std::string& n : e.notes) os << "note: " << n << "\n";
  const ShapeKey* current = nullptr;
  for (const SizeScore& s : e.sizes) {
    if (current == nullptr || !(*current == s.shape)) {
      current = &s.shape;
      os << "\n" << s.shape.str() << "\n";
      os << pad("size", 8) << "  " << pad("chosen", 14, false) << pad("chosen us", 11) << "  "
         << pad("best", 12, false) << pad("best us", 10) << pad("default us", 12)
         << pad("oracle", 8) << pad("default", 9) << pad("speedup", 9) << pad("noise", 8) << "\n";
    }
    os << pad(detail::bytes(s.size), 8) << "  " << pad(s.chosen, 14, false)
       << pad(fixed(s.chosenUs, 2), 11) << "  " << pad(s.best, 12, false)
       << pad(fixed(s.bestUs, 2), 10) << pad(fixed(s.defaultUs, 2), 12)
       << pad(fixed(s.oracleFraction, 3), 8) << pad(fixed(s.defaultOracleFraction, 3), 9)
       << pad(fixed(s.speedup, 3), 9) << pad(percent(s.noise), 8)
       << (s.slower ? "  SLOWER than default beyond noise" : "") << "\n";
  }
  os << "\ngeomean oracle fraction (best / chosen): fitted " << fixed(e.oracleFraction, 4)
     << ", NCCL default " << fixed(e.defaultOracleFraction, 4) << "\n";
  os << "geomean speedup over NCCL default: " << fixed(e.speedup, 4) << "\n";
  os << "sizes slower than default beyond noise: " << e.slowerSizes;
  if (e.worst >= 0) {
    const SizeScore& w = e.sizes[static_cast<size_t>(e.worst)];
    os << " (worst: speedup " << fixed(w.speedup, 3) << " at " << detail::bytes(w.size) << ", "
       << w.shape.str() << ")";
  }
  os << "\n"
     << (e.meetsCriterion() ? "criterion met" : "criterion NOT met")
     << ": fitted oracle fraction >= default's and no size slower beyond noise\n";
  return os.str();
}

nlohmann::ordered_json evaluationJson(const Evaluation& e) {
  nlohmann::ordered_json j;
  j["folds"] = e.folds;
  j["in_sample"] = e.inSample;
  j["oracle_fraction"] = e.oracleFraction;
  j["default_oracle_fraction"] = e.defaultOracleFraction;
  j["speedup"] = e.speedup;
  j["slower_sizes"] = e.slowerSizes;
  j["meets_criterion"] = e.meetsCriterion();
  j["notes"] = e.notes;
  j["sizes"] = nlohmann::ordered_json::array();
  for (const SizeScore& s : e.sizes) {
    nlohmann::ordered_json x;
    detail::putShape(x, s.shape);
    x["size"] = s.size;
    x["chosen"] = s.chosen;
    x["best"] = s.best;
    x["chosen_us"] = s.chosenUs;
    x["best_us"] = s.bestUs;
    x["default_us"] = s.defaultUs;
    x["oracle_fraction"] = s.oracleFraction;
    x["default_oracle_fraction"] = s.defaultOracleFraction;
    x["speedup"] = s.speedup;
    x["noise"] = s.noise;
    x["slower"] = s.slower;
    x["folds"] = s.folds;
    j["sizes"].push_back(x);
  }
  if (e.worst >= 0) {
    j["worst"] = {{"size", e.sizes[static_cast<size_t>(e.worst)].size},
                  {"speedup", e.sizes[static_cast<size_t>(e.worst)].speedup}};
  }
  return j;
}

}  // namespace pilot::calibration
