// The -J file (nccl-tests 2.18.5+), written by rank 0 only: the program's arguments, its whole
// environment (so the forcing configuration is known for certain), the devices and one
// result object per row. Every access is type-checked: a hand-edited or foreign file gives
// problems, never an exception.
#include <algorithm>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "parse/support.h"
#include "pilot/calibration/labels.h"
#include "pilot/calibration/nccl_tests_parser.h"
#include "pilot/core/text.h"

namespace pilot::calibration {
namespace {

using nlohmann::json;

const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::optional<double> number(const json* value) {
  if (!value || !value->is_number()) return std::nullopt;
  return value->get<double>();
}

std::string string(const json* value) {
  return value && value->is_string() ? value->get<std::string>() : std::string();
}

std::optional<uint64_t> whole(const json* value) {
  if (!value) return std::nullopt;
  if (value->is_number_unsigned()) return value->get<uint64_t>();
  if (value->is_number_integer() && value->get<int64_t>() >= 0) {
    return static_cast<uint64_t>(value->get<int64_t>());
  }
  return std::nullopt;
}

/// One placement object ({time|cpu_time, alg_bw, bus_bw, nwrong}) into a sample.
std::string readPlacement(const json& placement, const json* perIter, Sample& s) {
  const json* time = member(placement, "time");
  if (!time) time = member(placement, "cpu_time");
  auto t = number(time);
  auto alg = number(member(placement, "alg_bw"));
  auto bus = number(member(placement, "bus_bw"));
  if (!t || !alg || !bus || *t < 0) return "time or bandwidth missing or not a number";
  s.timeUs = *t;
  s.algbw = *alg;
  s.busbw = *bus;
  const json* wrong = member(placement, "nwrong");
  s.wrong = -1;
  if (wrong && !wrong->is_null()) {
    auto w = number(wrong);
    if (!w || *w < 0) return "nwrong is not a count";
    // A count past long's range still says the results are wrong; converting it would be
    // undefined (UBSan, under tests/fuzz/nccl_tests_json_fuzz).
    s.wrong =
        text::truncatesInto<long>(*w) ? static_cast<long>(*w) : std::numeric_limits<long>::max();
  }
  if (perIter && perIter->is_object()) {
    s.iterMinUs = number(member(*perIter, "min_us")).value_or(-1);
    s.iterMaxUs = number(member(*perIter, "max_us")).value_or(-1);
    s.iterP99Us = number(member(*perIter, "p99_us")).value_or(-1);
    s.iterCvPct = number(member(*perIter, "cv_pct")).value_or(-1);
  }
  return "";
}

void readDevices(const json& config, Run& run) {
  const json* devices = member(config, "devices");
  if (!devices || !devices->is_array() || devices->empty()) return;
  // One entry per process (rank 0 parses the first device line of each).
  const uint64_t perProcess =
      whole(member(config, "nthreads")).value_or(1) * whole(member(config, "ngpus")).value_or(1);
  std::set<std::string> hosts;
  for (const json& d : *devices) hosts.insert(string(member(d, "hostname")));
  run.ranks = static_cast<int>(devices->size() * std::max<uint64_t>(perProcess, 1));
  run.nodes = static_cast<int>(hosts.size());
}

void readEnvironment(const json* env, ParsedRun& parsed) {
  if (!env || !env->is_array()) return;
  Config config;
  std::string ibDisable, net;
  for (const json& entry : *env) {
    const std::string kv = string(&entry);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = kv.substr(0, eq);
    if (eq + 1 == kv.size()) continue;  // NCCL reads an empty variable as unset
    if (name == "NCCL_IB_DISABLE") ibDisable = kv.substr(eq + 1);
    if (name == "NCCL_NET") net = kv.substr(eq + 1);
    if (std::find(std::begin(kForcingVariables), std::end(kForcingVariables), name) ==
        std::end(kForcingVariables)) {
      continue;
    }
    if (Status s = setForcingVariable(config, name, kv.substr(eq + 1)); !s.ok()) {
      parsed.run.problems.push_back("the environment's " + kv + " is not understood: " + s.error());
    }
  }
  parsed.run.fabrics = detail::fabricsOfEnvironment(ibDisable, net);
  config.label = canonicalLabel(config);
  parsed.evidence.config = config;
  parsed.evidence.configSource = "json";
}

}  // namespace

ParsedOutput parseNcclTestsJson(std::string_view text, const std::string& name) {
  ParsedOutput out;
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.problems.push_back(name + ": not valid JSON (a -J file cut short by a crash?)");
    return out;
  }
  ParsedRun first;
  Run& run = first.run;
  run.source = name;

  const json* args = member(doc, "args");
  if (args && args->is_array() && !args->empty()) {
    run.collective = detail::collectiveFromProgram(string(&(*args)[0])).value_or("");
  }
  if (run.collective.empty()) {
    run.collective = detail::collectiveFromName(detail::baseName(name)).value_or("");
  }
  // A code past long's range is no version (converting it would be undefined: UBSan, under
  // tests/fuzz/nccl_tests_json_fuzz).
  if (auto code = number(member(doc, "nccl_version")); code && text::truncatesInto<long>(*code)) {
    run.ncclVersion = detail::ncclVersionFromCode(static_cast<long>(*code));
  }
  if (const json* config = member(doc, "config")) readDevices(*config, run);
  readEnvironment(member(doc, "env"), first);

  const json* results = member(doc, "results");
  if (!results || !results->is_array()) {
    run.failed = true;
    run.problems.push_back("no results in the JSON file");
    out.runs.push_back(std::move(first));
    return out;
  }
  // Rows, split into runs where a -N cycle starts the sweep again.
  std::vector<ParsedRun> runs{first};
  uint64_t firstSize = 0, lastSize = 0;
  bool any = false;
  for (size_t i = 0; i < results->size(); ++i) {
    const json& r = (*results)[i];
    const std::string where = "results[" + std::to_string(i) + "]";
    auto size = whole(member(r, "size"));
    auto count = whole(member(r, "count"));
    if (!size || !count) {
      runs.back().run.problems.push_back(where + ": no size/count; skipped");
      continue;
    }
    if (any && *size < lastSize && *size == firstSize) {
      ParsedRun next = first;
      next.run.problems.push_back(where +
                                  ": another cycle of the same sweep (nccl-tests -N); "
                                  "read as a separate run");
      runs.push_back(std::move(next));
    } else if (any && *size < lastSize) {
      runs.back().run.failed = true;
      runs.back().run.problems.push_back(where + ": sizes go back from " +
                                         std::to_string(lastSize) + " to " + std::to_string(*size));
    }
    if (!any) firstSize = *size;
    any = true;
    lastSize = *size;
    std::vector<Sample> samples;
    std::string error;
    for (bool inPlace : {false, true}) {
      const json* placement = member(r, inPlace ? "in_place" : "out_of_place");
      if (!placement || placement->is_null()) continue;
      Sample s;
      s.size = *size;
      s.count = *count;
      s.inPlace = inPlace;
      s.type = string(member(r, "type"));
      s.redop = string(member(r, "redop"));
      error = readPlacement(*placement,
                            member(r, inPlace ? "in_place_per_iter" : "out_of_place_per_iter"), s);
      if (!error.empty()) break;
      samples.push_back(std::move(s));
    }
    if (!error.empty() || samples.empty()) {
      runs.back().run.problems.push_back(where +
                                         ": skipped: " + (error.empty() ? "no placement" : error));
      continue;
    }
    for (Sample& s : samples) runs.back().run.samples.push_back(std::move(s));
  }

  const json* oob = member(doc, "out_of_bounds");
  const json* okay = oob ? member(*oob, "okay") : nullptr;
  const bool oobFailed = okay && okay->is_boolean() && !okay->get<bool>();
  const json* avg = member(doc, "average_bus_bandwidth");
  const json* avgOkay = avg ? member(*avg, "okay") : nullptr;
  const bool avgFailed = avgOkay && avgOkay->is_boolean() && !avgOkay->get<bool>();
  const bool complete = oob != nullptr;  // written after the last row
  const json* errors = member(doc, "errors");

  for (ParsedRun& p : runs) {
    Run& r = p.run;
    p.evidence.endedCleanly = complete;
    auto fail = [&r](std::string why) {
      r.failed = true;
      r.problems.push_back(std::move(why));
    };
    if (r.samples.empty()) fail("no results in the JSON file");
    if (!complete) r.problems.push_back("no out_of_bounds summary: the run may have stopped early");
    for (const Sample& s : r.samples) {
      if (s.wrong > 0) {
        fail("nwrong = " + std::to_string(s.wrong) + " at " + std::to_string(s.size) +
             " bytes: the results are not trustworthy");
        break;
      }
    }
    if (oobFailed) fail("nccl-tests reports out-of-bounds values (okay: false)");
    if (avgFailed) fail("nccl-tests marks the average bus bandwidth as not okay");
    if (errors && errors->is_array()) {
      for (const json& e : *errors) {
        if (!string(&e).empty()) r.problems.push_back("nccl-tests reports '" + string(&e) + "'");
      }
    }
    if (r.ranks == 1) fail("one rank: nothing crosses a GPU boundary");
    if (r.collective.empty()) {
      fail("which collective ran is unknown (no args[0] and no collective in the file name)");
    } else if (!detail::isTunedCollective(r.collective)) {
      fail(r.collective + " is not a collective NCCL's tuner decides");
    }
    out.runs.push_back(std::move(p));
  }
  return out;
}

}  // namespace pilot::calibration
