// Small, allocation-light text helpers shared by the parsers.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace pilot::text {

std::string_view trim(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char separator);
/// Splits on runs of spaces and tabs.
std::vector<std::string_view> splitWhitespace(std::string_view s);
bool equalsIgnoreCase(std::string_view a, std::string_view b);
bool startsWith(std::string_view s, std::string_view prefix);
bool endsWith(std::string_view s, std::string_view suffix);
std::string toLower(std::string_view s);

/// A non-negative decimal integer that fits in uint64_t; nothing else (no sign, no spaces).
std::optional<uint64_t> parseUnsigned(std::string_view s);
/// A signed decimal integer in [INT64_MIN, INT64_MAX].
std::optional<int64_t> parseSigned(std::string_view s);
/// A byte count with an optional binary suffix: 64, 4K, 4KiB, 16M, 1G, 2T (K=1024).
/// Returns nullopt on garbage or overflow.
std::optional<uint64_t> parseBytes(std::string_view s);
/// Formats a byte count the way parseBytes reads it back (exact: 4K, 1536, 16G).
std::string formatBytes(uint64_t bytes);
/// A finite decimal number ("12.5", "-3", "1e-3", an optional leading '+'), whatever the
/// process locale (libraries inside a job must not depend on LC_NUMERIC); nothing else.
std::optional<double> parseDecimal(std::string_view s);
/// The shortest text parseDecimal reads back as exactly `value` ("12.5", "0.1", "3e+20").
std::string formatDecimal(double value);

/// Whether converting `value` to Integer (truncating toward zero) is defined: C++ leaves a
/// double past the integer's range (1e300 as an int) undefined, so readers of numbers from
/// files ask first.
template <typename Integer>
bool truncatesInto(double value) {
  static_assert(std::is_integral_v<Integer>);
  const double below = static_cast<double>(std::numeric_limits<Integer>::lowest()) - 1.0;
  return value > below && value < std::ldexp(1.0, std::numeric_limits<Integer>::digits);
}

/// Escapes & < > " ' for XML and HTML text and double- or single-quoted attribute values. The
/// apostrophe becomes &#39;, which XML and every HTML version read (&apos; is not HTML 4).
std::string escapeXml(std::string_view s);

/// A JSON string literal (quotes included) of arbitrary bytes: control characters and bytes
/// outside ASCII are escaped, so a line stays valid whatever NCCL, the user or a file named
/// things.
std::string jsonString(std::string_view value);

/// A Prometheus label value as the text exposition format escapes it (backslash, quote, newline).
std::string escapeLabelValue(std::string_view value);

}  // namespace pilot::text
