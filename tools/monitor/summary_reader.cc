#include "monitor/summary_reader.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "pilot/core/file.h"
#include "pilot/core/parallel.h"
#include "pilot/core/text.h"

namespace pilot::cli::monitor {
namespace {

using nlohmann::json;

bool isDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> summariesIn(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("nccl_pilot_", 0) == 0 && name.size() > 6 &&
        name.compare(name.size() - 6, 6, ".jsonl") == 0) {
      out.push_back(dir + "/" + name);
    }
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

/// `v` as T. A number an integer T cannot hold (a rank of 1e300) makes the line no summary
/// line: converting it would be undefined (UBSan, under tests/fuzz/metrics_summary_fuzz).
template <typename T>
T as(const json& v, const char* what) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (v.is_number_float() && !text::truncatesInto<T>(v.get<double>()))
      throw std::out_of_range(std::string(what) + " is out of range");
  }
  return v.get<T>();
}

template <typename T>
T get(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return as<T>(*it, key);
}

void readLine(const json& j, const std::string& file, Summaries* out) {
  const std::string kind = get<std::string>(j, "kind", "");
  if (kind == "communicator") {
    CommRecord c;
    c.file = file;
    c.comm = get<std::string>(j, "comm", "");
    c.commName = get<std::string>(j, "comm_name", "");
    c.node = get<std::string>(j, "node", "");
    c.gpu = get<std::string>(j, "gpu", "");
    c.rank = get<int>(j, "rank", 0);
    c.nRanks = get<int>(j, "nranks", 0);
    c.nNodes = get<int>(j, "n_nodes", 0);
    c.finalized = get<bool>(j, "finalized", false);
    c.folded = get<uint64_t>(j, "folded", 0);
    c.firstComm = get<std::string>(j, "first_comm", "");
    c.lastComm = get<std::string>(j, "last_comm", "");
    c.pid = get<int64_t>(j, "pid", 0);
    c.seen = get<uint64_t>(j, "seen", 0);
    c.measured = get<uint64_t>(j, "measured", 0);
    out->comms.push_back(c);
  } else if (kind == "collective" || kind == "p2p") {
    // A Send or Recv reads as a collective named by its operation: no algorithm, protocol or
    // rule picks it, and the late-arriver analysis holds for it as for a collective.
    const bool p2p = kind == "p2p";
    CollectiveRecord r;
    r.p2p = p2p;
    r.file = file;
    r.comm = get<std::string>(j, "comm", "");
    r.commName = get<std::string>(j, "comm_name", "");
    r.node = get<std::string>(j, "node", "");
    r.rank = get<int>(j, "rank", 0);
    r.nRanks = get<int>(j, "nranks", 0);
    r.nNodes = get<int>(j, "n_nodes", 0);
    r.collective = get<std::string>(j, p2p ? "p2p_operation" : "collective", "other");
    r.messageSize = get<std::string>(j, "message_size", "other");
    r.sizeBucketBytes = get<uint64_t>(j, "size_bucket_bytes", 0);
    r.algo = p2p ? "" : get<std::string>(j, "algo", "other");
    r.proto = p2p ? "" : get<std::string>(j, "proto", "other");
    r.decision = get<std::string>(j, "decision", p2p ? "NCCL" : "other");
    r.band = get<std::string>(j, "band", "");
    r.channels = get<int>(j, "channels", 0);
    r.calls = get<uint64_t>(j, "calls", 0);
    if (auto t = j.find("time_us"); t != j.end() && t->is_object()) {
      r.timeSumUs = get<double>(*t, "sum", 0);
      r.minUs = get<double>(*t, "min", 0);
      r.maxUs = get<double>(*t, "max", 0);
      r.p50Us = get<double>(*t, "p50", 0);
      r.p99Us = get<double>(*t, "p99", 0);
    }
    r.busGbs = get<double>(j, "bus_gbs", 0);
    r.expectedUs = get<double>(j, "expected_us", 0);
    r.expectedCalls = get<uint64_t>(j, "expected_calls", 0);
    r.driftRatio = get<double>(j, "drift_ratio", 0);
    if (auto b = j.find("bins"); b != j.end() && b->is_array()) {
      for (const json& pair : *b) {
        const unsigned bin = as<unsigned>(pair.at(0), "a bin");
        if (bin < metrics::kBins) r.bins[bin] += as<uint64_t>(pair.at(1), "a bin's count");
      }
    }
    out->collectives.push_back(r);
  }
}

}  // namespace

Expected<Summaries> readSummaries(const std::vector<std::string>& paths) {
  Summaries out;
  for (const std::string& path : paths) {
    if (isDirectory(path)) {
      const auto found = summariesIn(path);
      if (found.empty()) out.notes.push_back(path + ": no nccl_pilot_*.jsonl summaries");
      out.files.insert(out.files.end(), found.begin(), found.end());
    } else {
      out.files.push_back(path);
    }
  }
  // Each file parsed on its own (on every core), merged in order.
  std::vector<Summaries> parts(out.files.size());
  std::vector<char> read(out.files.size(), 0);
  forEachIndex(out.files.size(), [&](size_t i) {
    const std::string& file = out.files[i];
    Summaries& part = parts[i];
    auto text = readFile(file);
    if (!text.ok()) {
      part.notes.push_back(text.error());
      return;
    }
    read[i] = 1;
    std::istringstream in(*text);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (line.empty()) continue;
      try {
        readLine(json::parse(line), file, &part);
      } catch (const std::exception& e) {
        part.notes.push_back(file + ":" + std::to_string(number) + ": not a summary line (" +
                             e.what() + ")");
      }
    }
  });
  size_t readable = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    readable += read[i];
    Summaries& part = parts[i];
    std::move(part.collectives.begin(), part.collectives.end(),
              std::back_inserter(out.collectives));
    std::move(part.comms.begin(), part.comms.end(), std::back_inserter(out.comms));
    std::move(part.notes.begin(), part.notes.end(), std::back_inserter(out.notes));
  }
  if (readable == 0) return Error{"no readable summary among the inputs"};
  return out;
}

}  // namespace pilot::cli::monitor
