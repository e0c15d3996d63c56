// Line charts as inline SVG, written by hand so the report needs nothing fetched or installed.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace pilot::calibration::detail {

struct ChartPoint {
  double x = 0, y = 0;
  double lo = 0, hi = 0;  ///< whisker (min..max over repeats); lo == hi draws none
  bool mark = false;      ///< drawn large: the point a decision rests on
};

struct ChartLine {
  std::string name;
  std::string color;  ///< CSS colour
  std::vector<ChartPoint> points;
  double width = 1.6;
  bool dashed = false;
};

/// A shaded x-range behind the lines (a size band and its choice).
struct ChartBand {
  double x0 = 0, x1 = 0;
  std::string color;
  std::string label;
};

struct Chart {
  std::string id;  ///< unique in the page (names the clip path)
  std::string title;
  std::string yLabel;
  bool logY = false;
  int width = 640, height = 360;
  std::vector<ChartLine> lines;
  std::vector<ChartBand> bands;
  /// A shaded y-range across the plot (the noise bar on a gain chart); skipped when lo == hi.
  double shadeLo = 0, shadeHi = 0;
  std::string shadeLabel;
  bool zeroLine = false;  ///< a rule at y = 0
  /// Formats a y tick value (the x axis is always message size in bytes, log scale).
  std::function<std::string(double)> yFormat;
};

/// The chart as an <svg> element, sized width x height, with axes, ticks, legend and a
/// <title> per point for hover read-outs.
std::string renderChart(const Chart& chart);

}  // namespace pilot::calibration::detail
