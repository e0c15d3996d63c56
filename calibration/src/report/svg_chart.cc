#include "pilot/calibration/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "pilot/core/text.h"

namespace pilot::calibration::detail {

using text::escapeXml;

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string defaultFormat(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// 1, 2 or 5 times a power of ten, giving about `count` steps over `span`.
double niceStep(double span, int count) {
  const double raw = span / count;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

/// Plot geometry: data to pixel transforms.
struct Frame {
  double left = 64, top = 34, plotW = 0, plotH = 0;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;  // data range, x in log2, y in log10 when logY
  bool logY = false;

  double px(double x) const { return left + (std::log2(x) - x0) / (x1 - x0) * plotW; }
  double py(double y) const {
    const double v = logY ? std::log10(y) : y;
    return top + plotH - (v - y0) / (y1 - y0) * plotH;
  }
};

}  // namespace

std::string renderChart(const Chart& c) {
  // The legend column fits its longest entry (about 6.3 px per character at 11 px).
  size_t longest = c.shadeLabel.size();
  for (const ChartLine& l : c.lines) longest = std::max(longest, l.name.size());
  const double legendW = std::clamp(40.0 + 6.3 * static_cast<double>(longest), 120.0, 280.0);
  Frame f;
  f.logY = c.logY;
  f.plotW = c.width - f.left - legendW - 12;
  f.plotH = c.height - f.top - 46;

  double xmin = std::numeric_limits<double>::max(), xmax = 0;
  double ymin = std::numeric_limits<double>::max(), ymax = -std::numeric_limits<double>::max();
  auto seeY = [&](double y) {
    if (c.logY && !(y > 0)) return;
    ymin = std::min(ymin, y), ymax = std::max(ymax, y);
  };
  for (const ChartLine& l : c.lines) {
    for (const ChartPoint& p : l.points) {
      if (!(p.x > 0)) continue;
      xmin = std::min(xmin, p.x), xmax = std::max(xmax, p.x);
      seeY(p.y);
      if (p.lo != p.hi) seeY(p.lo), seeY(p.hi);
    }
  }
  if (xmax == 0) return "<p>(no data)</p>";
  if (c.shadeLo != c.shadeHi) seeY(c.shadeLo), seeY(c.shadeHi);
  if (c.zeroLine) seeY(0);
  f.x0 = std::log2(xmin) - 0.4;
  f.x1 = std::log2(xmax) + 0.4;
  if (c.logY) {
    f.y0 = std::floor(std::log10(ymin) * 10) / 10 - 0.05;
    f.y1 = std::ceil(std::log10(ymax) * 10) / 10 + 0.05;
  } else {
    const double pad = (ymax - ymin) * 0.06 + 1e-9;
    f.y0 = ymin - pad;
    f.y1 = ymax + pad;
  }
  const auto yFormat = c.yFormat ? c.yFormat : defaultFormat;

  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" << c.width
     << "\" height=\"" << c.height << "\" viewBox=\"0 0 " << c.width << " " << c.height
     << "\" font-family=\"system-ui, sans-serif\" font-size=\"11\">\n";
  os << "<text x=\"" << f.left << "\" y=\"18\" font-size=\"13\" font-weight=\"600\">"
     << escapeXml(c.title) << "</text>\n";
  os << "<defs><clipPath id=\"clip" << c.id << "\"><rect x=\"" << num(f.left) << "\" y=\""
     << num(f.top) << "\" width=\"" << num(f.plotW) << "\" height=\"" << num(f.plotH)
     << "\"/></clipPath></defs>\n";
  os << "<rect x=\"" << num(f.left) << "\" y=\"" << num(f.top) << "\" width=\"" << num(f.plotW)
     << "\" height=\"" << num(f.plotH) << "\" fill=\"#fff\" stroke=\"#999\"/>\n";

  // Size bands behind everything.
  os << "<g clip-path=\"url(#clip" << c.id << ")\">\n";
  for (const ChartBand& b : c.bands) {
    const double a = std::max(f.px(std::max(b.x0, 1.0)), f.left);
    const double z = std::min(f.px(b.x1), f.left + f.plotW);
    if (z <= a) continue;
    os << "<rect x=\"" << num(a) << "\" y=\"" << num(f.top) << "\" width=\"" << num(z - a)
       << "\" height=\"" << num(f.plotH) << "\" fill=\"" << b.color
       << "\" fill-opacity=\"0.13\"><title>" << escapeXml(b.label) << "</title></rect>\n";
    if (z - a > 36) {
      os << "<text x=\"" << num((a + z) / 2) << "\" y=\"" << num(f.top + 12)
         << "\" text-anchor=\"middle\" fill=\"" << b.color << "\" font-weight=\"600\">"
         << escapeXml(b.label) << "</text>\n";
    }
  }
  if (c.shadeLo != c.shadeHi) {
    const double ya = f.py(c.shadeHi), yb = f.py(c.shadeLo);
    os << "<rect x=\"" << num(f.left) << "\" y=\"" << num(ya) << "\" width=\"" << num(f.plotW)
       << "\" height=\"" << num(yb - ya) << "\" fill=\"#888\" fill-opacity=\"0.12\"/>\n";
  }
  os << "</g>\n";

  // Grid and ticks. x: powers of two, a label every 2^k so at most nine labels.
  const int e0 = static_cast<int>(std::ceil(f.x0)), e1 = static_cast<int>(std::floor(f.x1));
  int every = 1;
  while ((e1 - e0) / every > 8) every *= 2;
  for (int e = e0; e <= e1; ++e) {
    const double x = f.px(std::exp2(e));
    const bool major = e % every == 0;
    os << "<line x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\""
       << num(major ? f.top : f.top + f.plotH - 4) << "\" y2=\"" << num(f.top + f.plotH)
       << "\" stroke=\"" << (major ? "#e3e3e3" : "#bbb") << "\"/>\n";
    if (major) {
      os << "<text x=\"" << num(x) << "\" y=\"" << num(f.top + f.plotH + 15)
         << "\" text-anchor=\"middle\">" << text::formatBytes(uint64_t{1} << e) << "</text>\n";
    }
  }
  os << "<text x=\"" << num(f.left + f.plotW / 2) << "\" y=\"" << num(f.top + f.plotH + 34)
     << "\" text-anchor=\"middle\">message size (bytes, log scale)</text>\n";
  std::vector<double> yTicks;
  if (c.logY && f.y1 - f.y0 < 1) {
    // Less than a decade: evenly stepped values, placed on the log scale.
    const double lo = std::pow(10.0, f.y0), hi = std::pow(10.0, f.y1);
    const double step = niceStep(hi - lo, 6);
    for (double v = std::ceil(lo / step) * step; v <= hi; v += step) yTicks.push_back(v);
  } else if (c.logY) {
    const int d0 = static_cast<int>(std::floor(f.y0)), d1 = static_cast<int>(std::ceil(f.y1));
    const bool fine = d1 - d0 <= 3;
    for (int d = d0; d <= d1; ++d) {
      for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
        const double v = m * std::pow(10.0, d);
        if (std::log10(v) >= f.y0 && std::log10(v) <= f.y1) yTicks.push_back(v);
      }
    }
  } else {
    const double step = niceStep(f.y1 - f.y0, 6);
    for (double v = std::ceil(f.y0 / step) * step; v <= f.y1; v += step) {
      yTicks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
    }
  }
  for (double v : yTicks) {
    const double y = f.py(v);
    os << "<line x1=\"" << num(f.left) << "\" x2=\"" << num(f.left + f.plotW) << "\" y1=\""
       << num(y) << "\" y2=\"" << num(y) << "\" stroke=\"#e3e3e3\"/>\n";
    os << "<text x=\"" << num(f.left - 5) << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">"
       << escapeXml(yFormat(v)) << "</text>\n";
  }
  if (c.zeroLine) {
    os << "<line x1=\"" << num(f.left) << "\" x2=\"" << num(f.left + f.plotW) << "\" y1=\""
       << num(f.py(0)) << "\" y2=\"" << num(f.py(0)) << "\" stroke=\"#555\"/>\n";
  }
  os << "<text transform=\"translate(14," << num(f.top + f.plotH / 2)
     << ") rotate(-90)\" text-anchor=\"middle\">" << escapeXml(c.yLabel) << "</text>\n";

  // Lines, whiskers and points.
  os << "<g clip-path=\"url(#clip" << c.id << ")\">\n";
  for (const ChartLine& l : c.lines) {
    std::string d;
    for (const ChartPoint& p : l.points) {
      if (!(p.x > 0) || (c.logY && !(p.y > 0))) continue;
      d += (d.empty() ? "M" : " L") + num(f.px(p.x)) + " " + num(f.py(p.y));
    }
    os << "<path d=\"" << d << "\" fill=\"none\" stroke=\"" << l.color << "\" stroke-width=\""
       << l.width << "\"" << (l.dashed ? " stroke-dasharray=\"5 3\"" : "") << "/>\n";
    for (const ChartPoint& p : l.points) {
      if (!(p.x > 0) || (c.logY && !(p.y > 0))) continue;
      const double x = f.px(p.x);
      if (p.lo != p.hi && (!c.logY || p.lo > 0)) {
        os << "<path d=\"M" << num(x) << " " << num(f.py(p.lo)) << " V" << num(f.py(p.hi)) << " M"
           << num(x - 2.5) << " " << num(f.py(p.lo)) << " h5 M" << num(x - 2.5) << " "
           << num(f.py(p.hi)) << " h5\" stroke=\"" << l.color << "\" stroke-width=\"1\"/>\n";
      }
      os << "<circle cx=\"" << num(x) << "\" cy=\"" << num(f.py(p.y)) << "\" r=\""
         << (p.mark ? 4.5 : 2.2) << "\" fill=\"" << (p.mark ? "#fff" : l.color) << "\" stroke=\""
         << l.color << "\" stroke-width=\"" << (p.mark ? 2 : 0) << "\"><title>" << escapeXml(l.name)
         << " @ " << text::formatBytes(static_cast<uint64_t>(p.x)) << ": "
         << escapeXml(yFormat(p.y)) << "</title></circle>\n";
    }
  }
  os << "</g>\n";

  // Legend in the right-hand column.
  double ly = f.top + 6;
  const double lx = f.left + f.plotW + 14;
  for (const ChartLine& l : c.lines) {
    os << "<line x1=\"" << num(lx) << "\" x2=\"" << num(lx + 22) << "\" y1=\"" << num(ly)
       << "\" y2=\"" << num(ly) << "\" stroke=\"" << l.color << "\" stroke-width=\""
       << std::max(2.0, l.width) << "\"" << (l.dashed ? " stroke-dasharray=\"5 3\"" : "") << "/>\n";
    os << "<text x=\"" << num(lx + 28) << "\" y=\"" << num(ly + 4) << "\">" << escapeXml(l.name)
       << "</text>\n";
    ly += 17;
  }
  if (c.shadeLo != c.shadeHi && !c.shadeLabel.empty()) {
    os << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly - 6) << "\" width=\"22\" height=\"12\" "
       << "fill=\"#888\" fill-opacity=\"0.25\"/>\n";
    os << "<text x=\"" << num(lx + 28) << "\" y=\"" << num(ly + 4) << "\">"
       << escapeXml(c.shadeLabel) << "</text>\n";
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace pilot::calibration::detail
