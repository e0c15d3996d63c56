// env: the NCCL_* and NCCL_PILOT_* variables of this process. Unknown names (a typo NCCL
// silently ignores, with the closest known name), values NCCL misreads or rejects, and settings
// that contradict the machine (NCCL_IB_HCA naming absent devices, NCCL_SOCKET_IFNAME matching no
// interface, an unreadable NCCL_TOPO_FILE, IB switched off while IB ports are up).
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "context.h"
#include "pilot/core/config.h"
#include "pilot/core/nccl_list.h"
#include "pilot/core/text.h"
#include "pilot/provenance/nccl_settings.h"

namespace pilot::doctor::detail {
namespace {

constexpr const char* kEnv = "env";

/// How NCCL reads an integer variable: strtoll(value, nullptr, 0), so "true" is 0, "1x" is 1,
/// "010" is octal 8 and "0x10" hex 16; only overflow (errno) makes it fall back to the default.
struct NcclInteger {
  int64_t value = 0;
  bool exact = false;  ///< the whole text is a plain decimal number
  bool overflow = false;
};
NcclInteger readLikeNccl(const std::string& text) {
  NcclInteger out;
  errno = 0;
  char* end = nullptr;
  out.value = std::strtoll(text.c_str(), &end, 0);
  out.overflow = errno == ERANGE;
  const std::string_view t = text::trim(text);
  out.exact = text::parseSigned(t).has_value() && !(t.size() > 1 && t[0] == '0') &&
              !(t.size() > 2 && t[0] == '-' && t[1] == '0');
  return out;
}

struct IntegerRule {
  const char* name;
  int64_t lo, hi;
  Verdict outOfRange;
  const char* consequence;
};
// Ranges from NCCL's env.rst and the IB spec fields they fill; booleans take any integer
// (non-zero is on), so only their spelling is checked.
constexpr int64_t kAny = INT64_MIN;
const IntegerRule kIntegers[] = {
    {"NCCL_IB_TC", 0, 255, Verdict::Warn, "only the low 8 bits reach the traffic class"},
    {"NCCL_IB_FIFO_TC", 0, 255, Verdict::Warn, "only the low 8 bits reach the traffic class"},
    {"NCCL_IB_SL", 0, 15, Verdict::Fail, "queue pairs refuse a service level above 15"},
    {"NCCL_IB_TIMEOUT", 0, 31, Verdict::Fail, "queue pairs refuse a timeout above 31"},
    {"NCCL_IB_RETRY_CNT", 0, 7, Verdict::Fail, "queue pairs refuse a retry count above 7"},
    {"NCCL_IB_GID_INDEX", -1, 255, Verdict::Fail, "no port has such a GID index"},
    {"NCCL_IB_ROCE_VERSION_NUM", 1, 2, Verdict::Fail, "RoCE has versions 1 and 2"},
    {"NCCL_IB_QPS_PER_CONNECTION", 1, 128, Verdict::Warn, "NCCL accepts 1..128"},
    {"NCCL_SOCKET_NTHREADS", 1, 16, Verdict::Warn, "NCCL accepts 1..16"},
    {"NCCL_NSOCKS_PERTHREAD", 1, 64, Verdict::Warn, "NCCL accepts 1..64"},
    {"NCCL_MIN_NCHANNELS", 1, 64, Verdict::Warn, "NCCL has at most 64 channels"},
    {"NCCL_MAX_NCHANNELS", 1, 64, Verdict::Warn, "NCCL has at most 64 channels"},
    {"NCCL_IB_DISABLE", kAny, 0, Verdict::Pass, ""},
    {"NCCL_P2P_DISABLE", kAny, 0, Verdict::Pass, ""},
    {"NCCL_SHM_DISABLE", kAny, 0, Verdict::Pass, ""},
    {"NCCL_DMABUF_ENABLE", kAny, 0, Verdict::Pass, ""},
    {"NCCL_NET_GDR_READ", kAny, 0, Verdict::Pass, ""},
    {"NCCL_PXN_DISABLE", kAny, 0, Verdict::Pass, ""},
    {"NCCL_NVLS_ENABLE", kAny, 0, Verdict::Pass, ""},
    {"NCCL_COLLNET_ENABLE", kAny, 0, Verdict::Pass, ""},
    {"NCCL_CUMEM_ENABLE", kAny, 0, Verdict::Pass, ""},
    {"NCCL_IB_ADAPTIVE_ROUTING", kAny, 0, Verdict::Pass, ""},
    {"NCCL_IB_PCI_RELAXED_ORDERING", kAny, 0, Verdict::Pass, ""},
    {"NCCL_CROSS_NIC", kAny, 0, Verdict::Pass, ""},
    {"NCCL_GDR_FLUSH_DISABLE", kAny, 0, Verdict::Pass, ""},
    {"NCCL_IGNORE_CPU_AFFINITY", kAny, 0, Verdict::Pass, ""},
};

struct ChoiceRule {
  const char* name;
  const char* choices;  ///< '|'-separated, compared case-insensitively
  bool integersToo;     ///< the legacy integer form is accepted
  const char* consequence;
};
const ChoiceRule kChoices[] = {
    {"NCCL_DEBUG", "VERSION|WARN|INFO|ABORT|TRACE", false, "NCCL prints nothing"},
    {"NCCL_SOCKET_FAMILY", "AF_INET|AF_INET6", false, "NCCL ignores it"},
    {"NCCL_IB_ADDR_FAMILY", "AF_INET|AF_INET6", false, "NCCL's GID selection ignores it"},
    // NCCL's path type names (src/graph/topo.cc topoPathTypeStr).
    {"NCCL_NET_GDR_LEVEL", "LOC|NVL|NVB|C2C|PIX|PXB|P2C|PXN|PHB|SYS", true,
     "NCCL keeps its own GPU Direct RDMA cutoff"},
    {"NCCL_P2P_LEVEL", "LOC|NVL|NVB|C2C|PIX|PXB|P2C|PXN|PHB|SYS", true,
     "NCCL keeps its own peer-to-peer cutoff"},
};

struct Problems {
  Context& ctx;
  int count = 0;
  void add(Verdict v, const std::string& subject, const std::string& evidence,
           const std::string& fix) {
    ++count;
    ctx.add(kEnv, v, subject, evidence, fix);
  }
};

void checkNames(const Context& ctx, Problems& p) {
  for (const auto& [name, value] : ctx.inputs.env.vars) {
    if (name.rfind("NCCL_", 0) != 0) continue;
    const std::string subject = name + "=" + value;
    if (name == "NCCL_IB_GDR_LEVEL") {
      p.add(Verdict::Warn, subject, "renamed NCCL_NET_GDR_LEVEL in NCCL 2.4: ignored",
            "rename it NCCL_NET_GDR_LEVEL");
      continue;
    }
    if (provenance::knownName(name)) continue;
    const std::string closest = provenance::closestKnownName(name);
    const bool pilot = name.rfind("NCCL_PILOT_", 0) == 0;
    p.add(Verdict::Warn, subject,
          std::string("not a variable ") +
              (pilot ? "nccl-pilot reads" : "NCCL (2.18..2.30) or nccl-pilot reads") +
              (closest.empty() ? ": ignored (or a newer release's)"
                               : ": likely a typo of " + closest + ", which is not set"),
          closest.empty() ? "remove it, or check the spelling in NCCL's env documentation"
                          : "rename it " + closest);
  }
}

void checkValues(const Context& ctx, Problems& p) {
  for (const IntegerRule& r : kIntegers) {
    std::optional<std::string> value = ctx.env(r.name);
    if (!value) continue;
    const NcclInteger n = readLikeNccl(*value);
    const std::string subject = std::string(r.name) + "=" + *value;
    if (n.overflow) {
      p.add(Verdict::Warn, subject, "out of range for NCCL's integer: NCCL uses its default",
            "set a plain decimal number");
    } else if (!n.exact) {
      p.add(Verdict::Warn, subject,
            "NCCL reads it with strtoll as " + std::to_string(n.value) +
                " (leading number; 0x is hex, a leading 0 octal)",
            "set a plain decimal number (0 or 1 for a switch)");
    } else if (r.lo != kAny && (n.value < r.lo || n.value > r.hi)) {
      p.add(r.outOfRange, subject,
            "outside " + std::to_string(r.lo) + ".." + std::to_string(r.hi) + ": " + r.consequence,
            "set a value in " + std::to_string(r.lo) + ".." + std::to_string(r.hi));
    }
  }
  for (const ChoiceRule& r : kChoices) {
    std::optional<std::string> value = readText(ctx.env, r.name);
    if (!value) continue;
    bool ok = r.integersToo && text::parseUnsigned(*value).has_value();
    for (std::string_view c : text::split(r.choices, '|'))
      ok = ok || text::equalsIgnoreCase(c, *value);
    if (!ok) {
      std::string spelled = r.choices;
      std::replace(spelled.begin(), spelled.end(), '|', ' ');
      p.add(Verdict::Warn, std::string(r.name) + "=" + *value,
            std::string("not one of ") + spelled + ": " + r.consequence,
            std::string("use one of ") + spelled);
    }
  }
  auto integer = [&](const char* name) -> std::optional<int64_t> {
    std::optional<std::string> v = ctx.env(name);
    if (!v) return std::nullopt;
    NcclInteger n = readLikeNccl(*v);
    return n.overflow ? std::nullopt : std::optional<int64_t>(n.value);
  };
  std::optional<int64_t> minCh = integer("NCCL_MIN_NCHANNELS"),
                         maxCh = integer("NCCL_MAX_NCHANNELS");
  if (minCh && maxCh && *minCh > *maxCh) {
    p.add(Verdict::Warn, "NCCL_MIN_NCHANNELS=" + std::to_string(*minCh),
          "above NCCL_MAX_NCHANNELS=" + std::to_string(*maxCh) + ": the two bounds contradict",
          "set NCCL_MIN_NCHANNELS <= NCCL_MAX_NCHANNELS");
  }
  std::optional<int64_t> threads = integer("NCCL_SOCKET_NTHREADS");
  std::optional<int64_t> socks = integer("NCCL_NSOCKS_PERTHREAD");
  if (threads && socks && *threads > 0 && *socks > 0 && *threads * *socks > 64) {
    p.add(Verdict::Warn,
          "NCCL_SOCKET_NTHREADS=" + std::to_string(*threads) +
              " x NCCL_NSOCKS_PERTHREAD=" + std::to_string(*socks),
          std::to_string(*threads * *socks) + " sockets per connection: NCCL allows at most 64",
          "lower one of them so the product is at most 64");
  }
  // nccl-pilot's own settings, read exactly as the library reads them.
  for (const SettingInfo& s : allSettings()) {
    if (!readText(ctx.env, s.name)) continue;
    if (s.type == SettingType::Bool) {
      Expected<bool> b = readBool(ctx.env, s.name, false);
      if (!b.ok())
        p.add(Verdict::Warn, s.name, b.error() + ": the library uses its default", "set 0 or 1");
    } else if (s.type == SettingType::Enum && s.choices != nullptr) {
      Expected<std::string> c = readChoice(ctx.env, s.name, s.choices, "");
      if (!c.ok())
        p.add(Verdict::Warn, s.name, c.error() + ": the library uses its default",
              std::string("use one of ") + s.choices);
    }
  }
}

void checkAgainstMachine(const Context& ctx, Problems& p) {
  const auto& probes = ctx.inputs.probes;
  // NCCL_IB_HCA: each entry should name a port NCCL can see.
  if (std::optional<std::string> spec = readText(ctx.env, "NCCL_IB_HCA")) {
    const NcclNameList list = NcclNameList::parse(*spec);
    std::vector<std::string> missing;
    for (const NcclNameList::Entry& e : list.entries) {
      NcclNameList one;
      one.exact = list.exact;
      one.entries = {e};
      bool found =
          std::any_of(ctx.ports.begin(), ctx.ports.end(),
                      [&](const topology::RdmaPort& r) { return one.matches(r.device, r.port); });
      if (!found) missing.push_back(e.name + (e.port >= 0 ? ":" + std::to_string(e.port) : ""));
    }
    std::string devices;
    for (const topology::RdmaPort& r : ctx.ports)
      devices += (devices.empty() ? "" : ", ") + r.device + ":" + std::to_string(r.port);
    if (devices.empty()) devices = "none";
    const bool none = !list.exclude && missing.size() == list.entries.size() && !missing.empty();
    if (!missing.empty()) {
      std::string names;
      for (const std::string& m : missing) names += (names.empty() ? "" : ", ") + m;
      p.add(
          none ? Verdict::Fail : Verdict::Warn, "NCCL_IB_HCA=" + *spec,
          "names " + names +
              ", which no RDMA port matches (ports in /sys/class/infiniband: " + devices + ")" +
              (none ? ": NCCL finds no IB device and falls back to sockets, without an error" : ""),
          "name the devices ibv_devinfo lists (prefixes match unless the list starts with =)");
    }
  }
  // NCCL_SOCKET_IFNAME: some interface must match, or bootstrap fails.
  if (std::optional<std::string> spec = readText(ctx.env, "NCCL_SOCKET_IFNAME")) {
    const NcclNameList list = NcclNameList::parse(*spec);
    const std::vector<std::string> interfaces = ctx.sysfs.list("/sys/class/net");
    bool any = std::any_of(interfaces.begin(), interfaces.end(),
                           [&](const std::string& i) { return list.matches(i); });
    if (!any) {
      std::string names;
      for (const std::string& i : interfaces) names += (names.empty() ? "" : ", ") + i;
      p.add(Verdict::Fail, "NCCL_SOCKET_IFNAME=" + *spec,
            "matches no interface in /sys/class/net (" + (names.empty() ? "none" : names) +
                "): NCCL's bootstrap finds no socket interface and init fails",
            "name an interface that exists here (ip -br link)");
    }
  }
  // NCCL_TOPO_FILE: NCCL only logs an INFO line when it cannot open it.
  if (std::optional<std::string> file = readText(ctx.env, "NCCL_TOPO_FILE")) {
    if (probes.fileReadable && !probes.fileReadable(*file)) {
      p.add(Verdict::Warn, "NCCL_TOPO_FILE=" + *file,
            "cannot be opened for reading here: NCCL logs one INFO line and detects the "
            "topology itself",
            "point it at a readable NCCL topology XML, or unset it");
    }
  }
  for (const char* name : {setting::kTunerTable, setting::kHwlocXml}) {
    std::optional<std::string> file = readText(ctx.env, name);
    if (file && probes.fileReadable && !probes.fileReadable(*file)) {
      p.add(Verdict::Warn, std::string(name) + "=" + *file, "cannot be opened for reading here",
            "point it at a readable file, or unset it");
    }
  }
  // IB switched off although NCCL's IB transport could carry the data.
  const bool ibOff =
      readText(ctx.env, "NCCL_IB_DISABLE").has_value() || readText(ctx.env, "NCCL_NET").has_value();
  if (ibOff && !ctx.fabric.rdma) {
    std::map<std::string, std::string> vars = ctx.inputs.env.vars;
    vars.erase("NCCL_IB_DISABLE");
    vars.erase("NCCL_NET");
    Environment without{vars};
    topology::FabricChoice could = topology::chooseFabric(ctx.ports, without.lookup());
    if (could.rdma) {
      p.add(Verdict::Warn, "NCCL's network",
            ctx.fabric.why + ", although " + could.why + ": the data goes over TCP sockets",
            "unset it if RDMA is wanted (NCCL_IB_DISABLE=1 is a debugging switch)");
    }
  }
}

}  // namespace

void checkEnv(Context& ctx) {
  Problems p{ctx};
  checkNames(ctx, p);
  checkValues(ctx, p);
  checkAgainstMachine(ctx, p);
  size_t set = 0;
  for (const auto& entry : ctx.inputs.env.vars) set += entry.first.rfind("NCCL_", 0) == 0;
  if (p.count == 0) {
    ctx.add(kEnv, Verdict::Pass, "NCCL_* and NCCL_PILOT_* variables",
            std::to_string(set) + " set, all known, in range and consistent with this machine");
  }
}

}  // namespace pilot::doctor::detail
