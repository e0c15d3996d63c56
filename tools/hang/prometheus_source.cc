#include "hang/prometheus_source.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "hang/http_get.h"
#include "hang/stuck_op.h"
#include "pilot/core/text.h"

namespace pilot::cli::hang {
namespace {

using JsonDoc = nlohmann::json;

/// One rank of one communicator as its series say.
struct Row {
  std::string node, comm, commName;
  int rank = 0, nRanks = 0;
  std::map<std::string, Counts> ops;
  double inFlight = 0, waitingS = 0, stalled = 0, thresholdS = 0, pid = 0;
  std::string oldestOp;
  double oldestSeq = -1, oldestBytes = 0, oldestPeer = -1, oldestStarted = 0, oldestAgeS = 0;
  int64_t sampleMs = 0;
};

using RowKey = std::tuple<std::string, std::string, int>;  // node, comm, rank

struct Sample {
  JsonDoc metric;
  double value = 0;
  int64_t ms = 0;
};

std::string label(const JsonDoc& metric, const char* name) {
  auto it = metric.find(name);
  return it != metric.end() && it->is_string() ? it->get<std::string>() : "";
}

Expected<std::vector<Sample>> query(const std::string& base, const std::string& q) {
  Expected<std::string> body = httpGet(base + "/api/v1/query?query=" + urlEncoded(q));
  if (!body.ok()) return Error{body.error()};
  std::vector<Sample> out;
  try {
    const JsonDoc j = JsonDoc::parse(*body);
    if (j.value("status", "") != "success") return Error{"Prometheus: " + j.value("error", q)};
    for (const JsonDoc& r : j.at("data").at("result")) {
      const JsonDoc& v = r.at("value");
      Sample s;
      s.metric = r.at("metric");
      s.ms = static_cast<int64_t>(std::llround(v.at(0).get<double>() * 1000));
      const std::optional<double> value = text::parseDecimal(v.at(1).get<std::string>());
      if (!value) continue;  // NaN, +Inf: not a count
      s.value = *value;
      out.push_back(std::move(s));
    }
  } catch (const std::exception& e) {
    return Error{"Prometheus's answer to " + q + " is not its API's JSON (" + e.what() + ")"};
  }
  return out;
}

}  // namespace

Expected<PrometheusRead> readPrometheus(const std::string& url, const std::string& job) {
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string selector = job.empty() ? "" : "{job=\"" + job + "\"}";
  std::map<RowKey, Row> rows;
  auto rowOf = [&](const Sample& s) -> Row* {
    const std::optional<uint64_t> rank = text::parseUnsigned(label(s.metric, "rank"));
    const std::optional<uint64_t> nRanks = text::parseUnsigned(label(s.metric, "nranks"));
    if (!rank || !nRanks || *nRanks == 0 || *rank >= *nRanks || *nRanks > uint64_t{kMaxRanks})
      return nullptr;
    Row& r = rows[{label(s.metric, "node"), label(s.metric, "comm"), static_cast<int>(*rank)}];
    r.node = label(s.metric, "node");
    r.comm = label(s.metric, "comm");
    r.commName = label(s.metric, "comm_name");
    if (r.commName == "unknown") r.commName.clear();
    r.rank = static_cast<int>(*rank);
    r.nRanks = static_cast<int>(*nRanks);
    r.sampleMs = std::max(r.sampleMs, s.ms);
    return &r;
  };
  struct Series {
    const char* name;
    void (*set)(Row&, const Sample&);
  };
  const Series series[] = {
      {"nccl_pilot_comm_operations_launched_total",
       [](Row& r, const Sample& s) {
         r.ops[label(s.metric, "operation")].launched = static_cast<uint64_t>(s.value);
       }},
      {"nccl_pilot_comm_operations_completed_total",
       [](Row& r, const Sample& s) {
         r.ops[label(s.metric, "operation")].done = static_cast<uint64_t>(s.value);
       }},
      {"nccl_pilot_comm_operations_in_flight",
       [](Row& r, const Sample& s) { r.inFlight = s.value; }},
      {"nccl_pilot_comm_waiting_seconds", [](Row& r, const Sample& s) { r.waitingS = s.value; }},
      {"nccl_pilot_comm_stalled", [](Row& r, const Sample& s) { r.stalled = s.value; }},
      {"nccl_pilot_comm_stall_threshold_seconds",
       [](Row& r, const Sample& s) { r.thresholdS = s.value; }},
      {"nccl_pilot_comm_process_id", [](Row& r, const Sample& s) { r.pid = s.value; }},
      {"nccl_pilot_comm_oldest_in_flight_seq",
       [](Row& r, const Sample& s) {
         r.oldestOp = label(s.metric, "operation");
         r.oldestSeq = s.value;
       }},
      {"nccl_pilot_comm_oldest_in_flight_bytes",
       [](Row& r, const Sample& s) { r.oldestBytes = s.value; }},
      {"nccl_pilot_comm_oldest_in_flight_peer",
       [](Row& r, const Sample& s) { r.oldestPeer = s.value; }},
      {"nccl_pilot_comm_oldest_in_flight_channels_started",
       [](Row& r, const Sample& s) { r.oldestStarted = s.value; }},
      {"nccl_pilot_comm_oldest_in_flight_seconds",
       [](Row& r, const Sample& s) { r.oldestAgeS = s.value; }},
  };
  for (const Series& one : series) {
    Expected<std::vector<Sample>> samples = query(base, std::string(one.name) + selector);
    if (!samples.ok()) return Error{samples.error()};
    for (const Sample& s : *samples) {
      if (Row* r = rowOf(s)) one.set(*r, s);
    }
  }
  if (rows.empty()) {
    return Error{"Prometheus at " + url + " has no nccl_pilot_comm_* series" +
                 (job.empty() ? "" : " of job " + job) +
                 " (is every rank scraped, with NCCL_PILOT_METRICS_PORT set?)"};
  }
  PrometheusRead out;
  std::map<std::pair<std::string, int64_t>, size_t> byProcess;
  for (auto& [key, r] : rows) {
    const int64_t pid = static_cast<int64_t>(r.pid);
    auto [it, fresh] = byProcess.try_emplace({r.node, pid}, out.inputs.states.size());
    if (fresh) {
      StateFile f;
      f.path = url;
      f.input = url;
      f.node = r.node;
      f.pid = pid;
      out.inputs.states.push_back(std::move(f));
    }
    StateFile& f = out.inputs.states[it->second];
    f.writtenMs = std::max(f.writtenMs, r.sampleMs);
    // A target that stops answering loses its series (stale): missing, never overdue here.
    f.nextDueMs = f.writtenMs + 60000;
    f.stallS = std::max(f.stallS, r.thresholdS);
    out.newestMs = std::max(out.newestMs, r.sampleMs);
    CommState c;
    c.comm = r.comm;
    c.commName = r.commName;
    c.rank = r.rank;
    c.nRanks = r.nRanks;
    for (const auto& [op, counts] : r.ops) {
      if (counts.launched > 0 && !isPointToPoint(op)) c.ops[op] = counts;
    }
    c.inFlight = static_cast<uint64_t>(std::max(0.0, r.inFlight));
    c.waitingS = r.waitingS;
    c.stalled = r.stalled > 0;
    if (c.inFlight > 0 && r.oldestSeq >= 0 && !r.oldestOp.empty()) {
      InFlight o;
      o.op = r.oldestOp;
      o.seq = static_cast<uint64_t>(r.oldestSeq);
      o.bytes = static_cast<uint64_t>(std::max(0.0, r.oldestBytes));
      o.peer = static_cast<int>(r.oldestPeer);
      o.ageS = r.oldestAgeS;
      o.channels = static_cast<int>(r.oldestStarted);
      for (int ch = 0; ch < o.channels && ch < 64; ++ch) o.started.push_back(ch);
      c.oldest = o;
    }
    // Its last launch of the kind it launched most: the number is known, not when it ran.
    auto most = std::max_element(c.ops.begin(), c.ops.end(), [](const auto& a, const auto& b) {
      return a.second.launched < b.second.launched;
    });
    if (most != c.ops.end()) c.last = OpRef{most->first, most->second.launched - 1, 0, -1, -1};
    f.comms.push_back(std::move(c));
  }
  out.inputs.anyReadable = true;
  out.inputs.stateFilesSeen = out.inputs.states.size();
  out.inputs.notes.push_back(
      "read from Prometheus at " + url + ": " + std::to_string(rows.size()) +
      " rank(s) of communicators, as of their last scrape; Send/Recv peers, the export window "
      "(the straggler) and how long ago a rank's last operation ran are in the state files only");
  return out;
}

}  // namespace pilot::cli::hang
