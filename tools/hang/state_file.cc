#include "hang/state_file.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "pilot/core/text.h"

namespace pilot::cli::hang {
namespace {

using Json = nlohmann::json;

constexpr const char* kFormat = "nccl-pilot-state";
constexpr int64_t kMaxPid = int64_t{1} << 40;
constexpr int kMaxChannels = 1024;  // NCCL has 64 (128 on newer releases); beyond is not ours

/// A field that breaks its bound: the message names it ("comms[2].rank: ...").
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A field of one object, named by its place for the message.
class Field {
 public:
  Field(const Json& object, std::string where) : object_(object), where_(std::move(where)) {}

  bool has(const char* key) const {
    auto it = object_.find(key);
    return it != object_.end() && !it->is_null();
  }
  const Json& at(const char* key) const {
    if (!has(key)) fail(key, "missing");
    return object_.at(key);
  }
  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw Refused(where_ + key + ": " + why);
  }

  int64_t integer(const char* key, int64_t lo, int64_t hi) const {
    const Json& v = at(key);
    if (!v.is_number_integer()) fail(key, "not an integer");
    const std::string range = " outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
      fail(key, std::to_string(v.get<uint64_t>()) + range);
    const int64_t n = v.get<int64_t>();
    if (n < lo || n > hi) fail(key, std::to_string(n) + range);
    return n;
  }
  uint64_t count(const char* key) const { return has(key) ? countOf(object_.at(key), key) : 0; }
  double seconds(const char* key, double fallback = 0) const {
    if (!has(key)) return fallback;
    const Json& v = object_.at(key);
    if (!v.is_number() || v.get<double>() < 0) fail(key, "not a duration (s >= 0)");
    return v.get<double>();
  }
  bool flag(const char* key) const {
    if (!has(key)) return false;
    if (!object_.at(key).is_boolean()) fail(key, "not true or false");
    return object_.at(key).get<bool>();
  }
  std::string text(const char* key, bool required) const {
    if (!required && !has(key)) return "";
    const Json& v = at(key);
    if (!v.is_string()) fail(key, "not a string");
    std::string s = v.get<std::string>();
    if (s.size() > kMaxTextBytes) fail(key, "longer than " + std::to_string(kMaxTextBytes));
    if (required && s.empty()) fail(key, "empty");
    return s;
  }
  uint64_t countOf(const Json& v, const std::string& key) const {
    if (!v.is_number_unsigned()) fail(key, "not a count (an integer >= 0)");
    return v.get<uint64_t>();
  }
  Field child(const char* key) const {
    const Json& v = at(key);
    if (!v.is_object()) fail(key, "not an object");
    return Field(v, where_ + key + ".");
  }
  const Json& array(const char* key) const {
    const Json& v = at(key);
    if (!v.is_array()) fail(key, "not a list");
    return v;
  }
  const Json& object() const { return object_; }
  const std::string& where() const { return where_; }

 private:
  const Json& object_;
  std::string where_;
};

Counts countsOf(const Field& f, const std::string& key, const Json& pair) {
  if (!pair.is_array() || pair.size() != 2) f.fail(key, "not [launched, done]");
  Counts c{f.countOf(pair[0], key), f.countOf(pair[1], key)};
  if (c.done > c.launched) f.fail(key, "more done than launched");
  return c;
}

std::map<int, Counts> perPeer(const Field& f, const char* key, int nRanks) {
  std::map<int, Counts> out;
  if (!f.has(key)) return out;
  const Json& peers = f.at(key);
  if (!peers.is_object()) f.fail(key, "not an object");
  for (const auto& [name, pair] : peers.items()) {
    const std::string where = std::string(key) + "[" + name.substr(0, 16) + "]";
    const auto peer = text::parseUnsigned(name);
    if (!peer || *peer >= static_cast<uint64_t>(nRanks)) f.fail(where, "not a rank of the comm");
    out[static_cast<int>(*peer)] = countsOf(f, where, pair);
  }
  return out;
}

OpRef opOf(const Field& f, int nRanks) {
  OpRef op;
  op.op = f.text("op", true);
  op.seq = f.count("seq");
  op.bytes = f.count("bytes");
  op.peer = f.has("peer") ? static_cast<int>(f.integer("peer", -1, nRanks - 1)) : -1;
  op.ageS = f.seconds("age_s");
  return op;
}

std::vector<int> channelList(const Field& f, const char* key) {
  std::vector<int> out;
  if (!f.has(key)) return out;
  const Json& list = f.array(key);
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_number_integer() || list[i].get<int64_t>() < 0 ||
        list[i].get<int64_t>() >= kMaxChannels)
      f.fail(std::string(key) + "[" + std::to_string(i) + "]", "not a channel");
    out.push_back(list[i].get<int>());
  }
  return out;
}

InFlight inFlightOf(const Field& f, int nRanks) {
  InFlight op;
  static_cast<OpRef&>(op) = opOf(f, nRanks);
  op.channels = f.has("channels") ? static_cast<int>(f.integer("channels", 0, kMaxChannels)) : 0;
  op.started = channelList(f, "started");
  op.stopped = channelList(f, "stopped");
  if (!f.has("proxy")) return op;
  const Json& proxy = f.array("proxy");
  for (size_t i = 0; i < proxy.size(); ++i) {
    if (!proxy[i].is_object()) f.fail("proxy[" + std::to_string(i) + "]", "not an object");
    const Field p(proxy[i], f.where() + "proxy[" + std::to_string(i) + "].");
    ProxyEntry e;
    e.channel = static_cast<int>(p.integer("channel", 0, kMaxChannels - 1));
    e.peer = static_cast<int>(p.integer("peer", 0, nRanks - 1));
    e.send = p.flag("send");
    e.steps = p.has("steps") ? p.integer("steps", -1, std::numeric_limits<int64_t>::max()) : -1;
    e.of = p.has("of") ? p.integer("of", 0, std::numeric_limits<int64_t>::max()) : 0;
    op.proxy.push_back(e);
  }
  return op;
}

void readWindow(const Field& f, CommState* c) {
  if (!f.has("window")) return;
  const Field w = f.child("window");
  c->windowS = w.seconds("s");
  if (!w.has("keys")) return;
  const Json& keys = w.array("keys");
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!keys[i].is_object()) w.fail("keys[" + std::to_string(i) + "]", "not an object");
    const Field k(keys[i], w.where() + "keys[" + std::to_string(i) + "].");
    c->window.push_back(
        {k.text("op", true), k.count("bytes"), k.count("calls"), k.seconds("mean_us")});
  }
}

CommState commOf(const Field& f) {
  CommState c;
  c.comm = f.text("comm", true);
  c.commName = f.text("comm_name", false);
  c.nRanks = static_cast<int>(f.integer("nranks", 1, kMaxRanks));
  c.rank = static_cast<int>(f.integer("rank", 0, c.nRanks - 1));
  c.nNodes = f.has("n_nodes") ? static_cast<int>(f.integer("n_nodes", 0, c.nRanks)) : 0;
  if (f.has("ops")) {
    const Json& ops = f.at("ops");
    if (!ops.is_object()) f.fail("ops", "not an object");
    for (const auto& [kind, pair] : ops.items()) {
      if (kind.empty() || kind.size() > kMaxTextBytes) f.fail("ops", "an operation unnamed");
      c.ops[kind] = countsOf(f, "ops." + kind, pair);
    }
  }
  c.sends = perPeer(f, "sends", c.nRanks);
  c.recvs = perPeer(f, "recvs", c.nRanks);
  c.inFlight = f.count("in_flight");
  if (f.has("last")) c.last = opOf(f.child("last"), c.nRanks);
  if (f.has("last_done_age_s")) c.lastDoneAgeS = f.seconds("last_done_age_s");
  if (f.has("oldest")) c.oldest = inFlightOf(f.child("oldest"), c.nRanks);
  c.waitingS = f.seconds("waiting_s");
  c.stalled = f.flag("stalled");
  readWindow(f, &c);
  return c;
}

StateFile fileOf(const Json& j) {
  const Field f(j, "");
  StateFile s;
  s.node = f.text("node", true);
  s.pid = f.integer("pid", 0, kMaxPid);
  s.job = f.text("job", false);
  s.library = f.text("library", false);
  s.writtenMs = f.integer("written_ms", 0, kMaxUnixMs);
  s.nextDueMs = f.integer("next_due_ms", 0, kMaxUnixMs);
  s.stallS = f.seconds("stall_s", 300);
  s.final = f.flag("final");
  const Json& comms = f.array("comms");
  if (comms.size() > kMaxComms) f.fail("comms", "more than " + std::to_string(kMaxComms));
  for (size_t i = 0; i < comms.size(); ++i) {
    const std::string where = "comms[" + std::to_string(i) + "]";
    if (!comms[i].is_object()) f.fail(where, "not an object");
    s.comms.push_back(commOf(Field(comms[i], where + ".")));
  }
  return s;
}

/// Why `text` is no JSON: cut short (a copy taken mid-write, a full disk) or something else.
std::string whyNotJson(const std::string& text, const Json::parse_error& e) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return "empty (half-written?)";
  if (e.byte >= text.size())
    return "cut short at byte " + std::to_string(text.size()) + " (truncated or half-written)";
  return "not JSON (at byte " + std::to_string(e.byte) + ")";
}

}  // namespace

bool busyWriter(const StateFile& s) {
  return !s.final && std::any_of(s.comms.begin(), s.comms.end(),
                                 [](const CommState& c) { return c.inFlight > 0; });
}

Expected<StateFile> parseStateFile(const std::string& text, const std::string& path) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    return Error{path + ": " + whyNotJson(text, e)};
  } catch (const Json::exception&) {  // a number past a double's range (1e708): out_of_range
    return Error{path + ": not JSON (a number out of range)"};
  }
  const auto format = j.is_object() ? j.find("format") : j.end();
  if (!j.is_object() || format == j.end() || *format != kFormat) {
    return Error{path + ": not a nccl-pilot state file (\"format\" is not \"" +
                 std::string(kFormat) + "\")"};
  }
  const auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() || *version < 1)
    return Error{path + ": no format version this tool reads"};
  if (*version > kStateVersion) {
    return Error{path + ": format version " + std::to_string(version->get<int64_t>()) +
                 " is newer than this nccl-pilot reads (" + std::to_string(kStateVersion) +
                 "): use the nccl-pilot of the library that wrote it"};
  }
  try {
    StateFile s = fileOf(j);
    s.path = path;
    return s;
  } catch (const std::exception& e) {  // Refused, or a conversion nlohmann refused
    return Error{path + ": " + e.what()};
  }
}

}  // namespace pilot::cli::hang
