#include "parse/column_layout.h"

#include <cmath>

#include "parse/support.h"
#include "pilot/core/text.h"

namespace pilot::calibration::detail {
namespace {

std::string_view withoutHash(std::string_view line) {
  line = text::trim(line);
  while (!line.empty() && line.front() == '#') line.remove_prefix(1);
  return text::trim(line);
}

bool isAny(std::string_view token, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (text::equalsIgnoreCase(token, name)) return true;
  }
  return false;
}

}  // namespace

std::optional<ColumnLayout> layoutFromHeader(std::string_view line) {
  const std::vector<std::string_view> tokens = text::splitWhitespace(withoutHash(line));
  ColumnLayout layout;
  bool sawBandwidth = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string_view t = tokens[i];
    const int at = static_cast<int>(i);
    if (isAny(t, {"time", "cputime"})) {
      Placement p;
      p.inPlace = !layout.placements.empty();
      p.time = at;
      layout.cpuTime = layout.cpuTime || text::equalsIgnoreCase(t, "cputime");
      layout.placements.push_back(p);
      continue;
    }
    if (layout.placements.empty()) {
      if (isAny(t, {"size", "bytes"})) {
        layout.size = at;
      } else if (isAny(t, {"count", "N", "elements"})) {
        layout.count = at;
      } else if (isAny(t, {"type"})) {
        layout.type = at;
      } else if (isAny(t, {"redop", "op"})) {
        layout.redop = at;
      } else if (isAny(t, {"root"})) {
        layout.root = at;
      } else {
        return std::nullopt;  // not a header we know: better unread than misread
      }
      continue;
    }
    Placement& p = layout.placements.back();
    if (isAny(t, {"algbw"})) {
      p.algbw = at;
      sawBandwidth = true;
    } else if (isAny(t, {"busbw"})) {
      p.busbw = at;
    } else if (isAny(t, {"#wrong", "wrong"})) {
      p.wrong = at;
    } else if (isAny(t, {"error", "res"})) {
      // Old releases print a maximum deviation here, not a count; it is not a verdict.
    } else if (isAny(t, {"i_min"})) {
      p.iterMin = at;
    } else if (isAny(t, {"i_max"})) {
      p.iterMax = at;
    } else if (isAny(t, {"i_p99"})) {
      p.iterP99 = at;
    } else if (isAny(t, {"i_cv%"})) {
      p.iterCv = at;
    } else if (isAny(t, {"timestamp"}) && i + 1 == tokens.size()) {
      layout.timestamp = true;
      continue;
    } else {
      return std::nullopt;
    }
  }
  if (layout.size < 0 || layout.placements.empty() || !sawBandwidth) return std::nullopt;
  for (const Placement& p : layout.placements) {
    if (p.algbw < 0 || p.busbw < 0) return std::nullopt;
  }
  layout.fields = static_cast<int>(tokens.size()) - (layout.timestamp ? 1 : 0);
  return layout;
}

ColumnLayout standardLayout() {
  return *layoutFromHeader(
      "size count type redop root time algbw busbw #wrong time algbw busbw #wrong");
}

bool isHeaderDecoration(std::string_view line) {
  const auto tokens = text::splitWhitespace(withoutHash(line));
  if (tokens.empty()) return false;
  if (tokens[0] == "(B)") return true;
  bool placement = false;
  for (std::string_view t : tokens) {
    if (t == "out-of-place" || t == "in-place") {
      placement = true;
    } else if (t != "(+" && t != "per-iteration)") {
      return false;
    }
  }
  return placement;
}

ParsedRow parseRow(const ColumnLayout& layout, const std::vector<std::string_view>& tokens) {
  ParsedRow row;
  const int want = layout.fields + (layout.timestamp ? 2 : 0);
  if (static_cast<int>(tokens.size()) != want) {
    row.error =
        std::to_string(tokens.size()) + " fields where the header has " + std::to_string(want);
    return row;
  }
  auto size = text::parseUnsigned(tokens[static_cast<size_t>(layout.size)]);
  std::optional<uint64_t> count =
      layout.count >= 0 ? text::parseUnsigned(tokens[static_cast<size_t>(layout.count)])
                        : std::optional<uint64_t>(0);
  if (!size || !count) {
    row.error = "size or count is not a whole number";
    return row;
  }
  auto field = [&](int index) { return tokens[static_cast<size_t>(index)]; };
  auto optionalNumber = [&](int index) -> double {
    if (index < 0) return -1;
    auto v = parseNumber(field(index));
    return v ? *v : -1;
  };
  for (const Placement& p : layout.placements) {
    Sample s;
    s.size = *size;
    s.count = *count;
    s.inPlace = p.inPlace;
    if (layout.type >= 0) s.type = std::string(field(layout.type));
    if (layout.redop >= 0) s.redop = std::string(field(layout.redop));
    auto time = parseNumber(field(p.time));
    auto algbw = parseNumber(field(p.algbw));
    auto busbw = parseNumber(field(p.busbw));
    if (!time || !algbw || !busbw || *time < 0) {
      row.samples.clear();
      row.error = std::string(p.inPlace ? "in-place" : "out-of-place") +
                  " time or bandwidth is not a number";
      return row;
    }
    s.timeUs = *time;
    s.algbw = *algbw;
    s.busbw = *busbw;
    s.wrong = -1;
    if (p.wrong >= 0 && field(p.wrong) != "N/A") {
      auto wrong = parseNumber(field(p.wrong));
      if (!wrong || *wrong < 0) {
        row.samples.clear();
        row.error = "#wrong '" + std::string(field(p.wrong)) + "' is not a count";
        return row;
      }
      s.wrong = static_cast<long>(std::llround(*wrong));
    }
    s.iterMinUs = optionalNumber(p.iterMin);
    s.iterMaxUs = optionalNumber(p.iterMax);
    s.iterP99Us = optionalNumber(p.iterP99);
    s.iterCvPct = optionalNumber(p.iterCv);
    row.samples.push_back(std::move(s));
  }
  return row;
}

}  // namespace pilot::calibration::detail
