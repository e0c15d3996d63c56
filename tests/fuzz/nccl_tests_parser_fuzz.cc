// libFuzzer target: arbitrary bytes as nccl-tests output (text and -J JSON) and as the
// configuration / label syntax. For every input:
//  1. neither parser crashes (ASan/UBSan watch), and parsing is deterministic;
//  2. every run names its source, a failed run says why, times are finite and non-negative,
//     and there are no more result rows than input lines;
//  3. every run read as clean text round-trips: written back in nccl-tests' standard columns
//     (times with 17 significant digits) and parsed again, it gives the same rows;
//  4. a configuration spec that parses round-trips through configSpec() to the same forcing,
//     and glob matching of two input lines terminates.
// Any violation aborts with the details on stderr.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pilot/calibration/labels.h"
#include "pilot/calibration/nccl_tests_parser.h"

using namespace pilot::calibration;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "nccl_tests_parser_fuzz: %s\n", what.c_str());
  std::abort();
}

bool plainToken(const std::string& s) {
  if (s.empty() || s.size() > 16) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

void checkInvariants(const ParsedOutput& out, std::string_view text, bool lineRows) {
  size_t lines = 1;
  for (char c : text) lines += c == '\n';
  for (const ParsedRun& p : out.runs) {
    const Run& run = p.run;
    if (run.source.empty()) die("a run without a source");
    if (run.failed && run.problems.empty()) die("a failed run without a reason: " + run.source);
    size_t outOfPlace = 0;
    for (const Sample& s : run.samples) {
      if (!std::isfinite(s.timeUs) || s.timeUs < 0) die("bad time in " + run.source);
      if (!std::isfinite(s.algbw) || !std::isfinite(s.busbw)) die("bad bandwidth in " + run.source);
      outOfPlace += s.inPlace ? 0 : 1;
    }
    if (lineRows && outOfPlace > lines) die("more rows than lines in " + run.source);
  }
}

void checkSame(const ParsedOutput& a, const ParsedOutput& b, const std::string& what) {
  if (a.runs.size() != b.runs.size()) die(what + ": run counts differ");
  for (size_t i = 0; i < a.runs.size(); ++i) {
    const Run &x = a.runs[i].run, &y = b.runs[i].run;
    if (x.samples.size() != y.samples.size() || x.failed != y.failed ||
        x.collective != y.collective) {
      die(what + ": run " + std::to_string(i) + " differs");
    }
  }
}

/// Rows of one clean run written back in the standard layout: out-of-place then in-place.
void checkRoundTrip(const Run& run) {
  if (run.failed || run.samples.empty() || run.samples.size() % 2 != 0) return;
  std::string text =
      "# Collective test starting: all_reduce_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n";
  for (size_t i = 0; i < run.samples.size(); i += 2) {
    const Sample &o = run.samples[i], &n = run.samples[i + 1];
    if (o.inPlace || !n.inPlace || o.size != n.size || !plainToken(o.type) ||
        !plainToken(o.redop)) {
      return;  // another layout (-I, one placement) or tokens the layout cannot carry
    }
    char line[512];
    auto wrong = [](long w) { return w < 0 ? std::string("N/A") : std::to_string(w); };
    std::snprintf(line, sizeof line,
                  "%llu %llu %s %s -1 %.17g %.17g %.17g %s %.17g %.17g %.17g %s\n",
                  static_cast<unsigned long long>(o.size), static_cast<unsigned long long>(o.count),
                  o.type.c_str(), o.redop.c_str(), o.timeUs, o.algbw, o.busbw,
                  wrong(o.wrong).c_str(), n.timeUs, n.algbw, n.busbw, wrong(n.wrong).c_str());
    text += line;
  }
  text += "# Out of bounds values : 0 OK\n";
  const ParsedOutput again = parseNcclTestsText(text, "round-trip");
  if (again.runs.size() != 1) die("round trip of " + run.source + " is not one run:\n" + text);
  const std::vector<Sample>& s = again.runs[0].run.samples;
  if (s.size() != run.samples.size()) die("round trip of " + run.source + " lost rows:\n" + text);
  for (size_t i = 0; i < s.size(); ++i) {
    const Sample& a = run.samples[i];
    if (s[i].size != a.size || s[i].count != a.count || s[i].timeUs != a.timeUs ||
        s[i].busbw != a.busbw || s[i].wrong != a.wrong || s[i].inPlace != a.inPlace) {
      die("round trip of " + run.source + " changed row " + std::to_string(i) + ":\n" + text);
    }
  }
}

void checkSpec(std::string_view line) {
  auto config = parseConfigSpec(line);
  if (!config.ok()) return;
  const std::string spec = configSpec(*config);
  auto again = parseConfigSpec(spec);
  if (!again.ok()) die("configSpec output does not parse: '" + spec + "': " + again.error());
  if (forcingKey(*again) != forcingKey(*config)) die("spec round trip changed '" + spec + "'");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  const ParsedOutput out = parseNcclTestsText(text, "fuzz.txt");
  checkInvariants(out, text, /*lineRows=*/true);
  checkSame(out, parseNcclTestsText(text, "fuzz.txt"), "text parse twice");
  for (const ParsedRun& p : out.runs) checkRoundTrip(p.run);

  const ParsedOutput json = parseNcclTestsJson(text, "fuzz.json");
  checkInvariants(json, text, /*lineRows=*/false);

  // The first two lines as a spec, a label rule, and a glob over each other (bounded: the glob
  // memo is |pattern| x |text|).
  const size_t nl = text.find('\n');
  const std::string_view first = text.substr(0, std::min<size_t>(nl, 256));
  const std::string_view rest = nl == std::string_view::npos ? "" : text.substr(nl + 1, 256);
  checkSpec(first);
  if (auto rule = parseLabelRule(first); rule.ok()) (void)applyLabelRules({*rule}, rest);
  (void)globMatch(first, rest);
  return 0;
}
