// pilot::text: the number and byte-count readers the table parser is built on, and the XML/HTML
// escaper of the topology writer and the calibration report.
#include "pilot/core/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace pilot::text {
namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

TEST(ParseBytes, PlainNumbers) {
  EXPECT_EQ(parseBytes("0"), 0u);
  EXPECT_EQ(parseBytes("64"), 64u);
  EXPECT_EQ(parseBytes("4096"), 4096u);
  EXPECT_EQ(parseBytes("4294967295"), 4294967295u);
  EXPECT_EQ(parseBytes("18446744073709551615"), kU64Max);
  EXPECT_EQ(parseBytes("64b"), 64u);
  EXPECT_EQ(parseBytes("64B"), 64u);
}

TEST(ParseBytes, BinarySuffixes) {
  EXPECT_EQ(parseBytes("4K"), 4096u);
  EXPECT_EQ(parseBytes("4KiB"), 4096u);
  EXPECT_EQ(parseBytes("4KB"), 4096u);
  EXPECT_EQ(parseBytes("16M"), 16ull << 20);
  EXPECT_EQ(parseBytes("16MiB"), 16ull << 20);
  EXPECT_EQ(parseBytes("1G"), 1ull << 30);
  EXPECT_EQ(parseBytes("1GiB"), 1ull << 30);
  EXPECT_EQ(parseBytes("2T"), 2ull << 40);
  EXPECT_EQ(parseBytes("2TiB"), 2ull << 40);
  EXPECT_EQ(parseBytes("0K"), 0u);
  EXPECT_EQ(parseBytes("1536K"), 1536ull << 10);
}

TEST(ParseBytes, SuffixIsCaseInsensitive) {
  EXPECT_EQ(parseBytes("4k"), 4096u);
  EXPECT_EQ(parseBytes("4kib"), 4096u);
  EXPECT_EQ(parseBytes("4KIB"), 4096u);
  EXPECT_EQ(parseBytes("4kIb"), 4096u);
  EXPECT_EQ(parseBytes("16m"), 16ull << 20);
  EXPECT_EQ(parseBytes("1g"), 1ull << 30);
  EXPECT_EQ(parseBytes("2t"), 2ull << 40);
  EXPECT_EQ(parseBytes("2tib"), 2ull << 40);
}

TEST(ParseBytes, OverflowIsRejected) {
  EXPECT_EQ(parseBytes("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parseBytes("99999999999999999999"), std::nullopt);
  EXPECT_EQ(parseBytes("999999999999999999999999"), std::nullopt);
  // The largest multiples that still fit, and one more.
  EXPECT_EQ(parseBytes("16777215T"), 16777215ull << 40);
  EXPECT_EQ(parseBytes("16777216T"), std::nullopt);
  EXPECT_EQ(parseBytes("17179869183G"), 17179869183ull << 30);
  EXPECT_EQ(parseBytes("17179869184G"), std::nullopt);
  EXPECT_EQ(parseBytes("18014398509481983K"), 18014398509481983ull << 10);
  EXPECT_EQ(parseBytes("18014398509481984K"), std::nullopt);
}

TEST(ParseBytes, RejectsGarbageAndEmpty) {
  for (const char* s :
       {"",    "K",  "KiB", "-1",    "-4K",  "+4",  "1.5K", "4 K", " 4", "4 ", "4K ",
        "4KK", "4X", "4Ki", "4KiBB", "0x10", "1e3", "four", "4K4", "4P", "4E"}) {
    EXPECT_EQ(parseBytes(s), std::nullopt) << "'" << s << "'";
  }
}

TEST(ParseUnsigned, Limits) {
  EXPECT_EQ(parseUnsigned("0"), 0u);
  EXPECT_EQ(parseUnsigned("7"), 7u);
  EXPECT_EQ(parseUnsigned("18446744073709551615"), kU64Max);
  EXPECT_EQ(parseUnsigned("18446744073709551614"), kU64Max - 1);
  EXPECT_EQ(parseUnsigned("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parseUnsigned("18446744073709551620"), std::nullopt);
  EXPECT_EQ(parseUnsigned("100000000000000000000"), std::nullopt);
  EXPECT_EQ(parseUnsigned("00042"), 42u);
}

TEST(ParseUnsigned, RejectsAnythingButDigits) {
  for (const char* s : {"", "-0", "-1", "+1", " 1", "1 ", "1a", "a1", "1.0", "1K", "0x1"}) {
    EXPECT_EQ(parseUnsigned(s), std::nullopt) << "'" << s << "'";
  }
}

TEST(ParseSigned, Limits) {
  EXPECT_EQ(parseSigned("0"), 0);
  EXPECT_EQ(parseSigned("-0"), 0);
  EXPECT_EQ(parseSigned("-1"), -1);
  EXPECT_EQ(parseSigned("42"), 42);
  EXPECT_EQ(parseSigned("9223372036854775807"), kI64Max);
  EXPECT_EQ(parseSigned("-9223372036854775807"), -kI64Max);
  EXPECT_EQ(parseSigned("-9223372036854775808"), kI64Min);
  EXPECT_EQ(parseSigned("9223372036854775808"), std::nullopt);
  EXPECT_EQ(parseSigned("-9223372036854775809"), std::nullopt);
  EXPECT_EQ(parseSigned("18446744073709551615"), std::nullopt);
  EXPECT_EQ(parseSigned("-18446744073709551616"), std::nullopt);
}

TEST(ParseSigned, RejectsGarbage) {
  for (const char* s : {"", "-", "--1", "+1", "- 1", " -1", "-1 ", "1-", "-1a", "-x"}) {
    EXPECT_EQ(parseSigned(s), std::nullopt) << "'" << s << "'";
  }
}

TEST(FormatBytes, UsesTheLargestExactSuffix) {
  EXPECT_EQ(formatBytes(0), "0");
  EXPECT_EQ(formatBytes(1), "1");
  EXPECT_EQ(formatBytes(1023), "1023");
  EXPECT_EQ(formatBytes(1024), "1K");
  EXPECT_EQ(formatBytes(1536), "1536");
  EXPECT_EQ(formatBytes(4096), "4K");
  EXPECT_EQ(formatBytes(65537), "65537");
  EXPECT_EQ(formatBytes(1536ull << 10), "1536K");
  EXPECT_EQ(formatBytes(16ull << 20), "16M");
  EXPECT_EQ(formatBytes(1ull << 30), "1G");
  EXPECT_EQ(formatBytes(2ull << 40), "2T");
  EXPECT_EQ(formatBytes(1ull << 50), "1024T");  // T is the largest suffix
  EXPECT_EQ(formatBytes((1ull << 50) + 1024), "1099511627777K");
  EXPECT_EQ(formatBytes(kU64Max), "18446744073709551615");
}

TEST(FormatBytes, RoundTripsThroughParseBytes) {
  std::vector<uint64_t> values = {0,
                                  1,
                                  1023,
                                  1024,
                                  1025,
                                  4095,
                                  4096,
                                  65535,
                                  65536,
                                  1ull << 20,
                                  1ull << 30,
                                  1ull << 40,
                                  1ull << 50,
                                  1ull << 63,
                                  kU64Max,
                                  kU64Max - 1023,
                                  (kU64Max >> 10) << 10,
                                  4294967295u};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    uint64_t v = rng();
    values.push_back(v >> (rng() % 64));
    values.push_back((v >> (rng() % 64)) << (10 * (rng() % 5)));
  }
  for (uint64_t v : values) {
    std::string s = formatBytes(v);
    EXPECT_EQ(parseBytes(s), v) << s;
  }
}

TEST(EscapeXml, EscapesTheFiveMarkupCharacters) {
  EXPECT_EQ(escapeXml(""), "");
  EXPECT_EQ(escapeXml("plain text 64K"), "plain text 64K");
  EXPECT_EQ(escapeXml("&<>\"'"), "&amp;&lt;&gt;&quot;&#39;");
  EXPECT_EQ(escapeXml("<b>x&y</b>"), "&lt;b&gt;x&amp;y&lt;/b&gt;");
  EXPECT_EQ(escapeXml("O'Brien \"A&B\""), "O&#39;Brien &quot;A&amp;B&quot;");
  // Already-escaped text is escaped again: the helper takes raw text, never markup.
  EXPECT_EQ(escapeXml("&amp;"), "&amp;amp;");
  // Bytes past ASCII (UTF-8 here) and control characters pass through unchanged.
  EXPECT_EQ(escapeXml("\xc2\xb7 \t\n"), "\xc2\xb7 \t\n");
}

TEST(Split, KeepsEmptyFields) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(split("a,b,c", ','), (V{"a", "b", "c"}));
  EXPECT_EQ(split("", ','), (V{""}));
  EXPECT_EQ(split("abc", ','), (V{"abc"}));
  EXPECT_EQ(split(",,", ','), (V{"", "", ""}));
  EXPECT_EQ(split("a,", ','), (V{"a", ""}));
  EXPECT_EQ(split(",a", ','), (V{"", "a"}));
  EXPECT_EQ(split("ring|tree", '|'), (V{"ring", "tree"}));
  EXPECT_EQ(split(" a , b ", ','), (V{" a ", " b "}));
}

TEST(Trim, RemovesSpacesTabsAndLineEnds) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim("\t\tx"), "x");
  EXPECT_EQ(trim("x\r"), "x");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t\r\n "), "");
  EXPECT_EQ(trim("a"), "a");
  EXPECT_EQ(trim("a  b"), "a  b");
}

TEST(SplitWhitespace, SplitsOnRunsOfBlanks) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(splitWhitespace("  a \t b  c"), (V{"a", "b", "c"}));
  EXPECT_EQ(splitWhitespace(""), V{});
  EXPECT_EQ(splitWhitespace(" \t "), V{});
  EXPECT_EQ(splitWhitespace("one"), (V{"one"}));
}

TEST(Case, EqualsIgnoreCaseAndToLower) {
  EXPECT_TRUE(equalsIgnoreCase("NVLS_Tree", "nvls_tree"));
  EXPECT_TRUE(equalsIgnoreCase("", ""));
  EXPECT_FALSE(equalsIgnoreCase("ring", "rings"));
  EXPECT_FALSE(equalsIgnoreCase("ring", "rinG "));
  EXPECT_EQ(toLower("AllReduce LL128"), "allreduce ll128");
}

TEST(Decimal, ParsesFiniteNumbersOnly) {
  EXPECT_EQ(parseDecimal("12.5"), 12.5);
  EXPECT_EQ(parseDecimal("+3"), 3.0);
  EXPECT_EQ(parseDecimal("-0.25"), -0.25);
  EXPECT_EQ(parseDecimal("1e-3"), 1e-3);
  for (const char* bad :
       {"", "+", "++1", " 1", "1 ", "1,5", "nan", "inf", "1e999", "0x10", "abc"}) {
    EXPECT_EQ(parseDecimal(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(Decimal, FormatIsShortestAndRoundTrips) {
  EXPECT_EQ(formatDecimal(12.5), "12.5");
  EXPECT_EQ(formatDecimal(80.0), "80");
  EXPECT_EQ(formatDecimal(0.1), "0.1");
  for (double v : {1.0 / 3.0, 6.02214076e23, 5e-324, 123456.789}) {
    EXPECT_EQ(parseDecimal(formatDecimal(v)), v) << formatDecimal(v);
  }
}

TEST(Decimal, TruncatesIntoOnlyWhereTheConversionIsDefined) {
  EXPECT_TRUE(truncatesInto<int>(2147483647.9));
  EXPECT_TRUE(truncatesInto<int>(-2147483648.9));
  EXPECT_FALSE(truncatesInto<int>(2147483648.0));
  EXPECT_FALSE(truncatesInto<int>(-2147483649.0));
  EXPECT_FALSE(truncatesInto<int>(1e300));
  EXPECT_TRUE(truncatesInto<uint64_t>(-0.5));
  EXPECT_FALSE(truncatesInto<uint64_t>(-1.0));
  EXPECT_TRUE(truncatesInto<uint64_t>(18446744073709549568.0));   // 2^64 - 2048
  EXPECT_FALSE(truncatesInto<uint64_t>(18446744073709551616.0));  // 2^64
  EXPECT_FALSE(truncatesInto<long>(std::nan("")));
}

}  // namespace
}  // namespace pilot::text
