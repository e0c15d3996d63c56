#include "pilot/provenance/record.h"

#include <array>
#include <map>

#include "pilot/core/text.h"

namespace pilot::provenance {
namespace {

void field(std::string* out, const char* name, const std::string& json) {
  if (out->size() > 1) *out += ',';
  *out += text::jsonString(name);
  *out += ':';
  *out += json;
}

std::string str(const std::string& s) {
  return text::jsonString(s);
}

std::string library(const Library& l) {
  std::string out = "{";
  field(&out, "path", str(l.path));
  field(&out, "version", str(l.version));
  return out + "}";
}

std::string label(const char* name, const std::string& value, bool first = false) {
  return std::string(first ? "" : ",") + name + "=\"" + text::escapeLabelValue(value) + "\"";
}

}  // namespace

std::string renderRecordJson(const ProcessRecord& r) {
  std::string out = "{";
  field(&out, "kind", str("provenance"));
  field(&out, "format", std::to_string(kRecordFormat));
  field(&out, "node", str(r.node));
  field(&out, "pid", std::to_string(r.pid));
  field(&out, "written_ms", std::to_string(r.writtenMs));
  field(&out, "rank", str(r.rank));
  field(&out, "rank_from", str(r.rankFrom));
  field(&out, "local_rank", str(r.localRank));
  field(&out, "pilot_version", str(r.pilotVersion));
  field(&out, "table", str(r.table));
  field(&out, "table_sha256", str(r.tableSha256));
  {
    std::string nccl = "{";
    field(&nccl, "version", str(r.nccl.version));
    field(&nccl, "path", str(r.nccl.path));
    field(&nccl, "how", str(r.ncclHow));
    field(&out, "nccl", nccl + "}");
  }
  std::string list = "[";
  for (const Library& l : r.libraries) list += (list.size() > 1 ? "," : "") + library(l);
  field(&out, "libraries", list + "]");
  std::string settings = "{";
  for (const auto& [name, value] : r.pluginSettings) field(&settings, name.c_str(), str(value));
  field(&out, "plugin_settings", settings + "}");
  list = "[";
  for (const LoadedPlugin& p : r.plugins) {
    std::string one = "{";
    field(&one, "kind", str(p.kind));
    field(&one, "abi", std::to_string(p.abi));
    field(&one, "path", str(p.path));
    list += (list.size() > 1 ? "," : "") + one + "}";
  }
  field(&out, "plugins", list + "]");
  field(&out, "env_plugin", str(r.envPlugin));
  list = "[";
  for (const std::string& f : r.confFiles) list += (list.size() > 1 ? "," : "") + str(f);
  field(&out, "conf_files", list + "]");
  list = "[";
  for (const Setting& s : r.settings) {
    std::string one = "{";
    field(&one, "name", str(s.name));
    field(&one, "value", str(s.value));
    field(&one, "class", str(className(s.cls)));
    field(&one, "source", str(s.source));
    field(&one, "why", str(s.why));
    field(&one, "closest", str(s.closest));
    list += (list.size() > 1 ? "," : "") + one + "}";
  }
  field(&out, "settings", list + "]");
  field(&out, "settings_dropped", std::to_string(r.settingsDropped));
  return out + "}";
}

std::string renderRecordPrometheus(const ProcessRecord& r) {
  const std::string who = label("node", r.node, true) + label("pid", std::to_string(r.pid)) +
                          label("rank", r.rank.empty() ? "unknown" : r.rank);
  std::string out;
  out +=
      "# HELP nccl_pilot_process_info What this process runs: the NCCL that called nccl-pilot, "
      "its library, nccl-pilot's version and table (count by (nccl_version) shows skew)\n"
      "# TYPE nccl_pilot_process_info gauge\n";
  out += "nccl_pilot_process_info{" + who +
         label("nccl_version", r.nccl.version.empty() ? "unknown" : r.nccl.version) +
         label("nccl_path", r.nccl.path) + label("pilot_version", r.pilotVersion) +
         label("table_sha256", r.tableSha256) +
         label("libnccl_copies", std::to_string(r.libraries.size())) + "} 1\n";
  out +=
      "# HELP nccl_pilot_process_libnccl_mapped Each libnccl this process maps (more than one "
      "is a version mismatch waiting to happen)\n"
      "# TYPE nccl_pilot_process_libnccl_mapped gauge\n";
  for (const Library& l : r.libraries) {
    out += "nccl_pilot_process_libnccl_mapped{" + who + label("path", l.path) +
           label("version", l.version.empty() ? "unknown" : l.version) + "} 1\n";
  }
  std::map<std::string, int> counts;
  for (SettingClass c :
       {SettingClass::Nccl, SettingClass::Pilot, SettingClass::Other, SettingClass::Debug,
        SettingClass::Dangerous, SettingClass::Deprecated, SettingClass::Unknown})
    counts[className(c)] = 0;
  for (const Setting& s : r.settings) ++counts[className(s.cls)];
  out +=
      "# HELP nccl_pilot_process_settings The NCCL_* settings this process runs with, by class "
      "(debug, dangerous, deprecated and unknown ones deserve a look)\n"
      "# TYPE nccl_pilot_process_settings gauge\n";
  for (const auto& [cls, n] : counts)
    out += "nccl_pilot_process_settings{" + who + label("class", cls) + "} " + std::to_string(n) +
           "\n";
  return out;
}

LauncherRank launcherRank(const std::function<const char*(const char*)>& getenv) {
  auto decimal = [&](const char* name) -> std::string {
    const char* v = getenv(name);
    if (v == nullptr) return {};
    const std::string_view t = text::trim(v);
    return text::parseUnsigned(t) && t.size() <= 10 ? std::string(t) : std::string();
  };
  LauncherRank out;
  for (const char* name :
       {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    out.rank = decimal(name);
    if (!out.rank.empty()) {
      out.from = name;
      break;
    }
  }
  for (const char* name : {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    out.local = decimal(name);
    if (!out.local.empty()) break;
  }
  return out;
}

std::string ownProblems(const ProcessRecord& r) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  if (r.libraries.size() > 1) {
    std::string list;
    for (const Library& l : r.libraries)
      list += (list.empty() ? "" : ", ") + l.path + " (" +
              (l.version.empty() ? "version unknown" : l.version) + ")";
    add(std::to_string(r.libraries.size()) + " libnccl mapped in this process: " + list +
        "; NCCL " + (r.nccl.version.empty() ? "of unknown version" : r.nccl.version) +
        " called nccl-pilot");
  }
  std::string risky, unknown, deprecated;
  for (const Setting& s : r.settings) {
    if (s.cls == SettingClass::Dangerous || s.cls == SettingClass::Debug) {
      risky += (risky.empty() ? "" : ", ") + s.name + "=" + s.value + " (" +
               (s.cls == SettingClass::Dangerous ? "dangerous: " : "debug-only: ") + s.why + ")";
    } else if (s.cls == SettingClass::Unknown) {
      unknown += (unknown.empty() ? "" : ", ") + s.name +
                 (s.closest.empty() ? "" : " (" + s.closest + "?)");
    } else if (s.cls == SettingClass::Deprecated) {
      deprecated += (deprecated.empty() ? "" : ", ") + s.name + " (" + s.why + ")";
    }
  }
  if (!risky.empty()) add(risky);
  if (!unknown.empty()) add("unknown NCCL_* names: " + unknown);
  if (!deprecated.empty()) add("deprecated: " + deprecated);
  return out;
}

}  // namespace pilot::provenance
