// The job check on the effective NCCL_* settings (environment and nccl.conf): debug-only and
// dangerous switches, deprecated and unknown names (each named once for the whole job, with
// the ranks that have it), an env plugin that may change what NCCL reads, and, within each
// group, a setting whose value differs between ranks or is set on some only. Names whose value
// differs by design (provenance::differsByDesign) are not compared.
#include <set>
#include <tuple>
#include <unordered_map>

#include "job_check.h"
#include "pilot/provenance/nccl_settings.h"

namespace pilot::doctor::detail {
namespace {

using provenance::SettingClass;

constexpr const char* kCheck = "job-settings";
const std::string kUnset = "\x01unset";  // not a value a record can hold: '?' replaces controls

using SettingIndex = std::unordered_map<std::string_view, const provenance::Setting*>;

std::string sourceNote(const provenance::Setting& s) {
  return s.source.empty() || s.source == "env" ? "" : "; set in " + shown(s.source);
}

/// The class findings (debug, dangerous, deprecated, unknown), one per name and value.
void classFindings(JobBuilder& b) {
  std::map<std::tuple<SettingClass, std::string, std::string>, Members> found;
  std::map<std::string, Members> envPlugins;
  for (const JobRank* r : b.all()) {
    const provenance::ProcessRecord& record = r->process->record;
    if (!record.envPlugin.empty()) envPlugins[record.envPlugin].push_back(r);
    for (const provenance::Setting& s : record.settings) {
      switch (s.cls) {
        case SettingClass::Debug:
        case SettingClass::Dangerous:
          found[{s.cls, s.name, s.value}].push_back(r);
          break;
        case SettingClass::Deprecated:
        case SettingClass::Unknown:
          found[{s.cls, s.name, ""}].push_back(r);
          break;
        default:
          break;
      }
    }
  }
  for (const auto& [key, ranks] : found) {
    const auto& [cls, name, value] = key;
    const provenance::Setting* s = nullptr;
    for (const provenance::Setting& one : ranks.front()->process->record.settings) {
      if (one.name == name) s = &one;
    }
    const std::string on = " on " + rankList(ranks);
    const std::string why = s->why.empty() ? "" : shown(s->why, 200);
    if (cls == SettingClass::Debug || cls == SettingClass::Dangerous) {
      const bool danger = cls == SettingClass::Dangerous;
      b.add(
          kCheck, Verdict::Warn,
          name + "=" + shown(value, 64) + (danger ? " (dangerous)" : " (debug-only)") + on,
          (why.empty() ? std::string(danger ? "can corrupt data or hang" : "for debugging") : why) +
              sourceNote(*s),
          "unset " + name + (danger ? "" : " once the debugging is done") +
              ": NCCL then chooses for itself (NCCL_DEBUG=INFO shows its choice)");
    } else if (cls == SettingClass::Deprecated) {
      b.add(kCheck, Verdict::Warn, name + " (deprecated)" + on,
            (why.empty() ? "an old spelling" : why) + sourceNote(*s),
            "use the current name (see the evidence)");
    } else {
      const std::string closest = shown(s->closest, 64);
      b.add(kCheck, Verdict::Warn, name + " (unknown)" + on,
            "no NCCL up to 2.30, nccl-pilot or NCCL plugin we know reads it" +
                (closest.empty() ? "" : "; the closest known name is " + closest) + sourceNote(*s),
            closest.empty() ? "remove it, or check it against your NCCL's documentation"
                            : "rename it to " + closest);
    }
  }
  for (const auto& [plugin, ranks] : envPlugins) {
    b.add(kCheck, Verdict::Warn,
          "NCCL_ENV_PLUGIN=" + shown(plugin, 64) + " (env plugin) on " + rankList(ranks),
          "NCCL reads its settings through this plugin: the values recorded here are the "
          "environment's and nccl.conf's and may differ from what NCCL used",
          "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV prints the values NCCL read");
  }
}

/// Within each group: settings whose value differs, or that some ranks set and others not.
size_t differingFindings(JobBuilder& b) {
  std::unordered_map<const JobRank*, SettingIndex> index;
  for (const JobRank* r : b.all()) {
    SettingIndex& one = index[r];
    for (const provenance::Setting& s : r->process->record.settings) one.emplace(s.name, &s);
  }
  std::set<std::string> compared;
  for (const JobGroup& g : b.groups()) {
    std::set<std::string_view> names;
    for (const JobRank* r : g.members) {
      for (const auto& [name, s] : index[r]) names.insert(name);
    }
    for (std::string_view name : names) {
      bool byDesign = false;
      for (const JobRank* r : g.members) {
        const auto it = index[r].find(name);
        byDesign |= it != index[r].end() && provenance::differsByDesign(name, it->second->value);
      }
      if (byDesign) continue;
      compared.emplace(name);
      const auto valueOf = [&](const JobRank& r) -> std::optional<std::string> {
        const SettingIndex& one = index[&r];
        if (const auto it = one.find(name); it != one.end()) return it->second->value;
        // A record past its bound dropped some: an absent name is then unknown, not unset.
        if (r.process->record.settingsDropped > 0) return std::nullopt;
        return kUnset;
      };
      const std::string n(name);
      Wording w;
      w.thing = [n](const std::string& v) {
        return v == kUnset ? n + " unset" : n + "=" + shown(v, 64);
      };
      w.others = [](const std::string& v) {
        return v == kUnset ? std::string("do not set it") : "have " + shown(v, 64);
      };
      w.brief = [](const std::string& v) { return v == kUnset ? "unset" : shown(v, 64); };
      w.differ = n + " differs";
      w.detail = [&index, name](const Side& side) {
        std::set<std::string> sources;
        for (const JobRank* r : side.ranks) {
          const auto it = index[r].find(name);
          sources.insert(it == index[r].end() ? "" : it->second->source);
        }
        if (sources.size() != 1 || sources.begin()->empty() || *sources.begin() == "env") {
          return std::string();
        }
        return "; set in " + shown(*sources.begin());
      };
      reportSides(b, g, sidesOf(g.members, valueOf), w, kCheck, Verdict::Warn,
                  "set " + n +
                      " alike on every rank (in the job's environment, not one node's shell or "
                      "nccl.conf), unless it is meant to differ per node");
    }
  }
  return compared.size();
}

}  // namespace

void checkSettings(JobBuilder& b) {
  classFindings(b);
  const size_t compared = differingFindings(b);
  b.passUnlessFound(kCheck, counted(compared, "NCCL_* setting", "NCCL_* settings") +
                                " alike on every rank compared; none debug-only, dangerous, "
                                "deprecated or unknown");
}

}  // namespace pilot::doctor::detail
