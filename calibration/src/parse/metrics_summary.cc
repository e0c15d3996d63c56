// Reading the profiler's JSON-lines summaries: bounded (file size, line length, records,
// bins), and robust: a bad line is one problem naming file:line and the rest is kept, a
// truncated last line (a copy taken while the profiler wrote) is said as such, a .jsonl file
// that is not ours is one problem.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pilot/calibration/metrics_summary.h"
#include "pilot/core/fabric.h"
#include "pilot/core/file.h"
#include "pilot/core/text.h"
#include "pilot/tuner/names.h"

namespace pilot::calibration {
namespace {

using text::endsWith;

namespace fs = std::filesystem;
using json = nlohmann::json;

/// Problems listed per file; more are counted in one line.
constexpr size_t kMaxProblemsPerFile = 20;
constexpr size_t kMaxTextField = 256;

/// Typed, bounded access to one line's fields; the first failure is kept in `error`.
struct Fields {
  const json& j;
  std::string error;

  const json* get(const char* name, bool (json::*is)() const, const char* what) {
    auto it = j.find(name);
    if (it == j.end()) return fail(std::string("no \"") + name + "\""), nullptr;
    if (!((*it).*is)()) return fail(std::string("\"") + name + "\" is not " + what), nullptr;
    return &*it;
  }
  bool fail(const std::string& why) {
    if (error.empty()) error = why;
    return false;
  }
  std::string text(const char* name) {
    const json* v = get(name, &json::is_string, "a string");
    if (v == nullptr) return "";
    const std::string& s = v->get_ref<const std::string&>();
    if (s.size() > kMaxTextField) return fail(std::string("\"") + name + "\" is too long"), "";
    return s;
  }
  long long integer(const char* name, long long lo, long long hi) {
    const json* v = get(name, &json::is_number_integer, "an integer");
    if (v == nullptr) return lo;
    const long long x = v->is_number_unsigned() && v->get<unsigned long long>() > 1ull << 62
                            ? hi + 1
                            : v->get<long long>();
    if (x < lo || x > hi) {
      fail(std::string("\"") + name + "\" = " + std::to_string(x) + " is out of range [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return lo;
    }
    return x;
  }
};

bool isHex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

bool isVersion(const std::string& s) {
  return !s.empty() && s.size() <= 16 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

/// One "calibration" line, or the reason it cannot be used.
std::string readRecord(const json& j, CallRecord& r) {
  Fields f{j, {}};
  r.comm = f.text("comm");
  r.node = f.text("node");
  r.pid = f.integer("pid", 0, 1ll << 40);
  r.ranks = static_cast<int>(f.integer("nranks", 1, 1 << 20));
  r.rank = static_cast<int>(f.integer("rank", 0, r.ranks - 1));
  r.nodes = static_cast<int>(f.integer("n_nodes", 1, r.ranks));
  r.nccl = f.text("nccl");
  r.fabric = f.text("fabric");
  r.tableSha256 = f.text("table_sha256");
  const std::string coll = f.text("collective"), algo = f.text("algo"), proto = f.text("proto");
  r.bytes = static_cast<uint64_t>(f.integer("bytes", 1, 1ll << 50));
  r.channels = static_cast<int>(f.integer("channels", 0, 64));
  if (j.contains("decision")) r.byRule = f.text("decision").rfind("rule ", 0) == 0;
  r.calls = static_cast<uint64_t>(f.integer("calls", 1, 1ll << 50));
  if (!f.error.empty()) return f.error;
  if (r.nccl == "unknown") r.nccl.clear();
  if (!r.nccl.empty() && !isVersion(r.nccl)) return "\"nccl\" = \"" + r.nccl + "\" is no version";
  if (r.fabric == "unknown") r.fabric.clear();
  if (!r.fabric.empty()) {
    auto fabric = parseFabric(r.fabric);
    if (!fabric) return "unknown \"fabric\" \"" + r.fabric + "\"";
    r.fabric = fabricName(*fabric);
  }
  if (!r.tableSha256.empty() && !isHex64(r.tableSha256)) {
    return "\"table_sha256\" is neither empty nor 64 hex digits";
  }
  auto c = tuner::parseCollective(coll);
  if (!c) return "unknown \"collective\" \"" + coll + "\"";
  r.collective = tuner::collectiveName(*c);
  auto a = tuner::parseAlgorithm(algo);
  if (!a) return "unknown \"algo\" \"" + algo + "\"";
  r.algo = tuner::algorithmName(*a);
  auto p = tuner::parseProtocol(proto);
  if (!p) return "unknown \"proto\" \"" + proto + "\"";
  r.proto = tuner::protocolName(*p);
  if (auto ratio = j.find("bin_ratio"); ratio != j.end()) {
    if (!ratio->is_number() || std::fabs(ratio->get<double>() - kBinRatio) > 1e-9) {
      return "\"bin_ratio\" is not 1.02: bins this reader cannot place";
    }
  }
  const json* bins = f.get("bins", &json::is_array, "an array");
  if (bins == nullptr) return f.error;
  if (bins->size() > kMaxMetricsBins)
    return "more than " + std::to_string(kMaxMetricsBins) + " bins";
  uint64_t sum = 0;
  for (const json& b : *bins) {
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer() ||
        b[0].get<long long>() < 0 || b[0].get<long long>() > kMaxBinIndex ||
        b[1].get<long long>() < 1 || b[1].get<long long>() > (1ll << 50)) {
      return "a bin is not [k, count] with 0 <= k <= " + std::to_string(kMaxBinIndex) +
             " and count >= 1";
    }
    const int k = b[0].get<int>();
    if (!r.bins.empty() && k <= r.bins.back().first) return "bins are not in ascending order";
    r.bins.emplace_back(k, b[1].get<uint64_t>());
    sum += r.bins.back().second;
  }
  if (sum != r.calls) {
    return "the bins hold " + std::to_string(sum) + " calls, \"calls\" says " +
           std::to_string(r.calls);
  }
  return "";
}

bool isOurKind(const std::string& kind) {
  return kind == "calibration" || kind == "process" || kind == "communicator" ||
         kind == "collective" || kind == "p2p" || kind == "provenance";
}

/// The files an input names: itself, or a directory's .jsonl files and those one level down.
void listInput(const std::string& input, std::vector<std::string>& files, MetricsData& data) {
  std::error_code ec;
  if (!fs::is_directory(input, ec)) {
    files.push_back(input);
    return;
  }
  std::vector<std::string> found;
  size_t prom = 0, other = 0;
  auto scan = [&](const fs::path& dir, bool descend, auto& self) -> void {
    std::error_code e;
    for (fs::directory_iterator it(dir, e), end; !e && it != end; it.increment(e)) {
      const std::string path = it->path().string();
      if (it->is_directory(e)) {
        if (descend) self(it->path(), false, self);
      } else if (endsWith(path, ".jsonl")) {
        found.push_back(path);
      } else if (endsWith(path, ".prom")) {
        ++prom;
      } else {
        ++other;
      }
      if (found.size() > kMaxMetricsFiles) return;
    }
  };
  scan(input, true, scan);
  std::sort(found.begin(), found.end());
  if (prom > 0) {
    data.notes.push_back(input + ": " + std::to_string(prom) +
                         " .prom file(s) ignored (Prometheus textfiles; the .jsonl summaries "
                         "hold the per-call histograms)");
  }
  if (other > 0) {
    data.notes.push_back(input + ": " + std::to_string(other) + " other file(s) ignored");
  }
  if (found.empty()) {
    data.problems.push_back(input + ": no .jsonl file" +
                            (prom + other == 0 ? std::string(" (an empty directory)")
                                               : std::string(" among its files")) +
                            ": nothing to read");
  }
  files.insert(files.end(), found.begin(), found.end());
}

/// The identity of a record: one per communicator, rank, process and configuration.
using RecordKey = std::tuple<std::string, std::string, long long, int, std::string, uint64_t,
                             std::string, std::string, int>;

RecordKey keyOf(const CallRecord& r) {
  return {r.comm, r.node, r.pid, r.rank, r.collective, r.bytes, r.algo, r.proto, r.channels};
}

}  // namespace

bool isMetricsInput(const std::string& path) {
  if (endsWith(path, ".jsonl")) return true;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return false;
  auto holds = [](const fs::path& dir, bool descend, auto& self) -> bool {
    std::error_code e;
    size_t seen = 0;
    for (fs::directory_iterator it(dir, e), end; !e && it != end && seen < 10000;
         it.increment(e), ++seen) {
      const std::string p = it->path().string();
      if (endsWith(p, ".jsonl") || endsWith(p, ".prom")) return true;
      if (descend && it->is_directory(e) && self(it->path(), false, self)) return true;
    }
    return false;
  };
  return holds(path, true, holds);
}

void addMetricsText(MetricsData& data, const std::string& text, const std::string& name) {
  const size_t firstRecord = data.records.size(), firstProblem = data.problems.size();
  size_t ours = 0, otherKinds = 0, problems = 0, start = 0, lineNo = 0;
  auto problem = [&](const std::string& why) {
    if (++problems <= kMaxProblemsPerFile) data.problems.push_back(why);
  };
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool last = end == std::string::npos;
    if (last) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++lineNo;
    const std::string where = name + ":" + std::to_string(lineNo);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (line.size() > kMaxMetricsLineBytes) {
      problem(where + ": line longer than " + std::to_string(kMaxMetricsLineBytes) +
              " bytes: ignored");
      continue;
    }
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      problem(where + (last ? ": truncated last line (no newline, not JSON: copied while the "
                              "profiler wrote it?): ignored"
                            : ": not a JSON object: ignored"));
      continue;
    }
    auto kind = j.find("kind");
    if (kind == j.end() || !kind->is_string() || !isOurKind(kind->get<std::string>())) {
      ++otherKinds;
      continue;
    }
    ++ours;
    if (kind->get<std::string>() != "calibration") continue;
    if (data.records.size() >= kMaxMetricsRecords) {
      problem(where + ": more than " + std::to_string(kMaxMetricsRecords) +
              " calibration lines in all: the rest is ignored");
      break;
    }
    CallRecord r;
    r.source = where;
    const std::string why = readRecord(j, r);
    if (!why.empty()) {
      problem(where + ": " + why + ": line ignored");
      continue;
    }
    data.records.push_back(std::move(r));
  }
  if (ours == 0) {
    // Not ours: whatever it held says nothing about our jobs.
    data.records.resize(firstRecord);
    data.problems.resize(firstProblem);
    data.problems.push_back(name +
                            ": not a nccl-pilot metrics summary (no line has a \"kind\" "
                            "the profiler writes): ignored");
    return;
  }
  if (problems > kMaxProblemsPerFile) {
    data.problems.push_back(name + ": " + std::to_string(problems - kMaxProblemsPerFile) +
                            " more problem line(s) not listed");
  }
  if (otherKinds > 0) {
    data.notes.push_back(name + ": " + std::to_string(otherKinds) +
                         " line(s) of another kind ignored");
  }
}

MetricsData loadMetrics(const std::vector<std::string>& inputs) {
  MetricsData data;
  std::vector<std::string> files;
  for (const std::string& input : inputs) listInput(input, files, data);
  std::set<std::string> seen;
  std::map<RecordKey, std::string> first;
  for (const std::string& file : files) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(file, ec);
    if (!seen.insert(ec ? file : canonical.string()).second) continue;
    if (data.files.size() >= kMaxMetricsFiles) {
      data.problems.push_back("more than " + std::to_string(kMaxMetricsFiles) +
                              " .jsonl files: the rest is ignored");
      break;
    }
    std::string text;
    switch (readFileUpTo(file, kMaxMetricsFileBytes, &text)) {
      case ReadOutcome::Ok:
        break;
      case ReadOutcome::TooLarge:
        data.problems.push_back(file + ": larger than " +
                                std::to_string(kMaxMetricsFileBytes >> 20) + " MiB: ignored");
        continue;
      case ReadOutcome::CannotOpen:
      case ReadOutcome::ReadError:
        data.problems.push_back(file + ": cannot read: ignored");
        continue;
    }
    data.files.push_back(file);
    const size_t before = data.records.size();
    addMetricsText(data, text, file);
    // A record seen before (the same file copied under another name) counts once.
    size_t kept = before;
    for (size_t i = before; i < data.records.size(); ++i) {
      auto [it, fresh] = first.emplace(keyOf(data.records[i]), data.records[i].source);
      if (!fresh) {
        data.problems.push_back(data.records[i].source +
                                ": the same communicator, rank, "
                                "process and configuration as " +
                                it->second + ": ignored");
        continue;
      }
      if (kept != i) data.records[kept] = std::move(data.records[i]);
      ++kept;
    }
    data.records.resize(kept);
  }
  return data;
}

}  // namespace pilot::calibration
