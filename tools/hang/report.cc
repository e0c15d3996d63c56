#include "hang/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "hang/state_json.h"
#include "hang/timeline.h"
#include "hang/why.h"
#include "pilot/core/text.h"

namespace pilot::cli::hang {
namespace {

using json = nlohmann::ordered_json;

constexpr size_t kMostRows = 32;

std::string fmt(const char* f, double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, f, v);
  return buffer;
}

std::string pad(std::string s, size_t width, bool right = false) {
  if (s.size() >= width) return s + " ";
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

double rounded(double v) {
  return std::round(v * 1000) / 1000;
}

std::string commTitle(const std::string& comm, const std::string& name) {
  return "comm " + comm + (name.empty() ? "" : " \"" + name + "\"");
}

std::string listLine(const char* label, const std::vector<int>& ranks) {
  return "  " + pad(label, 14) + (ranks.empty() ? "-" : rankText(ranks)) + "\n";
}

std::string rowOf(const RankDetail& d) {
  const std::string last = d.last ? opLabel(d.last->op, d.last->seq, d.last->peer) : "-";
  return "  " + pad(std::to_string(d.rank), 6, true) + "  " + pad(stateName(d.state), 14) +
         pad(d.node.empty() ? "-" : d.node, 16) + pad(d.pid ? std::to_string(d.pid) : "-", 9) +
         pad(last, 26) +
         pad(d.last && d.last->ageS >= 0 ? fmt("%.1f", d.last->ageS) : "-", 9, true) +
         pad(d.waitS > 0 ? fmt("%.1f", d.waitS) : "-", 10, true) +
         pad(d.node.empty() || d.state == RankState::Missing ? "-" : fmt("%.1f", d.silentS), 10,
             true) +
         "\n";
}

/// The rows shown: every suspect, then the lowest other ranks, at most kMostRows.
std::string rows(const Stall& s) {
  std::set<int> shown(s.suspects.begin(), s.suspects.end());
  for (const RankDetail& d : s.ranks) {
    if (shown.size() >= kMostRows) break;
    shown.insert(d.rank);
  }
  std::string out = "  " + pad("rank", 6, true) + "  " + pad("state", 14) + pad("node", 16) +
                    pad("pid", 9) + pad("last operation", 26) + pad("ago s", 9, true) +
                    pad("waits s", 10, true) + pad("state s", 10, true) + "\n";
  size_t hidden = 0;
  for (const RankDetail& d : s.ranks) {
    if (shown.count(d.rank)) {
      out += rowOf(d);
    } else {
      ++hidden;
    }
  }
  if (hidden > 0) out += "  (" + std::to_string(hidden) + " more ranks: --json lists them)\n";
  return out;
}

std::string stallText(const Stall& s) {
  std::string out = "\nSTALLED " + commTitle(s.comm, s.commName) + " (" + std::to_string(s.nRanks) +
                    " ranks" + (s.job.empty() ? "" : ", job " + s.job) + "): ";
  out += stallOperationText(s) + ", stalled " + fmt("%.1f", s.stalledS) + " s\n";
  out += listLine("not launched", s.notLaunched) + listLine("frozen", s.frozen) +
         listLine("stuck", s.stuck) + listLine("missing", s.missing);
  if (!s.finalized.empty()) out += listLine("finalized", s.finalized);
  if (!s.mismatched.empty()) out += listLine("mismatched", s.mismatched);
  if (!s.cycle.empty()) out += listLine("in a cycle", s.cycle);
  out += listLine("suspects", s.suspects);
  out += "  why (" + s.kind + "): " + s.why + "\n" + rows(s);
  return out;
}

json rankJson(const RankDetail& d) {
  json j = {{"rank", d.rank}, {"state", stateName(d.state)}};
  j["node"] = d.node.empty() ? json(nullptr) : json(d.node);
  j["pid"] = d.node.empty() ? json(nullptr) : json(d.pid);
  if (d.state == RankState::Missing || d.state == RankState::Finalized) return j;
  j["launched"] = d.launched;
  if (d.last) {
    OpRef last = *d.last;
    last.ageS = rounded(last.ageS);
    j["last"] = opJson(last);
  } else {
    j["last"] = nullptr;
  }
  if (d.oldest) {
    OpRef oldest = *d.oldest;
    oldest.ageS = rounded(oldest.ageS);
    j["oldest"] = opJson(oldest);
    j["kernel_started"] = d.kernelStarted;
  }
  if (!d.fate.empty()) j["process"] = d.fate;
  j["wait_s"] = rounded(d.waitS);
  j["state_age_s"] = rounded(d.silentS);
  if (d.behindS > 0) j["clock_behind_s"] = rounded(d.behindS);
  if (d.unshownS > 0) j["stale_s"] = rounded(d.unshownS);
  if (!d.proxy.empty()) j["proxy"] = proxyJson(d.proxy);
  return j;
}

json stallJson(const Stall& s) {
  json j = {{"comm", s.comm},
            {"comm_name", s.commName},
            {"job", s.job},
            {"nranks", s.nRanks},
            {"op", s.op},
            {"seq", s.seq},
            {"bytes", s.bytes},
            {"stalled_s", rounded(s.stalledS)},
            {"not_launched", s.notLaunched},
            {"frozen", s.frozen},
            {"stuck", s.stuck},
            {"missing", s.missing},
            {"finalized", s.finalized},
            {"mismatched", s.mismatched},
            {"cycle", s.cycle},
            {"suspects", s.suspects},
            {"kind", s.kind},
            {"why", s.why}};
  if (s.sender >= 0) {
    j["sender"] = s.sender;
    j["receiver"] = s.receiver;
  }
  json ranks = json::array();
  for (const RankDetail& d : s.ranks) ranks.push_back(rankJson(d));
  j["ranks"] = ranks;
  return j;
}

}  // namespace

std::string noStragglerText(size_t comms, size_t measured) {
  if (comms > 0 && measured == 0) {
    return "not measured yet (no export window has closed on a live rank: the first closes one "
           "export interval, NCCL_PILOT_EXPORT_S, after a communicator starts)";
  }
  if (measured < comms) {
    return "none in the last export windows of " + std::to_string(measured) + " of " +
           std::to_string(comms) + " communicator(s) (the others have none closed yet)";
  }
  return "none in the last export windows";
}

std::string stallOperationText(const Stall& s) {
  if (s.op.empty()) return "operation unknown";
  if (s.sender < 0) return opLabel(s.op, s.seq, -1) + ", " + text::formatBytes(s.bytes) + " bytes";
  return "Send/Recv #" + std::to_string(s.seq) + " from rank " + std::to_string(s.sender) +
         " to rank " + std::to_string(s.receiver) + ", " + text::formatBytes(s.bytes) + " bytes";
}

std::string reportText(const HangReport& r) {
  std::string out =
      "nccl-pilot hang: " + std::to_string(r.files) + " state file(s), " +
      std::to_string(r.summaries) + " summary file(s), " + std::to_string(r.comms) +
      " communicator(s) as of " + utcText(r.referenceMs) + ": " +
      (r.stalls.empty() ? "nothing stalled" : std::to_string(r.stalls.size()) + " stalled") + "\n";
  for (const Stall& s : r.stalls) out += stallText(s);
  out += "\n";
  if (r.stragglers.empty())
    return out + "stragglers: " + noStragglerText(r.comms, r.measured) + "\n";
  out += "stragglers (the last export window; the rank whose kernels were the shortest):\n";
  for (const Straggler& s : r.stragglers) {
    out += "  " + commTitle(s.comm, s.commName) + ": rank " + std::to_string(s.rank) +
           " (the shortest in " + std::to_string(s.wins) + " of " + std::to_string(s.compared) +
           " groups): the others lost " + fmt("%.3f", s.lostMsPerOp) +
           " ms per operation waiting for it\n";
  }
  return out;
}

std::string reportJson(const HangReport& r) {
  json stalls = json::array(), stragglers = json::array();
  for (const Stall& s : r.stalls) stalls.push_back(stallJson(s));
  for (const Straggler& s : r.stragglers) {
    stragglers.push_back({{"comm", s.comm},
                          {"comm_name", s.commName},
                          {"job", s.job},
                          {"rank", s.rank},
                          {"lost_ms_per_op", rounded(s.lostMsPerOp)},
                          {"groups_won", s.wins},
                          {"groups_compared", s.compared}});
  }
  const json j = {{"stalls", stalls},
                  {"stragglers", stragglers},
                  {"notes", r.notes},
                  {"files", r.files},
                  {"summaries", r.summaries},
                  {"communicators", r.comms},
                  {"reference_ms", r.referenceMs},
                  {"job_audit", r.jobAudit.empty() ? json(nullptr) : json(r.jobAudit)}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace pilot::cli::hang
