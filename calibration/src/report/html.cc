// The HTML report: one page, inline CSS and SVG, nothing fetched.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <sstream>

#include "fit/internal.h"
#include "pilot/calibration/report.h"
#include "pilot/calibration/report_style.h"
#include "pilot/calibration/svg_chart.h"
#include "pilot/core/text.h"

namespace pilot::calibration {
namespace {

using detail::bytes;
using text::escapeXml;

std::string fmt(const char* f, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// One colour per configuration label across the whole page.
class Palette {
 public:
  std::string operator()(const std::string& label) {
    if (label == "default") return "#222222";
    auto it = colours_.find(label);
    if (it != colours_.end()) return it->second;
    static const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                     "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
    const std::string c = kColours[colours_.size() % 10];
    colours_[label] = c;
    return c;
  }

 private:
  std::map<std::string, std::string> colours_;
};

/// "(3)" of "(3) = (2) + NCCL_NET=...": setups can be whole sentences.
std::string shortSetup(const std::string& setup) {
  if (!setup.empty() && setup[0] == '(') {
    const size_t close = setup.find(')');
    if (close != std::string::npos) return setup.substr(0, close + 1);
  }
  return setup.size() > 24 ? setup.substr(0, 24) + "…" : setup;
}

std::string shapeTitle(const ShapeKey& k, bool shortForm = false) {
  std::string s = k.collective;
  if (k.nodes > 0) s += " · " + std::to_string(k.nodes) + (k.nodes == 1 ? " node" : " nodes");
  if (k.ranks > 0) s += " · " + std::to_string(k.ranks) + " ranks";
  if (!k.setup.empty()) s += " · setup " + (shortForm ? shortSetup(k.setup) : k.setup);
  return s;
}

std::string forcing(const Config& c) {
  if (c.isDefault()) return "NCCL's own choice";
  std::string s;
  auto add = [&](const std::string& kv) { s += (s.empty() ? "" : ", ") + kv; };
  if (!c.algo.empty()) add("NCCL_ALGO=" + c.algo);
  if (!c.proto.empty()) add("NCCL_PROTO=" + c.proto);
  if (c.minChannels) add("NCCL_MIN_NCHANNELS=" + std::to_string(c.minChannels));
  if (c.maxChannels) add("NCCL_MAX_NCHANNELS=" + std::to_string(c.maxChannels));
  return s;
}

std::string bandRange(const Band& b) {
  return detail::bandRange(b, " – ") + (b.hi == UINT64_MAX ? "∞" : "");
}

struct ShapeView {
  const Shape& shape;
  const ShapeFit& fit;
  std::vector<const Decision*> decisions;
  const std::vector<Band>& bands;
};

std::vector<detail::ChartBand> chartBands(const ShapeView& v, Palette& colour) {
  std::vector<detail::ChartBand> out;
  for (const Band& b : v.bands) {
    if (b.series == kDefaultChoice) continue;
    const std::string c = b.series <= kUnmeasuredRule ? "#999999" : colour(b.label);
    out.push_back({static_cast<double>(std::max<uint64_t>(b.lo, 1)),
                   b.hi == UINT64_MAX ? 1e30 : static_cast<double>(b.hi) + 1, c, b.label});
  }
  return out;
}

void charts(std::ostream& os, const ShapeView& v, Palette& colour, int index) {
  const Series* def = v.shape.defaults();
  std::map<uint64_t, const Decision*> at;
  for (const Decision* d : v.decisions) at[d->size] = d;
  auto chosenHere = [&](int series, uint64_t size) {
    auto it = at.find(size);
    return it != at.end() && it->second->chosen == series;
  };

  detail::Chart time, bw, gain;
  time.id = "t" + std::to_string(index);
  time.title = "Time per operation (median over repeats; whiskers: min–max)";
  time.yLabel = "time (log scale)";
  time.logY = true;
  time.yFormat = detail::formatTime;
  bw.id = "b" + std::to_string(index);
  bw.title = "Bus bandwidth (median over repeats)";
  bw.yLabel = "bus bandwidth, GB/s";
  bw.yFormat = [](double x) { return fmt("%g", x); };
  gain.id = "g" + std::to_string(index);
  gain.title = "Speedup over NCCL's default (above 1 = faster)";
  gain.yLabel = "default time / configuration time (log)";
  gain.logY = true;
  gain.yFormat = [](double x) { return fmt("%.3g×", x); };
  time.bands = bw.bands = gain.bands = chartBands(v, colour);
  time.width = bw.width = gain.width = 640;

  for (size_t c = 0; c < v.shape.series.size(); ++c) {
    const Series& s = v.shape.series[c];
    const int series = s.isDefault() ? kDefaultChoice : static_cast<int>(c);
    detail::ChartLine lt{
        s.label + (s.calls > 0 ? s.countText() : " ×" + std::to_string(s.runs.size())),
        colour(s.label),
        {}};
    detail::ChartLine lb = lt, lg = lt;
    if (s.isDefault()) lt.width = lb.width = 2.6;
    for (const SizeStat& st : s.sizes) {
      const double x = static_cast<double>(st.size);
      const bool mark = !s.isDefault() && chosenHere(series, st.size);
      lt.points.push_back({x, st.timeUs, st.minUs, st.maxUs, mark});
      lb.points.push_back({x, st.busbw, 0, 0, mark});
      if (!s.isDefault() && def != nullptr) {
        if (const SizeStat* d = def->at(st.size)) {
          lg.points.push_back({x, d->timeUs / st.timeUs, 0, 0, mark});
        }
      }
    }
    time.lines.push_back(lt);
    bw.lines.push_back(lb);
    if (!s.isDefault()) gain.lines.push_back(lg);
  }
  // The bar a gain had to clear, as a speedup: 1 / (1 - threshold).
  detail::ChartLine bar{"noise bar", "#888888", {}, 1.2, true};
  for (const Decision* d : v.decisions) {
    bar.points.push_back({static_cast<double>(d->size), 1.0 / (1.0 - d->threshold), 0, 0, false});
  }
  gain.lines.push_back(bar);
  detail::ChartLine one{"default", "#222222", {}, 2.6, false};
  for (const Decision* d : v.decisions) {
    one.points.push_back({static_cast<double>(d->size), 1.0, 0, 0, false});
  }
  gain.lines.insert(gain.lines.begin(), one);

  os << "<div class=\"charts\">\n" << detail::renderChart(time) << detail::renderChart(bw);
  // Nothing but the default measured: no speedup to show.
  if (gain.lines.size() > 2) os << detail::renderChart(gain);
}

void bandsTable(std::ostream& os, const ShapeView& v, const FitResult& fit, Palette& colour) {
  os << "<div class=\"bandbox\"><h3>Size bands</h3>\n<table class=\"bands\"><tr><th>bytes</th>"
        "<th>choice</th><th>measured sizes</th><th>gain over default</th></tr>\n";
  for (const Band& b : v.bands) {
    const bool def = b.series == kDefaultChoice;
    os << "<tr><td class=\"num\">" << bandRange(b) << "</td><td><span class=\"swatch\" "
       << "style=\"background:" << (def ? "#fff" : colour(b.label)) << "\"></span>"
       << escapeXml(def ? "NCCL default" : b.label) << "</td><td>" << b.sizes << " ("
       << bytes(b.firstSize) << (b.sizes > 1 ? " – " + bytes(b.lastSize) : "") << ")"
       << (b.extended ? " + extended" : "") << "</td><td>"
       << (def                      ? "—"
           : b.minGain == b.maxGain ? percent(b.minGain)
                                    : percent(b.minGain) + " – " + percent(b.maxGain))
       << "</td></tr>\n";
  }
  os << "</table>\n";
  if (v.fit.extension.attempted) {
    os << "<p class=\"small\">Past the largest measured size: " << escapeXml(v.fit.extension.note)
       << ".</p>\n";
  }
  if (!v.fit.note.empty()) os << "<p class=\"warn\">" << escapeXml(v.fit.note) << "</p>\n";
  // The rules the fit wrote for this shape, as the table has them.
  bool any = false;
  for (const FittedRule& r : fit.rules) {
    if (r.comment.rfind(v.shape.key.str() + ":", 0) != 0) continue;
    if (!any) os << "<h3>Rules</h3><pre class=\"rules\">";
    any = true;
    os << escapeXml(tuner::formatRule(r.rule)) << "\n";
  }
  if (any) os << "</pre>\n";
  os << "</div></div>\n";
}

void decisionsTable(std::ostream& os, const ShapeView& v) {
  os << "<details><summary>Per-size decisions (" << v.decisions.size()
     << ")</summary>\n<table class=\"decisions\"><tr><th>size</th><th>default</th>"
        "<th>fastest</th><th>its gain</th><th>noise</th><th>bar</th><th>chosen</th>"
        "<th>why</th></tr>\n";
  for (const Decision* d : v.decisions) {
    const bool chosen = d->chosen != kDefaultChoice;
    os << "<tr" << (chosen ? " class=\"chosen\"" : "") << "><td class=\"num\">" << bytes(d->size)
       << "</td><td class=\"num\">" << detail::formatTime(d->defaultTimeUs) << "</td><td>"
       << escapeXml(d->fastestLabel) << "</td><td class=\"num\">" << percent(d->fastestGain)
       << "</td><td class=\"num\">" << percent(d->spread) << "</td><td class=\"num\">"
       << percent(d->threshold) << "</td><td>" << escapeXml(d->chosenLabel) << "</td><td>"
       << escapeXml(d->reason) << "</td></tr>\n";
  }
  os << "</table></details>\n";
}

std::string verdict(const ShapeView& v) {
  int rules = 0;
  for (const Band& b : v.bands) rules += b.series != kDefaultChoice;
  if (rules > 0) {
    std::string s = std::to_string(rules) + (rules == 1 ? " band overrides" : " bands override") +
                    " NCCL's default:";
    for (const Band& b : v.bands) {
      if (b.series == kDefaultChoice) continue;
      s += " " + b.label + " at " + bandRange(b) + " (" +
           (std::isfinite(b.maxGain) ? percent(b.maxGain) : std::string("?")) + " max gain);";
    }
    s.back() = '.';
    return s;
  }
  if (!v.fit.note.empty()) return "No rules: " + v.fit.note + ".";
  const Decision* best = nullptr;
  for (const Decision* d : v.decisions) {
    if (d->fastest == kDefaultChoice) continue;
    if (best == nullptr || d->fastestGain - d->threshold > best->fastestGain - best->threshold) {
      best = d;
    }
  }
  if (best == nullptr) return "No rules: NCCL's default was the fastest measured at every size.";
  return "No rules: no configuration beat NCCL's default by more than the noise at two adjacent "
         "sizes. Closest: " +
         best->fastestLabel + " " + percent(best->fastestGain) + " faster at " + bytes(best->size) +
         ", against a bar of " + percent(best->threshold) + ".";
}

/// Measured (solid) against predicted from the other node counts (dashed), per held-out count.
std::string heldOutChart(const NodeModelReport& m, int index) {
  static const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#8c564b", "#17becf", "#e377c2"};
  detail::Chart c;
  c.id = "n" + std::to_string(index);
  c.title = m.collective + " " + m.label +
            (m.setup.empty() ? "" : " setup " + shortSetup(m.setup)) +
            ": each node count predicted from the others";
  c.yLabel = "time (log scale)";
  c.logY = true;
  c.yFormat = detail::formatTime;
  c.width = 640;
  for (size_t i = 0; i < m.heldOut.size(); ++i) {
    const auto& h = m.heldOut[i];
    const std::string colour = kColours[i % 8];
    const std::string n = std::to_string(h.nodes) + (h.nodes == 1 ? " node" : " nodes");
    detail::ChartLine measured{n + " measured", colour, {}, 1.8, false};
    detail::ChartLine predicted{
        n + " predicted (" + percent(h.medianRelError) + ")", colour, {}, 1.4, true};
    for (const SizeTime& p : h.measured) measured.points.push_back({p.size, p.timeUs, 0, 0, false});
    for (const SizeTime& p : h.predicted) {
      predicted.points.push_back({p.size, p.timeUs, 0, 0, false});
    }
    c.lines.push_back(measured);
    c.lines.push_back(predicted);
  }
  c.height = std::max(360, 60 + 17 * static_cast<int>(c.lines.size()));
  return detail::renderChart(c);
}

void nodeModels(std::ostream& os, const FitResult& fit, Palette& colour) {
  if (fit.nodeModels.empty()) return;
  os << "<section id=\"nodes\"><h2>Across node counts</h2>\n<p>The node model: time = (a0 + "
        "a1 f) + size × (b0 + b1 f), with f = log2(n) (trees) or n (rings), whichever predicts "
        "held-out node counts better, fitted per size over the measurements within two octaves. "
        "Each node count is predicted from the others (leave one node count out); the error is "
        "the median |predicted − measured| / measured. With two node counts each is predicted "
        "from the other alone, by a model flat in n: that error only says how far apart they "
        "are.</p>\n<table class=\"bands\"><tr><th>collective</th><th>ranks/node</th>"
        "<th>setup</th><th>configuration</th><th>node counts</th><th>node term</th>"
        "<th>median error</th><th>per held-out node count</th></tr>\n";
  for (const NodeModelReport& m : fit.nodeModels) {
    std::string counts, held;
    for (int n : m.nodeCounts) counts += (counts.empty() ? "" : ", ") + std::to_string(n);
    for (const auto& h : m.heldOut) {
      held +=
          (held.empty() ? "" : "; ") + std::to_string(h.nodes) + ": " + percent(h.medianRelError);
    }
    os << "<tr><td>" << escapeXml(m.collective) << "</td><td class=\"num\">" << m.ranksPerNode
       << "</td><td title=\"" << escapeXml(m.setup) << "\">" << escapeXml(shortSetup(m.setup))
       << "</td><td><span class=\"swatch\" style=\"background:" << colour(m.label) << "\"></span>"
       << escapeXml(m.label) << "</td><td>" << counts << "</td><td>" << nodeScaleName(m.scale)
       << "</td><td class=\"num\">"
       << (std::isfinite(m.medianRelError) ? percent(m.medianRelError) : "—") << "</td><td>" << held
       << "</td></tr>\n";
  }
  os << "</table>\n";
  int rangeRules = 0;
  for (const NodeRange& r : fit.nodeRanges) {
    for (const Band& b : r.bands) rangeRules += b.series != kDefaultChoice;
  }
  os << "<p>" << fit.nodeRanges.size()
     << " range(s) of unmeasured node counts lie between measured ones; " << rangeRules
     << " band(s) there override NCCL's default (a configuration must win at both neighbouring "
        "node counts, and the model must predict a gain above its own error in between).</p>\n";
  os << "<div class=\"charts\">\n";
  int index = 0;
  for (const NodeModelReport& m : fit.nodeModels) {
    if (m.nodeCounts.size() >= 3) os << heldOutChart(m, index++);
  }
  os << "</div></section>\n";
}

std::string fixed3(double v) {
  if (!std::isfinite(v)) return "—";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

std::string share(double v) {
  return std::isfinite(v) ? percent(v) : std::string("—");
}

void heldOutSection(std::ostringstream& os, const HeldOutScores& h) {
  const TableScore& in = h.inSample;
  const TableScore& out = h.heldOut;
  os << "<section class=\"inputs\"><h2>Held-out scores</h2><p>The table scored on the runs it "
        "was fitted on and on sweeps it never saw: ";
  for (size_t i = 0; i < h.inputs.size(); ++i) {
    os << (i ? ", " : "") << "<code>" << escapeXml(h.inputs[i]) << "</code>";
  }
  os << ".</p>\n<table class=\"decisions\"><tr><th></th><th>in-sample</th><th>held-out</th></tr>\n";
  auto row = [&](const char* name, const std::string& a, const std::string& b) {
    os << "<tr><td>" << name << "</td><td class=\"num\">" << escapeXml(a)
       << "</td><td class=\"num\">" << escapeXml(b) << "</td></tr>\n";
  };
  auto worst = [](const TableScore& s) {
    return s.worst < 0 ? std::string("—")
                       : fixed3(s.sizes[static_cast<size_t>(s.worst)].speedup) + " at " +
                             detail::bytes(s.sizes[static_cast<size_t>(s.worst)].size);
  };
  row("sizes scored", std::to_string(in.scored), std::to_string(out.scored));
  row("geomean fraction of the fastest, table", fixed3(in.fraction), fixed3(out.fraction));
  row("geomean fraction of the fastest, NCCL default", fixed3(in.defaultFraction),
      fixed3(out.defaultFraction));
  row("share of the default-to-fastest gap captured", share(in.gapCaptured),
      share(out.gapCaptured));
  row("geomean speedup over NCCL's default", fixed3(in.speedup), fixed3(out.speedup));
  row("sizes slower than the default beyond noise", std::to_string(in.slowerSizes),
      std::to_string(out.slowerSizes));
  row("worst speedup", worst(in), worst(out));
  os << "</table>\n";
  if (!out.notes.empty()) {
    os << "<ul class=\"notes\">";
    for (const std::string& n : out.notes) os << "<li>" << escapeXml(n) << "</li>";
    os << "</ul>\n";
  }
  os << "<details><summary>Held out, per size (" << out.sizes.size()
     << ")</summary><table class=\"decisions\"><tr><th>shape</th><th>size</th><th>chosen</th>"
        "<th>speedup</th><th>fraction of "
        "fastest</th><th>fastest</th><th>noise</th><th></th></tr>\n";
  for (const TableSizeScore& x : out.sizes) {
    os << "<tr><td>" << escapeXml(x.shape.str()) << "</td><td class=\"num\">"
       << detail::bytes(x.size) << "</td><td>" << escapeXml(x.chosen) << "</td><td class=\"num\">"
       << (x.scored ? fixed3(x.speedup) : "—") << "</td><td class=\"num\">"
       << (x.scored ? fixed3(x.fraction) : "—") << "</td><td>" << escapeXml(x.best)
       << "</td><td class=\"num\">" << percent(x.noise) << "</td><td>"
       << (x.slower ? "slower than the default beyond noise" : "") << "</td></tr>\n";
  }
  os << "</table></details></section>\n";
}

}  // namespace

std::string reportHtml(const FitResult& fit, const ReportChoices& choices,
                       const ReportOptions& options) {
  Palette colour;
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>"
     << escapeXml(options.title) << "</title>\n<style>" << detail::kReportCss
     << "</style></head><body>\n";
  os << "<header><h1>" << escapeXml(options.title) << "</h1><p class=\"meta\">"
     << escapeXml(options.date.empty() ? detail::utcNow("%Y-%m-%d %H:%M UTC") : options.date)
     << " · nccl-pilot " << escapeXml(options.toolVersion) << " · NCCL "
     << escapeXml(fit.ncclVersion.empty() ? "unknown/mixed" : fit.ncclVersion) << " · margin "
     << percent(fit.options.margin) << " · min-repeats " << fit.options.minRepeats
     << " · choices: " << escapeXml(choices.source == "fit" ? "fitted now" : choices.source)
     << "</p></header>\n";

  int runs = 0;
  for (const Shape& s : fit.data.shapes) {
    for (const Series& se : s.series) runs += static_cast<int>(se.runs.size());
  }
  int bands = 0;
  for (const auto& list : choices.bands) {
    for (const Band& b : list) bands += b.series != kDefaultChoice;
  }
  os << "<section class=\"cards\"><div><b>" << fit.data.shapes.size() << "</b>shapes</div><div><b>"
     << runs << "</b>runs used</div><div><b>" << fit.data.excluded.size()
     << "</b>runs excluded</div><div><b>" << bands << "</b>override bands</div><div><b>"
     << fit.rules.size() << "</b>rules fitted</div></section>\n";
  os << "<section class=\"inputs\"><p><b>Inputs:</b> ";
  for (size_t i = 0; i < options.inputs.size(); ++i) {
    os << (i ? ", " : "") << "<code>" << escapeXml(options.inputs[i]) << "</code>";
  }
  os << "</p>\n<p class=\"small\">Times are nccl-tests' out-of-place column. A configuration "
        "overrides NCCL's default at a size only when its median beats the default's by more "
        "than the bar — max(margin, noise), noise being the largest (max−min)/median over "
        "repeats at that size and its neighbours — in every repeat, and at two adjacent sizes "
        "at least. Without repeats of the default the noise is estimated from the data (the "
        "distance between the default and its twin, the forced configuration nearest it, "
        "where every protocol was forced; else the roughness of each configuration's time "
        "against size), the margin counts twice and a "
        "band needs three adjacent winning sizes. Each shape says which evidence it rests "
        "on.</p>\n";
  std::vector<std::string> notes = fit.notes;
  notes.insert(notes.end(), choices.notes.begin(), choices.notes.end());
  if (!notes.empty()) {
    os << "<ul class=\"notes\">";
    for (const std::string& n : notes) os << "<li>" << escapeXml(n) << "</li>";
    os << "</ul>\n";
  }
  if (!fit.data.excluded.empty()) {
    os << "<details" << (fit.data.excluded.size() <= 5 ? " open" : "")
       << "><summary>Excluded runs (" << fit.data.excluded.size()
       << ")</summary><table class=\"decisions\"><tr><th>run</th><th>collective</th>"
          "<th>label</th><th>why</th></tr>\n";
    for (const ExcludedRun& e : fit.data.excluded) {
      std::string why;
      for (const std::string& r : e.reasons) why += (why.empty() ? "" : "; ") + r;
      os << "<tr><td><code>" << escapeXml(e.source) << "</code></td><td>" << escapeXml(e.collective)
         << "</td><td>" << escapeXml(e.label) << "</td><td>" << escapeXml(why) << "</td></tr>\n";
    }
    os << "</table></details>\n";
  }
  os << "</section>\n";

  if (options.scores) heldOutSection(os, *options.scores);
  nodeModels(os, fit, colour);
  if (fit.data.shapes.size() > 1) {
    os << "<nav><b>Shapes</b><ul>";
    for (size_t i = 0; i < fit.data.shapes.size(); ++i) {
      os << "<li><a href=\"#shape" << i << "\">"
         << escapeXml(shapeTitle(fit.data.shapes[i].key, true)) << "</a></li>";
    }
    os << "</ul></nav>\n";
  }

  for (size_t i = 0; i < fit.data.shapes.size(); ++i) {
    ShapeView v{fit.data.shapes[i], fit.shapes[i], {}, choices.bands[i]};
    for (const Decision& d : choices.decisions) {
      if (d.shape == v.shape.key) v.decisions.push_back(&d);
    }
    os << "<section class=\"shape\" id=\"shape" << i << "\"><h2>"
       << escapeXml(shapeTitle(v.shape.key)) << "</h2>\n<p class=\"configs\">";
    for (const Series& s : v.shape.series) {
      os << "<span><span class=\"swatch\" style=\"background:" << colour(s.label) << "\"></span><b>"
         << escapeXml(s.label) << "</b> " << escapeXml(forcing(s.config)) << ","
         << (s.calls > 0
                 ? s.countText()
                 : " " + std::to_string(s.runs.size()) + (s.runs.size() == 1 ? " run" : " runs"))
         << "</span>";
    }
    os << "</p>\n<p class=\"verdict\">" << escapeXml(verdict(v)) << "</p>\n";
    os << "<p class=\"small\">Evidence: " << escapeXml(v.fit.evidence.summary) << ". "
       << escapeXml(v.fit.keys) << ".</p>\n";
    if (v.shape.defaults() == nullptr) {
      os << "<p class=\"warn\">NCCL's default was not measured for this shape: nothing to "
            "compare against.</p>\n";
    }
    charts(os, v, colour, static_cast<int>(i));
    bandsTable(os, v, fit, colour);
    if (!v.decisions.empty()) decisionsTable(os, v);
    os << "</section>\n";
  }
  os << "<footer>Written by <code>nccl-pilot report</code>; see docs/calibration.md.</footer>\n"
        "</body></html>\n";
  return os.str();
}

}  // namespace pilot::calibration
