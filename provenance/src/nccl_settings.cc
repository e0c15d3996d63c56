// What each NCCL_* name is (nccl_settings.h). The debug-only and dangerous switches are NCCL's
// own "Debugging" variables (docs/userguide env.rst: "should not be used in production nor
// retained in scripts ... may result in sub-optimal behavior, crashes, or hangs") that bypass a
// choice NCCL makes per machine; the list is short on purpose: a warning users learn to ignore
// is worse than none.
#include <algorithm>
#include <array>

#include "pilot/core/config.h"
#include "pilot/core/text.h"
#include "pilot/provenance/nccl_settings.h"

namespace pilot::provenance {
namespace {

/// NCCL_ names other software reads: plugin families by prefix, and single names.
constexpr const char* kOtherPrefixes[] = {"NCCL_SHARP_", "NCCL_UCX_", "NCCL_TESTS_"};
constexpr const char* kOtherNames[] = {
    // nccl-rdma-sharp-plugins
    "NCCL_IBEXT_DISABLE", "NCCL_PLUGIN_P2P", "NCCL_IB_IS_GLOBAL"};

struct Renamed {
  const char* name;
  const char* now;
  const char* why;
};
const Renamed kDeprecated[] = {
    {"NCCL_IB_GDR_LEVEL", "NCCL_NET_GDR_LEVEL", "renamed NCCL_NET_GDR_LEVEL in NCCL 2.4: ignored"},
    {"NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_ASYNC_ERROR_HANDLING",
     "PyTorch's old spelling of TORCH_NCCL_ASYNC_ERROR_HANDLING (deprecated since 2.2)"},
    {"NCCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT",
     "PyTorch's old spelling of TORCH_NCCL_BLOCKING_WAIT (deprecated since 2.2)"},
    {"NCCL_DESYNC_DEBUG", "TORCH_NCCL_DESYNC_DEBUG",
     "PyTorch's old spelling of TORCH_NCCL_DESYNC_DEBUG (deprecated since 2.2)"},
};

/// NCCL's debugging switches that bypass what it chooses per machine. `onlyWhenOn`: the value
/// 0 (or empty) leaves NCCL's choice, so it is a plain setting then.
struct Switch {
  const char* name;
  bool onlyWhenOn;
  const char* why;
};
const Switch kDebugSwitches[] = {
    {"NCCL_ALGO", false,
     "forces NCCL's algorithms for every size and communicator (a debugging switch; a tuning "
     "table chooses per size)"},
    {"NCCL_P2P_DISABLE", true,
     "GPU peer-to-peer off: traffic between GPUs of a node goes through host memory"},
    {"NCCL_SHM_DISABLE", true,
     "shared-memory transport off: GPUs without P2P talk through the network"},
    {"NCCL_NVB_DISABLE", true, "NVLink-through-GPU paths off"},
    {"NCCL_CHECK_POINTERS", true, "checks every buffer pointer on every call: slows each call"},
    {"NCCL_LAUNCH_MODE", false, "a debugging switch for how kernels of several GPUs launch"},
    {"NCCL_GRAPH_FILE", false, "replaces NCCL's search of rings and trees with a saved one"},
};

bool isOn(std::string_view value) {
  const std::string_view v = text::trim(value);
  return !v.empty() && v != "0";
}

/// NCCL_PROTO as NCCL reads it: a list that may start with '^' (exclude). Naming LL128 without
/// '^' forces it where NCCL would have left it off: on platforms NCCL does not enable LL128
/// for, that can corrupt data silently (NVIDIA/nccl#790).
bool forcesLl128(std::string_view value) {
  const std::string_view v = text::trim(value);
  if (!v.empty() && v.front() == '^') return false;
  for (std::string_view p : text::split(v, ',')) {
    if (text::equalsIgnoreCase(text::trim(p), "LL128")) return true;
  }
  return false;
}

/// Optimal string alignment distance (edits and adjacent transpositions): typos swap letters.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

bool ours(std::string_view name) {
  for (const SettingInfo& s : allSettings()) {
    if (name == s.name) return true;
  }
  return false;
}

}  // namespace

const char* className(SettingClass cls) {
  switch (cls) {
    case SettingClass::Nccl:
      return "nccl";
    case SettingClass::Pilot:
      return "pilot";
    case SettingClass::Other:
      return "other";
    case SettingClass::Debug:
      return "debug";
    case SettingClass::Dangerous:
      return "dangerous";
    case SettingClass::Deprecated:
      return "deprecated";
    case SettingClass::Unknown:
      return "unknown";
  }
  return "unknown";
}

bool parseClassName(std::string_view text, SettingClass* cls) {
  for (SettingClass c :
       {SettingClass::Nccl, SettingClass::Pilot, SettingClass::Other, SettingClass::Debug,
        SettingClass::Dangerous, SettingClass::Deprecated, SettingClass::Unknown}) {
    if (text == className(c)) {
      *cls = c;
      return true;
    }
  }
  return false;
}

bool knownName(std::string_view name) {
  const auto& nccl = ncclVariableNames();
  if (std::binary_search(nccl.begin(), nccl.end(), name)) return true;
  if (ours(name)) return true;
  for (const char* n : kOtherNames) {
    if (name == n) return true;
  }
  for (const Renamed& r : kDeprecated) {
    if (name == r.name) return true;
  }
  for (const char* p : kOtherPrefixes) {
    if (name.rfind(p, 0) == 0) return true;
  }
  return false;
}

std::string closestKnownName(std::string_view name) {
  if (name.size() <= 5 || name.size() > 128) return {};
  std::vector<std::string_view> candidates = ncclVariableNames();
  for (const SettingInfo& s : allSettings()) candidates.emplace_back(s.name);
  const std::string_view tail = name.substr(5);                     // after NCCL_
  const size_t reach = std::max<size_t>(2, (tail.size() + 2) / 5);  // 3 edits from 13 chars
  std::string best;
  size_t bestDistance = reach + 1;
  for (std::string_view c : candidates) {
    if (c.size() + reach < name.size() || name.size() + reach < c.size()) continue;
    size_t d = editDistance(tail, c.substr(5));
    if (d < bestDistance) {
      bestDistance = d;
      best = std::string(c);
    }
  }
  return best;
}

Classification classifySetting(std::string_view name, std::string_view value, bool rdmaUp) {
  Classification out;
  for (const Renamed& r : kDeprecated) {
    if (name == r.name) {
      out.cls = SettingClass::Deprecated;
      out.why = r.why;
      out.closest = r.now;
      return out;
    }
  }
  if (name == "NCCL_PROTO") {
    out.cls = forcesLl128(value) ? SettingClass::Dangerous : SettingClass::Debug;
    out.why = out.cls == SettingClass::Dangerous
                  ? "forces the LL128 protocol: on a platform NCCL does not enable it for, "
                    "results can be silently wrong (NVIDIA/nccl#790)"
                  : "forces NCCL's protocols for every size and communicator (a debugging "
                    "switch; a tuning table chooses per size)";
    return out;
  }
  if (name == "NCCL_IB_DISABLE") {
    if (isOn(value) && rdmaUp) {
      out.cls = SettingClass::Debug;
      out.why =
          "IB/RoCE transport off although RDMA ports are up here: the data goes over TCP "
          "sockets";
    }
    return out;
  }
  for (const Switch& s : kDebugSwitches) {
    if (name == s.name) {
      if (!s.onlyWhenOn || isOn(value)) {
        out.cls = SettingClass::Debug;
        out.why = s.why;
      }
      return out;
    }
  }
  if (name.rfind("NCCL_PILOT_", 0) == 0 && ours(name)) {
    out.cls = SettingClass::Pilot;
    return out;
  }
  const auto& nccl = ncclVariableNames();
  if (std::binary_search(nccl.begin(), nccl.end(), name)) return out;
  if (knownName(name)) {
    out.cls = SettingClass::Other;
    return out;
  }
  out.cls = SettingClass::Unknown;
  out.closest = closestKnownName(name);
  out.why = out.closest.empty() ? "read by neither NCCL (2.18..2.30) nor nccl-pilot: ignored"
                                : "read by nobody: likely a typo of " + out.closest;
  return out;
}

bool differsByDesign(std::string_view name, std::string_view value) {
  // NCCL_HOSTID names a host on purpose; our net plugin hands NCCL a topology file through a
  // per-process descriptor; a debug file's name usually carries %h or %p.
  if (name == "NCCL_HOSTID" || name == "NCCL_DEBUG_FILE") return true;
  if (name == "NCCL_TOPO_FILE" && value.rfind("/proc/self/fd/", 0) == 0) return true;
  return name == "NCCL_PILOT_METRICS_PORT";
}

}  // namespace pilot::provenance
