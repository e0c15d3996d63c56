// A table's scores as people read them (aligned text) and as JSON.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "fit/internal.h"
#include "pilot/calibration/evaluate.h"

namespace pilot::calibration {
namespace {

using OrderedJson = nlohmann::ordered_json;
using detail::fixed;
using detail::number;
using detail::pad;

std::string gap(const TableScore& s) {
  return std::isfinite(s.gapCaptured) ? percent(s.gapCaptured)
                                      : std::string("n/a (the default was the fastest)");
}

std::string worst(const TableScore& s) {
  if (s.worst < 0) return "n/a";
  const TableSizeScore& w = s.sizes[static_cast<size_t>(s.worst)];
  if (w.speedup >= 1.0) return fixed(w.speedup, 3) + " (no size slower than the default)";
  return fixed(w.speedup, 3) + " at " + detail::bytes(w.size) + " (" + w.shape.str() + ": " +
         w.chosen + " " + fixed(w.chosenUs, 2) + " us vs default " + fixed(w.defaultUs, 2) +
         " us; noise " + percent(w.noise) + ")";
}

}  // namespace

std::string tableScoreSummary(const TableScore& s) {
  std::ostringstream os;
  os << "sizes scored: " << s.scored;
  if (s.unscored > 0) os << " (" << s.unscored << " not: the table picks what was not measured)";
  os << "\n";
  os << "geomean fraction of the fastest: table " << fixed(s.fraction, 4) << ", NCCL default "
     << fixed(s.defaultFraction, 4) << "\n";
  os << "share of the default-to-fastest gap captured: " << gap(s) << "\n";
  os << "geomean speedup over NCCL's default: " << fixed(s.speedup, 4) << "\n";
  os << "sizes slower than the default beyond noise: " << s.slowerSizes;
  for (const TableSizeScore& x : s.sizes) {
    if (x.slower) os << " " << detail::bytes(x.size);
  }
  os << "\n";
  os << "worst speedup: " << worst(s) << "\n";
  return os.str();
}

std::string tableScoreText(const TableScore& s) {
  std::ostringstream os;
  for (const std::string& n : s.notes) os << "note: " << n << "\n";
  const ShapeKey* current = nullptr;
  for (const TableSizeScore& x : s.sizes) {
    if (current == nullptr || !(*current == x.shape)) {
      current = &x.shape;
      os << "\n" << x.shape.str() << "\n";
      os << pad("size", 8) << "  " << pad("rule", 6) << "  " << pad("chosen", 14, false)
         << pad("chosen us", 11) << pad("default us", 12) << "  " << pad("fastest", 12, false)
         << pad("fastest us", 11) << pad("speedup", 9) << pad("fraction", 10) << pad("default", 9)
         << pad("noise", 8) << "\n";
    }
    os << pad(detail::bytes(x.size), 8) << "  "
       << pad(x.ruleLine > 0 ? std::to_string(x.ruleLine) : std::string("-"), 6) << "  "
       << pad(x.chosen, 14, false) << pad(fixed(x.chosenUs, 2), 11)
       << pad(fixed(x.defaultUs, 2), 12) << "  " << pad(x.best, 12, false)
       << pad(fixed(x.bestUs, 2), 11) << pad(x.scored ? fixed(x.speedup, 3) : "-", 9)
       << pad(x.scored ? fixed(x.fraction, 3) : "-", 10) << pad(fixed(x.defaultFraction, 3), 9)
       << pad(percent(x.noise), 8) << (x.slower ? "  SLOWER than the default beyond noise" : "")
       << "\n";
  }
  os << "\n" << tableScoreSummary(s);
  return os.str();
}

std::string scoreComparisonText(const TableScore& in, const TableScore& out) {
  std::ostringstream os;
  auto row = [&](const std::string& name, const std::string& a, const std::string& b) {
    os << pad(name, 44, false) << pad(a, 12) << pad(b, 12) << "\n";
  };
  row("", "in-sample", "held-out");
  row("sizes scored", std::to_string(in.scored), std::to_string(out.scored));
  row("geomean fraction of the fastest, table", fixed(in.fraction, 4), fixed(out.fraction, 4));
  row("geomean fraction of the fastest, default", fixed(in.defaultFraction, 4),
      fixed(out.defaultFraction, 4));
  row("share of the default-to-fastest gap",
      std::isfinite(in.gapCaptured) ? percent(in.gapCaptured) : "n/a",
      std::isfinite(out.gapCaptured) ? percent(out.gapCaptured) : "n/a");
  row("geomean speedup over the default", fixed(in.speedup, 4), fixed(out.speedup, 4));
  row("sizes slower than the default beyond noise", std::to_string(in.slowerSizes),
      std::to_string(out.slowerSizes));
  auto worstSpeedup = [](const TableScore& s) {
    return s.worst < 0 ? std::string("n/a")
                       : fixed(s.sizes[static_cast<size_t>(s.worst)].speedup, 3);
  };
  row("worst speedup", worstSpeedup(in), worstSpeedup(out));
  os << "held-out worst: " << worst(out) << "\n";
  return os.str();
}

nlohmann::ordered_json tableScoreJson(const TableScore& s) {
  OrderedJson j;
  j["sizes_scored"] = s.scored;
  j["sizes_unscored"] = s.unscored;
  j["fraction"] = s.fraction;
  j["default_fraction"] = s.defaultFraction;
  j["gap_captured"] = number(s.gapCaptured);
  j["speedup"] = s.speedup;
  j["slower_sizes"] = s.slowerSizes;
  j["notes"] = s.notes;
  if (s.worst >= 0) {
    const TableSizeScore& w = s.sizes[static_cast<size_t>(s.worst)];
    j["worst"] = {{"size", w.size}, {"speedup", w.speedup}, {"chosen", w.chosen}};
    detail::putShape(j["worst"], w.shape);
  }
  j["sizes"] = OrderedJson::array();
  for (const TableSizeScore& x : s.sizes) {
    OrderedJson r;
    detail::putShape(r, x.shape);
    r["size"] = x.size;
    r["rule_line"] = x.ruleLine > 0 ? OrderedJson(x.ruleLine) : OrderedJson(nullptr);
    r["chosen"] = x.chosen;
    r["scored"] = x.scored;
    r["chosen_us"] = number(x.chosenUs);
    r["default_us"] = x.defaultUs;
    r["fastest"] = x.best;
    r["fastest_us"] = x.bestUs;
    r["speedup"] = number(x.scored ? x.speedup : NAN);
    r["fraction"] = number(x.scored ? x.fraction : NAN);
    r["default_fraction"] = x.defaultFraction;
    r["noise"] = x.noise;
    r["slower"] = x.slower;
    j["sizes"].push_back(r);
  }
  return j;
}

}  // namespace pilot::calibration
