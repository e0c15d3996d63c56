// The table file fit writes: provenance, what each shape measured, then the rules.
#include <ctime>
#include <sstream>

#include "fit/internal.h"
#include "pilot/calibration/fit.h"

namespace pilot::calibration {
namespace {

using detail::bytes;

/// Comment text stays on one line and well inside the parser's line limit.
std::string oneLine(std::string s, size_t limit = 1000) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (s.size() > limit) s = s.substr(0, limit) + "...";
  return s;
}

std::string inputsList(const std::vector<std::string>& inputs) {
  std::string out;
  size_t shown = 0;
  for (const std::string& in : inputs) {
    if (out.size() + in.size() > 900) break;
    out += (out.empty() ? "" : ", ") + in;
    ++shown;
  }
  if (shown < inputs.size()) out += " (+" + std::to_string(inputs.size() - shown) + " more)";
  return out;
}

std::string shapeSummary(const Shape& shape, const ShapeFit& fit, int rules,
                         const std::vector<Decision>& decisions) {
  std::ostringstream os;
  os << "# " << shape.key.str() << ":";
  if (const Series* d = shape.defaults(); d != nullptr && !d->sizes.empty()) {
    os << " " << d->sizes.size() << " sizes " << bytes(d->sizes.front().size) << ".."
       << bytes(d->sizes.back().size) << ";";
  }
  for (const Series& s : shape.series) os << " " << s.label << s.countText();
  os << "; " << rules << (rules == 1 ? " rule" : " rules") << "\n";
  os << "#   evidence: " << oneLine(fit.evidence.summary) << "\n";
  if (!fit.note.empty() && fit.note != fit.evidence.summary) {
    os << "#   " << oneLine(fit.note) << "\n";
  }
  if (rules > 0) os << "#   " << oneLine(fit.keys) << "\n";
  if (rules == 0 && fit.note.empty()) {
    // The nearest miss tells the reader how close the evidence came.
    const Decision* best = nullptr;
    for (const Decision& d : decisions) {
      if (!(d.shape == shape.key) || d.fastest == kDefaultChoice) continue;
      if (best == nullptr || d.fastestGain - d.threshold > best->fastestGain - best->threshold) {
        best = &d;
      }
    }
    if (best == nullptr) {
      os << "#   NCCL's default was the fastest measured at every size\n";
    } else {
      os << "#   no gain beat the noise; closest: " << best->fastestLabel << " "
         << percent(best->fastestGain) << " at " << bytes(best->size) << " (bar "
         << percent(best->threshold) << ")\n";
    }
  }
  return os.str();
}

}  // namespace

std::string tableText(const FitResult& r) {
  std::ostringstream os;
  const FitOptions& o = r.options;
  os << "#@ table: nccl-pilot 1\n";
  os << "#@ fitted-by: nccl-pilot " << (o.toolVersion.empty() ? "?" : o.toolVersion) << " fit\n";
  os << "#@ date: " << (o.date.empty() ? detail::utcNow("%Y-%m-%dT%H:%M:%SZ") : o.date) << "\n";
  if (!o.inputs.empty()) os << "#@ inputs: " << oneLine(inputsList(o.inputs)) << "\n";
  if (!r.ncclVersion.empty()) os << "#@ nccl: " << r.ncclVersion << "\n";
  os << "#@ margin: " << o.margin << "\n";
  os << "#@ calls-margin: " << o.callsMargin << "\n";
  os << "#@ min-repeats: " << o.minRepeats << "\n";
  os << "#@ coverage: sizes from 0; band edges at geometric midpoints of measured sizes, or at "
        "the measured size where the neighbour loses beyond the bar; past "
        "the largest measured size only where alpha-beta models keep the gain above the bar; "
        "node counts between measured ones by the alpha-beta node model; elsewhere NCCL "
        "decides\n";
  os << "#\n";
  os << "# Written by nccl-pilot fit (docs/calibration.md). A rule overrides NCCL only where "
        "its\n# configuration beat NCCL's default by more than the noise: the spread over "
        "repeats, or\n# without repeats the noise estimated from the data (a larger bar, longer "
        "bands), or\n# from the profiler's metrics two standard errors of the per-call samples. "
        "First\n# match wins; where no rule matches, NCCL decides. expect= holds the "
        "measured time per\n# operation of the rule's choice at sizes inside its band.\n";
  for (const std::string& note : r.notes) os << "# note: " << oneLine(note) << "\n";
  if (r.ncclVersion.empty()) os << "# note: NCCL version unknown or mixed across the inputs\n";
  os << "#\n";
  for (size_t i = 0; i < r.data.shapes.size(); ++i) {
    const Shape& shape = r.data.shapes[i];
    int rules = 0;
    for (const Band& b : r.shapes[i].bands) rules += b.series != kDefaultChoice;
    os << shapeSummary(shape, r.shapes[i], rules, r.decisions);
  }
  for (const ExcludedRun& e : r.data.excluded) {
    os << "# excluded: " << oneLine(e.source + " (" + e.label + "): " + e.reasons.front()) << "\n";
  }
  if (r.rules.empty()) {
    os << "#\n# No rules: NCCL's own choices stand everywhere.\n";
  }
  for (const FittedRule& rule : r.rules) {
    os << "\n# " << oneLine(rule.comment) << "\n" << tuner::formatRule(rule.rule) << "\n";
  }
  if (!r.marks.empty()) {
    os << "\n# Exploration marks (explore=): what the jobs measured of each alternative. They "
          "decide\n"
          "# nothing; a job with NCCL_PILOT_TUNER_EXPLORE does not try again a cell marked slow\n"
          "# (clearly slower than the fastest measured) or known (measured enough), and spends\n"
          "# its budget on the rest. Fit again on all the jobs' metrics to carry them on.\n";
    for (const FittedRule& mark : r.marks) {
      os << "# " << oneLine(mark.comment) << "\n" << tuner::formatRule(mark.rule) << "\n";
    }
  }
  return os.str();
}

}  // namespace pilot::calibration
