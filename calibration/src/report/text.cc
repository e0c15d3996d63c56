// The report's text summary for the terminal.
#include <cmath>
#include <sstream>

#include "fit/internal.h"
#include "pilot/calibration/report.h"

namespace pilot::calibration {

std::string reportText(const FitResult& fit, const ReportChoices& choices) {
  using detail::bytes;
  std::ostringstream os;
  for (size_t i = 0; i < fit.data.shapes.size(); ++i) {
    const Shape& shape = fit.data.shapes[i];
    os << shape.key.str() << ":";
    for (const Series& s : shape.series) os << " " << s.label << s.countText();
    os << "\n";
    const ShapeFit& sf = fit.shapes[i];
    os << "  evidence: " << sf.evidence.summary << "\n";
    if (!sf.note.empty() && sf.note != sf.evidence.summary) os << "  " << sf.note << "\n";
    if (choices.source == "fit") os << "  " << sf.keys << "\n";
    for (const Band& b : choices.bands[i]) {
      os << "  " << detail::bandRange(b) << "  ";
      if (b.series == kDefaultChoice) {
        os << "NCCL default";
      } else {
        os << b.label << " ";
        if (std::isfinite(b.minGain)) {
          os << (b.minGain == b.maxGain ? percent(b.minGain)
                                        : percent(b.minGain) + ".." + percent(b.maxGain))
             << " faster";
        }
      }
      os << " (" << b.sizes << " measured size" << (b.sizes == 1 ? "" : "s") << ")\n";
    }
    // The closest call where the default stayed, so "no rules" is not mistaken for "no data".
    const Decision* best = nullptr;
    for (const Decision& d : choices.decisions) {
      if (!(d.shape == shape.key) || d.chosen != kDefaultChoice || d.fastest == kDefaultChoice) {
        continue;
      }
      if (best == nullptr || d.fastestGain - d.threshold > best->fastestGain - best->threshold) {
        best = &d;
      }
    }
    if (best != nullptr) {
      os << "  closest call left to NCCL: " << best->fastestLabel << " "
         << percent(best->fastestGain) << " at " << bytes(best->size) << " (bar "
         << percent(best->threshold) << ")\n";
    }
  }
  for (const NodeModelReport& m : fit.nodeModels) {
    os << "node model " << m.collective << " rpn=" << m.ranksPerNode
       << (m.setup.empty() ? "" : " setup=" + m.setup) << " " << m.label << ": nodes";
    for (int n : m.nodeCounts) os << " " << n;
    os << "; node term " << nodeScaleName(m.scale) << "; leave-one-out median error "
       << (std::isfinite(m.medianRelError) ? percent(m.medianRelError) : std::string("n/a"))
       << "\n";
  }
  if (!fit.data.excluded.empty()) {
    os << fit.data.excluded.size() << " run(s) excluded:\n";
    for (const ExcludedRun& e : fit.data.excluded) {
      os << "  " << e.source << " (" << e.label << "): " << e.reasons.front() << "\n";
    }
  }
  for (const std::string& n : choices.notes) os << "note: " << n << "\n";
  return os.str();
}

}  // namespace pilot::calibration
