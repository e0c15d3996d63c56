// libFuzzer target: arbitrary bytes as an nccl-tests -J file (parseNcclTestsJson). We have no
// writer of that format, so the oracle is a second reading of the same document, written from
// docs/sweep.md with nlohmann's own accessors, against which the parser's runs are checked:
//  1. no crash, no exception, no undefined behaviour (ASan/UBSan), and a deterministic result;
//  2. text that is not a JSON object gives no run and one problem naming the file;
//  3. otherwise the runs are one plus the -N cycles (a row whose size goes back to the first),
//     each named after the file; every row with a size, a count and only readable placements
//     gives its samples (out-of-place first) with the document's values, and no other row does;
//  4. a failed run says why; a #wrong above 0, out_of_bounds okay:false or a collective NCCL's
//     tuner does not decide fails every run; times are finite and non-negative.
// Any violation aborts with the details on stderr.
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "pilot/calibration/nccl_tests_parser.h"

using namespace pilot::calibration;
using nlohmann::json;

namespace {

const char* const kName = "fuzz.json";

/// The sample a placement object gives: time (or cpu_time) >= 0, both bandwidths, and a
/// #wrong that is absent, null or a number >= 0; nullptr members are "absent".
bool readablePlacement(const json& p, Sample* s) {
  if (!p.is_object()) return false;
  const json* time = p.contains("time")       ? &p["time"]
                     : p.contains("cpu_time") ? &p["cpu_time"]
                                              : nullptr;
  auto number = [&](const char* key) { return p.contains(key) && p[key].is_number(); };
  if (!time || !time->is_number() || !number("alg_bw") || !number("bus_bw")) return false;
  s->timeUs = time->get<double>();
  s->algbw = p["alg_bw"].get<double>();
  s->busbw = p["bus_bw"].get<double>();
  if (s->timeUs < 0) return false;
  if (p.contains("nwrong") && !p["nwrong"].is_null()) {
    if (!p["nwrong"].is_number() || p["nwrong"].get<double>() < 0) return false;
  }
  return true;
}

std::optional<uint64_t> whole(const json& row, const char* key) {
  if (!row.is_object() || !row.contains(key)) return std::nullopt;
  const json& v = row[key];
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
  return std::nullopt;
}

/// The samples the rows should give, in order, and how many runs the cycles make.
void expected(const json& doc, std::vector<Sample>* samples, size_t* runs) {
  *runs = 1;
  if (!doc.contains("results") || !doc["results"].is_array()) return;
  uint64_t first = 0, last = 0;
  bool any = false;
  for (const json& row : doc["results"]) {
    auto size = whole(row, "size"), count = whole(row, "count");
    if (!size || !count) continue;
    if (any && *size < last && *size == first) ++*runs;
    if (!any) first = *size;
    any = true;
    last = *size;
    std::vector<Sample> got;
    bool bad = false;
    for (const char* key : {"out_of_place", "in_place"}) {
      if (!row.contains(key) || row[key].is_null()) continue;
      Sample s;
      s.size = *size;
      s.inPlace = std::string_view(key) == "in_place";
      bad = bad || !readablePlacement(row[key], &s);
      got.push_back(s);
    }
    if (!bad) samples->insert(samples->end(), got.begin(), got.end());
  }
}

void checkRun(const Run& r, const json& doc) {
  if (r.source != kName) fuzz::die("a run named " + r.source);
  if (r.failed && r.problems.empty()) fuzz::die("a failed run without a reason");
  for (const Sample& s : r.samples) {
    if (!std::isfinite(s.timeUs) || s.timeUs < 0) fuzz::die("a time not finite and >= 0");
    if (s.wrong > 0 && !r.failed) fuzz::die("#wrong > 0 in a run that did not fail");
    if (s.wrong < -1) fuzz::die("#wrong below -1");
  }
  const json* oob = doc.contains("out_of_bounds") ? &doc["out_of_bounds"] : nullptr;
  if (oob && oob->is_object() && oob->contains("okay") && (*oob)["okay"] == false && !r.failed)
    fuzz::die("out_of_bounds okay:false, yet the run did not fail");
  const bool tuned = r.collective == "allreduce" || r.collective == "allgather" ||
                     r.collective == "reducescatter" || r.collective == "broadcast" ||
                     r.collective == "reduce";
  if (!tuned && !r.failed) fuzz::die("collective '" + r.collective + "' did not fail the run");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ParsedOutput out = parseNcclTestsJson(text, kName);
  const ParsedOutput again = parseNcclTestsJson(text, kName);
  const json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    if (!out.runs.empty() || out.problems.size() != 1) fuzz::die("runs from no JSON object");
    fuzz::checkError(out.problems[0], kName);
    return 0;
  }
  std::vector<Sample> want;
  size_t runs = 0;
  expected(doc, &want, &runs);
  if (out.runs.size() != runs || again.runs.size() != runs)
    fuzz::die(std::to_string(out.runs.size()) + " runs, " + std::to_string(runs) + " expected");
  size_t at = 0;
  for (size_t i = 0; i < out.runs.size(); ++i) {
    const Run& r = out.runs[i].run;
    checkRun(r, doc);
    if (r.samples.size() != again.runs[i].run.samples.size() ||
        r.failed != again.runs[i].run.failed)
      fuzz::die("parsing is not deterministic");
    for (const Sample& s : r.samples) {
      if (at >= want.size()) fuzz::die("a sample from a row that has none");
      const Sample& w = want[at++];
      if (s.size != w.size || s.inPlace != w.inPlace || s.timeUs != w.timeUs ||
          s.algbw != w.algbw || s.busbw != w.busbw)
        fuzz::die("sample " + std::to_string(at - 1) + " is not the document's");
    }
  }
  if (at != want.size())
    fuzz::die(std::to_string(want.size() - at) + " readable placements were dropped");
  return 0;
}
