#include "pilot/core/config.h"

#include <cstdlib>

#include "pilot/core/text.h"

namespace pilot {

const std::vector<SettingInfo>& allSettings() {
  // Function-local static: built on first use, not at dlopen (no static constructors).
  static const std::vector<SettingInfo> settings = {
      {setting::kTunerTable, SettingType::Path, "",
       "tuning table the tuner applies (docs/tuning-table.md); unset = no table, NCCL decides",
       nullptr},
      {setting::kTunerConfigFile, SettingType::Path, "",
       "read when NCCL_PILOT_TUNER_TABLE is unset, so NCCL example-tuner users switch unchanged",
       nullptr},
      {setting::kTunerStrict, SettingType::Bool, "0",
       "1 = a table with any bad line, or an unreadable table, fails communicator init", nullptr},
      {setting::kTunerEnable, SettingType::Bool, "1",
       "0 = the tuner never touches NCCL's decisions (the library still loads)", nullptr},
      {setting::kTunerTableSha256, SettingType::Text, "",
       "hex prefix (8..64 digits) of the table's SHA-256 the launcher expects (nccl-pilot explain "
       "--table T --digest); another table leaves every decision to NCCL (strict: fails init)",
       nullptr},
      {setting::kTunerFabric, SettingType::Enum, "auto",
       "the fabric the table's fabric= keys match: auto = detected (RDMA ports ACTIVE, their link "
       "layer, NCCL_IB_DISABLE, NCCL_NET, NCCL_IB_HCA), or name it",
       "auto|ib|roce|ethernet"},
      {setting::kTunerExplore, SettingType::Text, "0",
       "share of the calls of each (communicator, collective, size) that try an alternative "
       "algorithm x protocol for the profiler to measure, 0..0.25 (0 = off); every rank must "
       "read the same value",
       nullptr},
      {setting::kTunerExploreDigest, SettingType::Text, "",
       "the schedule digest (8 hex digits) every rank should log (nccl-pilot explain --table T "
       "--digest --explore F); another one leaves this rank without exploration and WARNs "
       "(strict: init fails)",
       nullptr},
      {setting::kTopo, SettingType::Bool, "1",
       "0 = the net plugin writes no topology file (NCCL_TOPO_FILE) and NCCL detects on its own",
       nullptr},
      {setting::kTopoRepair, SettingType::Enum, "auto",
       "flat-VM repair: auto = only on a virtual machine, on = also on bare metal, off = never",
       "auto|on|off"},
      {setting::kTopoDump, SettingType::Path, "",
       "also write a copy of the topology file the plugin gives NCCL to this path", nullptr},
      {setting::kHwlocXml, SettingType::Path, "",
       "detect from this hwloc XML export (lstopo --of xml) instead of the live machine", nullptr},
      {setting::kSysfsRoot, SettingType::Path, "/",
       "directory that holds sys/ and proc/ for detection (tests replay recorded trees)", nullptr},
      {setting::kTransport, SettingType::Enum, "auto",
       "network transport of the net plugin: auto = none where NCCL's IB transport will carry "
       "the data (an RDMA port ACTIVE, IB not disabled), else socket; socket = our TCP "
       "transport; none = topology only, NCCL keeps its own IB/Socket",
       "auto|none|socket"},
      // The socket transport (net/include/pilot/net/socket.h reads them; ranges there).
      {"NCCL_PILOT_SOCKET_NSTREAMS", SettingType::Text, "2",
       "data streams (TCP connections) per NCCL connection of the socket transport, 0..16",
       nullptr},
      {"NCCL_PILOT_SOCKET_CHUNK", SettingType::Text, "512K",
       "largest piece of a message one data stream carries, 64K..64M", nullptr},
      {"NCCL_PILOT_SOCKET_NTHREADS", SettingType::Text, "0",
       "helper threads per comm that move the data streams, 0..16 (0 = NCCL's progress thread "
       "moves everything inside test())",
       nullptr},
      {"NCCL_PILOT_SOCKET_EAGER", SettingType::Text, "64K",
       "messages up to this size are sent before the receiver's CTS record for them, 0..64K "
       "(0 = every message waits for it)",
       nullptr},
      {"NCCL_PILOT_SOCKET_TIMEOUT_MS", SettingType::Text, "30000",
       "bound on connection set-up and on noticing a dead peer (TCP user timeout, keepalive), "
       "100..3600000",
       nullptr},
      // The profiler: metrics of the collectives NCCL runs (metrics/include/pilot/metrics/
      // settings.h reads them; ranges there).
      {"NCCL_PILOT_METRICS", SettingType::Bool, "0",
       "1 = the profiler measures collectives and exports them; 0 = off even with a directory",
       nullptr},
      {"NCCL_PILOT_METRICS_DIR", SettingType::Path, "",
       "directory of the Prometheus textfile and JSON-lines summary per process; setting it "
       "turns metrics on",
       nullptr},
      {"NCCL_PILOT_METRICS_INTERVAL_S", SettingType::Text, "30",
       "seconds between exports (also at each communicator's finalize), 1..3600", nullptr},
      {"NCCL_PILOT_METRICS_SAMPLE", SettingType::Text, "1",
       "measure collectives whose sequence number is a multiple of N (1 = all), 1..1000000",
       nullptr},
      {"NCCL_PILOT_METRICS_MIN_BYTES", SettingType::Text, "0",
       "skip collectives moving fewer bytes per rank (suffixes K/M/G)", nullptr},
      {"NCCL_PILOT_METRICS_PORT", SettingType::Text, "",
       "serve GET /metrics on this port plus the local rank (unset = no HTTP endpoint)", nullptr},
      {"NCCL_PILOT_METRICS_BIND", SettingType::Text, "127.0.0.1",
       "address the HTTP endpoint listens on (0.0.0.0 or :: to expose it beyond the host)",
       nullptr},
      {"NCCL_PILOT_METRICS_DRIFT", SettingType::Text, "0.2",
       "warn when a tuned band's live bus bandwidth is below (1 - this) x its calibrated one, "
       "0.01..0.99",
       nullptr},
      {"NCCL_PILOT_METRICS_DRIFT_CALLS", SettingType::Text, "100",
       "calls a band needs before its drift counts", nullptr},
      {"NCCL_PILOT_STALL_S", SettingType::Text, "300",
       "seconds without a completion, while an operation is in flight, before a communicator "
       "counts as stalled (a WARN line, the state file, nccl_pilot_comm_stalled), 1..86400",
       nullptr},
      {"NCCL_PILOT_METRICS_PROXY", SettingType::Text, "off",
       "network progress events: off, ops (NCCL's ProxyOp events: which peer and channel a "
       "stalled operation still waits on) or steps (ProxyStep events too: how far each got)",
       nullptr},
  };
  return settings;
}

EnvLookup processEnv() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<std::string> readText(const EnvLookup& env, const char* name) {
  auto value = env(name);
  if (!value || text::trim(*value).empty()) return std::nullopt;
  return std::string(text::trim(*value));
}

Expected<std::string> readChoice(const EnvLookup& env, const char* name, const char* choices,
                                 const char* fallback) {
  auto value = readText(env, name);
  if (!value) return std::string(fallback);
  for (std::string_view choice : text::split(choices, '|')) {
    if (text::equalsIgnoreCase(choice, *value)) return std::string(choice);
  }
  return Error{std::string(name) + "=" + *value + " is not one of " + choices};
}

Expected<uint64_t> readUnsigned(const EnvLookup& env, const char* name, uint64_t low, uint64_t high,
                                uint64_t fallback, bool bytes) {
  auto value = readText(env, name);
  if (!value) return fallback;
  std::optional<uint64_t> parsed = bytes ? text::parseBytes(*value) : text::parseUnsigned(*value);
  if (!parsed || *parsed < low || *parsed > high) {
    return Error{std::string(name) + "=" + *value + " is not in [" + std::to_string(low) + ", " +
                 std::to_string(high) + "]"};
  }
  return *parsed;
}

Expected<bool> readBool(const EnvLookup& env, const char* name, bool fallback) {
  auto value = readText(env, name);
  if (!value) return fallback;
  std::string v = text::toLower(*value);
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return Error{std::string(name) + "=" + *value + " is not a boolean (use 0 or 1)"};
}

}  // namespace pilot
