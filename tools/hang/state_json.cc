#include "hang/state_json.h"

namespace pilot::cli::hang {
namespace {

using json = nlohmann::ordered_json;

json countsJson(const Counts& c) {
  return json::array({c.launched, c.done});
}

json perPeer(const std::map<int, Counts>& peers) {
  json j = json::object();
  for (const auto& [peer, c] : peers) j[std::to_string(peer)] = countsJson(c);
  return j;
}

json inFlightJson(const InFlight& o) {
  json j = opJson(o);
  j["channels"] = o.channels;
  j["started"] = o.started;
  j["stopped"] = o.stopped;
  j["proxy"] = proxyJson(o.proxy);
  return j;
}

json commJson(const CommState& c) {
  json ops = json::object();
  for (const auto& [kind, counts] : c.ops) ops[kind] = countsJson(counts);
  json keys = json::array();
  for (const WindowKey& k : c.window) {
    keys.push_back({{"op", k.op}, {"bytes", k.bytes}, {"calls", k.calls}, {"mean_us", k.meanUs}});
  }
  return {{"comm", c.comm},
          {"comm_name", c.commName},
          {"rank", c.rank},
          {"nranks", c.nRanks},
          {"n_nodes", c.nNodes},
          {"ops", ops},
          {"sends", perPeer(c.sends)},
          {"recvs", perPeer(c.recvs)},
          {"in_flight", c.inFlight},
          {"last", c.last ? opJson(*c.last) : json(nullptr)},
          {"last_done_age_s", c.lastDoneAgeS ? json(*c.lastDoneAgeS) : json(nullptr)},
          {"oldest", c.oldest ? inFlightJson(*c.oldest) : json(nullptr)},
          {"waiting_s", c.waitingS},
          {"stalled", c.stalled},
          {"window", {{"s", c.windowS}, {"keys", keys}}}};
}

}  // namespace

json opJson(const OpRef& op) {
  return {
      {"op", op.op}, {"seq", op.seq}, {"bytes", op.bytes}, {"peer", op.peer}, {"age_s", op.ageS}};
}

json proxyJson(const std::vector<ProxyEntry>& proxy) {
  json j = json::array();
  for (const ProxyEntry& e : proxy) {
    j.push_back({{"channel", e.channel},
                 {"peer", e.peer},
                 {"send", e.send},
                 {"steps", e.steps},
                 {"of", e.of}});
  }
  return j;
}

std::string renderStateFile(const StateFile& s) {
  json comms = json::array();
  for (const CommState& c : s.comms) comms.push_back(commJson(c));
  const json j = {{"format", "nccl-pilot-state"},
                  {"version", kStateVersion},
                  {"node", s.node},
                  {"pid", s.pid},
                  {"job", s.job},
                  {"library", s.library},
                  {"written_ms", s.writtenMs},
                  {"next_due_ms", s.nextDueMs},
                  {"stall_s", s.stallS},
                  {"final", s.final},
                  {"comms", comms}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace pilot::cli::hang
