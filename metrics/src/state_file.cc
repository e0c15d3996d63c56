#include "pilot/metrics/state_file.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "pilot/core/text.h"
#include "pilot/metrics/summary.h"

namespace pilot::metrics {
namespace {

std::string seconds(double s) {
  // Milliseconds are enough for a reader that judges in seconds.
  return text::formatDecimal(std::round(std::max(s, 0.0) * 1000.0) / 1000.0);
}

std::string channelList(uint64_t bits) {
  std::string out = "[";
  for (unsigned c = 0; c < 64; ++c) {
    if ((bits >> c & 1) == 0) continue;
    if (out.size() > 1) out += ',';
    out += std::to_string(c);
  }
  return out + "]";
}

std::string counts(const LaunchCount& c) {
  return "[" + std::to_string(c.launched) + "," + std::to_string(c.done) + "]";
}

std::string peerCounts(const std::vector<std::pair<int, LaunchCount>>& peers) {
  std::string out = "{";
  for (const auto& [peer, c] : peers) {
    if (out.size() > 1) out += ',';
    out += "\"" + std::to_string(peer) + "\":" + counts(c);
  }
  return out + "}";
}

std::string operation(const OperationView& op, uint64_t nowNs, bool withChannels) {
  const double age = nowNs > op.launchNs ? static_cast<double>(nowNs - op.launchNs) / 1e9 : 0.0;
  std::string out = "{\"op\":" + jsonString(operationName(op.op)) +
                    ",\"seq\":" + std::to_string(op.seq) +
                    ",\"bytes\":" + std::to_string(op.bytes) +
                    ",\"peer\":" + std::to_string(op.peer) + ",\"age_s\":" + seconds(age);
  if (withChannels) {
    out += ",\"channels\":" + std::to_string(op.channels) +
           ",\"started\":" + channelList(op.started) + ",\"stopped\":" + channelList(op.stopped);
  }
  return out + "}";
}

std::string proxyList(const std::vector<ProxyOpView>& proxy) {
  std::string out = "[";
  for (const ProxyOpView& p : proxy) {
    if (out.size() > 1) out += ',';
    out += "{\"channel\":" + std::to_string(p.channel) + ",\"peer\":" + std::to_string(p.peer) +
           ",\"send\":" + (p.send ? "true" : "false") + ",\"steps\":" + std::to_string(p.steps) +
           ",\"of\":" + std::to_string(p.nSteps) + "}";
  }
  return out + "]";
}

std::string commState(const StateComm& c) {
  const CommIdentity& id = c.identity;
  const LiveState& l = c.live;
  const InFlightView& v = l.view;
  std::string out =
      "{\"comm\":" + jsonString(commIdText(id.commId)) + ",\"comm_name\":" + jsonString(id.name) +
      ",\"rank\":" + std::to_string(id.rank) + ",\"nranks\":" + std::to_string(id.nRanks) +
      ",\"n_nodes\":" + std::to_string(id.nNodes) + ",\"ops\":{";
  bool first = true;
  for (int k = 0; k < kNumOperations; ++k) {
    const auto op = static_cast<Operation>(k);
    if (isPointToPoint(op) || v.kinds[k].launched == 0) continue;
    if (!first) out += ',';
    first = false;
    out += jsonString(operationName(op)) + ":" + counts(v.kinds[k]);
  }
  out += "},\"sends\":" + peerCounts(v.sends) + ",\"recvs\":" + peerCounts(v.recvs);
  out += ",\"in_flight\":" + std::to_string(v.inFlight);
  if (v.overflow) out += ",\"in_flight_overflow\":true";
  out += ",\"last\":" + (v.hasLast ? operation(v.last, l.nowNs, false) : "null");
  out += ",\"last_done_age_s\":" + (v.lastDoneNs != 0 && l.nowNs >= v.lastDoneNs
                                        ? seconds(static_cast<double>(l.nowNs - v.lastDoneNs) / 1e9)
                                        : std::string("null"));
  if (v.hasOldest) {
    std::string oldest = operation(v.oldest, l.nowNs, true);
    if (l.proxyEvents) oldest.insert(oldest.size() - 1, ",\"proxy\":" + proxyList(l.proxy));
    out += ",\"oldest\":" + oldest;
  } else {
    out += ",\"oldest\":null";
  }
  out += ",\"waiting_s\":" + seconds(l.waitingS);
  out += std::string(",\"stalled\":") + (l.stalled ? "true" : "false");
  out += ",\"window\":{\"s\":" + seconds(l.windowS) + ",\"keys\":[";
  for (size_t i = 0; i < l.window.size(); ++i) {
    const WindowKey& k = l.window[i];
    if (i > 0) out += ',';
    out += "{\"op\":" + jsonString(operationName(k.op)) + ",\"bytes\":" + std::to_string(k.bytes) +
           ",\"calls\":" + std::to_string(k.calls) +
           ",\"mean_us\":" + text::formatDecimal(std::round(k.meanUs * 100.0) / 100.0) + "}";
  }
  return out + "]}}";
}

}  // namespace

double waitingSeconds(const InFlightView& view, uint64_t nowNs) {
  if (view.inFlight == 0) return 0;
  uint64_t since = view.lastDoneNs;
  if (view.hasOldest) since = std::max(since, view.oldest.launchNs);
  if (since == 0 || nowNs <= since) return 0;
  return static_cast<double>(nowNs - since) / 1e9;
}

std::vector<WindowKey> windowKeys(const std::vector<KeyReport>& keys) {
  std::map<std::pair<int, unsigned>, std::pair<uint64_t, uint64_t>> sums;  // calls, ns
  for (const KeyReport& k : keys) {
    if (k.other || isPointToPoint(k.fields.op) || k.interval.calls == 0) continue;
    auto& s = sums[{static_cast<int>(k.fields.op), k.fields.bucket}];
    s.first += k.interval.calls;
    s.second += k.interval.timeNs;
  }
  std::vector<WindowKey> out;
  for (const auto& [key, s] : sums) {
    WindowKey w;
    w.op = static_cast<Operation>(key.first);
    w.bytes = uint64_t{1} << key.second;
    w.calls = s.first;
    w.meanUs = static_cast<double>(s.second) / static_cast<double>(s.first) / 1000.0;
    out.push_back(w);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const WindowKey& a, const WindowKey& b) { return a.calls > b.calls; });
  if (out.size() > kMaxWindowKeys) out.resize(kMaxWindowKeys);
  return out;
}

std::string renderState(const StateReport& r) {
  std::string out = "{\"format\":" + jsonString(kStateFormat) +
                    ",\"version\":" + std::to_string(kStateVersion) +
                    ",\"node\":" + jsonString(r.node) + ",\"pid\":" + std::to_string(r.pid) +
                    ",\"job\":" + jsonString(r.job) + ",\"library\":" + jsonString(r.version) +
                    ",\"written_ms\":" + std::to_string(r.writtenMs) +
                    ",\"next_due_ms\":" + std::to_string(r.nextDueMs) +
                    ",\"stall_s\":" + std::to_string(r.stallSeconds) +
                    ",\"final\":" + (r.final ? "true" : "false") + ",\"comms\":[";
  for (size_t i = 0; i < r.comms.size(); ++i) {
    if (i > 0) out += ',';
    out += commState(r.comms[i]);
  }
  return out + "]}\n";
}

std::string describeOperation(const OperationView& op) {
  std::string out = std::string(operationName(op.op)) + " #" + std::to_string(op.seq);
  if (isPointToPoint(op.op)) {
    out += std::string(op.op == Operation::Send ? " to" : " from") + " rank " +
           std::to_string(op.peer);
  }
  return out + " (" + text::formatBytes(op.bytes) + ")";
}

}  // namespace pilot::metrics
