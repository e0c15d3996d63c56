// Both summary readers on arbitrary text (metrics_summary_fuzz, part A). A second reading of
// every line with nlohmann's own accessors says which lines are ours and of which kind.
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "monitor/summary_reader.h"
#include "pilot/calibration/metrics_summary.h"
#include "pilot/tuner/names.h"
#include "summary_oracle.h"

namespace fuzz {
namespace {

using namespace pilot::calibration;
using nlohmann::json;

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

/// The line's "kind" when it is a JSON object with a string "kind", else "".
std::string kindOf(const std::string& line) {
  const json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kind") || !j["kind"].is_string())
    return "";
  return j["kind"].get<std::string>();
}

bool isOurKind(const std::string& kind) {
  return kind == "calibration" || kind == "process" || kind == "communicator" ||
         kind == "collective" || kind == "p2p" || kind == "provenance";
}

size_t lineNumber(const std::string& where, const std::string& file) {
  if (where.compare(0, file.size() + 1, file + ":") != 0) return 0;
  size_t digits = 0;
  while (file.size() + 1 + digits < where.size() && std::isdigit(where[file.size() + 1 + digits]))
    ++digits;
  return digits == 0 ? 0 : std::stoul(where.substr(file.size() + 1, digits));
}

void checkRecord(const CallRecord& r, const std::vector<std::string>& lines) {
  const size_t n = lineNumber(r.source, "fuzz.jsonl");
  if (n == 0 || n > lines.size() || r.source != "fuzz.jsonl:" + std::to_string(n))
    die("a record from '" + r.source + "'");
  const json j = json::parse(lines[n - 1], nullptr, false);
  if (kindOf(lines[n - 1]) != "calibration" || !j.contains("calls") ||
      !j["calls"].is_number_integer() || j["calls"].get<uint64_t>() != r.calls)
    die("record " + r.source + " is not its line's calibration: " + lines[n - 1]);
  if (r.ranks < 1 || r.ranks > (1 << 20) || r.rank < 0 || r.rank >= r.ranks || r.nodes < 1 ||
      r.nodes > r.ranks || r.channels < 0 || r.channels > 64 || r.bytes < 1 ||
      r.bytes > (uint64_t{1} << 50) || r.calls < 1 || r.pid < 0 || r.pid > (1ll << 40))
    die("record " + r.source + " with a field out of its range");
  for (const std::string* s : {&r.comm, &r.node, &r.nccl, &r.fabric, &r.tableSha256}) {
    if (s->size() > 256) die("record " + r.source + " with a text of " + std::to_string(s->size()));
  }
  if (!r.tableSha256.empty() && r.tableSha256.size() != 64) die("a table digest not of 64");
  if (!pilot::tuner::parseCollective(r.collective) || !pilot::tuner::parseAlgorithm(r.algo) ||
      !pilot::tuner::parseProtocol(r.proto))
    die("record " + r.source + " with an unknown name");
  uint64_t sum = 0;
  for (size_t i = 0; i < r.bins.size(); ++i) {
    const auto& [k, count] = r.bins[i];
    if (k < 0 || k > kMaxBinIndex || count < 1 || (i > 0 && k <= r.bins[i - 1].first))
      die("record " + r.source + " with bins out of order or range");
    sum += count;
  }
  if (sum != r.calls || r.bins.size() > kMaxMetricsBins) die("record " + r.source + " bins");
}

}  // namespace

void checkFitReader(const std::string& text) {
  MetricsData a, b;
  addMetricsText(a, text, "fuzz.jsonl");
  addMetricsText(b, text, "fuzz.jsonl");
  if (a.records.size() != b.records.size() || a.problems != b.problems || a.notes != b.notes)
    die("fit's reader is not deterministic");
  const std::vector<std::string> lines = linesOf(text);
  bool ours = false;
  for (const std::string& line : lines) ours = ours || isOurKind(kindOf(line));
  if (!ours) {
    if (!a.records.empty() || a.problems.size() != 1 ||
        a.problems[0].find("not a nccl-pilot metrics summary") == std::string::npos)
      die("a file with no line of ours is not called foreign");
    return;
  }
  size_t listed = 0, counted = 0;
  for (const std::string& p : a.problems) {
    checkError(p, "fuzz.jsonl");
    if (lineNumber(p, "fuzz.jsonl") > 0) {
      ++listed;
    } else if (p.find(" more problem line(s) not listed") != std::string::npos) {
      ++counted;
    } else {
      die("a problem naming no line: " + p);
    }
  }
  if (listed > 20 || counted > 1 || (counted == 1 && listed != 20))
    die(std::to_string(listed) + " problems listed, " + std::to_string(counted) + " counted");
  for (const CallRecord& r : a.records) checkRecord(r, lines);
}

void checkMonitorReader(const std::string& text) {
  const std::string path = writeScratch("nccl_pilot_fuzz.jsonl", text);
  auto s = pilot::cli::monitor::readSummaries({path});
  if (!s.ok()) die("a readable summary file refused: " + s.error());
  if (s->files != std::vector<std::string>{path}) die("monitor read other files");
  size_t comms = 0, collectives = 0, lines = 0;
  for (const std::string& line : linesOf(text)) {
    if (line.empty()) continue;
    ++lines;
    const std::string kind = kindOf(line);
    comms += kind == "communicator";
    collectives += kind == "collective" || kind == "p2p";  // monitor keeps Send/Recv rows beside
  }
  if (s->comms.size() > comms || s->collectives.size() > collectives)
    die("monitor has records from lines of another kind");
  if (s->comms.size() + s->collectives.size() + s->notes.size() > lines)
    die("monitor has more records and notes than lines");
  for (const std::string& note : s->notes) {
    if (lineNumber(note, path) == 0 || note.find(": not a summary line (") == std::string::npos)
      die("a note that names no line: " + note);
  }
  for (const auto& r : s->collectives) {
    if (r.file != path) die("a collective record of another file");
  }
}

}  // namespace fuzz
