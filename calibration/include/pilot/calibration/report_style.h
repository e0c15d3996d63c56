// The report pages' stylesheet (`report` and `monitor`), inlined so a page stands alone.
#pragma once

namespace pilot::calibration::detail {

inline constexpr const char* kReportCss = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d1d1f;
       margin: 0 auto; max-width: 1420px; padding: 18px 24px 40px; background: #f6f7f9; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 0 0 6px; }
h3 { font-size: 14px; margin: 8px 0 6px; }
.meta, .small { color: #555; font-size: 12.5px; }
.cards { display: flex; gap: 12px; margin: 14px 0; }
.cards div { background: #fff; border: 1px solid #dde; border-radius: 8px; padding: 8px 16px;
             min-width: 110px; color: #555; }
.cards b { display: block; font-size: 22px; color: #1d1d1f; }
.inputs, .shape, #nodes { background: #fff; border: 1px solid #dde; border-radius: 8px;
                          padding: 12px 16px; margin: 12px 0; }
nav { background: #fff; border: 1px solid #dde; border-radius: 8px; padding: 8px 16px; }
nav ul { columns: 3; margin: 4px 0; padding-left: 18px; font-size: 13px; }
.configs span { margin-right: 16px; white-space: nowrap; font-size: 13px; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px;
          margin-right: 5px; vertical-align: -1px; border: 1px solid #999; }
.verdict { background: #eef5ee; border-left: 4px solid #3a3; padding: 6px 10px; margin: 8px 0; }
.warn { background: #fdf3e6; border-left: 4px solid #e90; padding: 6px 10px; }
.notes li { color: #8a5300; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(640px, 1fr));
          gap: 10px; align-items: start; }
svg.chart { background: #fcfcfd; border: 1px solid #e4e4ea; border-radius: 6px; }
table { border-collapse: collapse; font-size: 12.5px; }
th, td { border-bottom: 1px solid #e4e4ea; padding: 3px 8px; text-align: left; }
th { background: #f0f1f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.chosen td { background: #eef5ee; }
pre.rules { background: #f4f4f6; padding: 6px 8px; border-radius: 4px; font-size: 12px;
            white-space: pre-wrap; }
details { margin-top: 10px; } summary { cursor: pointer; color: #225; }
footer { color: #777; font-size: 12px; margin-top: 20px; }
)css";

}  // namespace pilot::calibration::detail
