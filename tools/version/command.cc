// `nccl-pilot version`: the project version, the plugin ABI versions the built library really
// exports (found by dlsym, not assumed) and so which symbol each NCCL release will load.
#include <iomanip>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/nccl_versions.h"
#include "cli/plugin_loader.h"
#include "pilot/core/config.h"
#include "pilot/version.h"

namespace pilot::cli {
namespace {

struct VersionOptions {
  bool json = false;
  bool settings = false;
  std::string plugin;
};

const char* settingTypeName(SettingType t) {
  switch (t) {
    case SettingType::Path:
      return "path";
    case SettingType::Bool:
      return "bool";
    case SettingType::Enum:
      return "enum";
    case SettingType::Text:
      break;
  }
  return "text";
}

std::string abiList(const std::vector<int>& abis) {
  std::string s;
  for (int v : abis) s += (s.empty() ? "v" : " v") + std::to_string(v);
  return s.empty() ? "none" : s;
}

std::string abiName(int v) {
  return v == 0 ? "none" : "v" + std::to_string(v);
}

/// What the library exports, per plugin kind.
struct Exported {
  std::vector<int> tuner, net, profiler;
};

void printText(const PluginLibrary& lib, const Exported& abis, bool settings) {
  std::cout << "plugin:       " << lib.path() << "\n"
            << "tuner ABI:    " << abiList(abis.tuner) << "\n"
            << "net ABI:      " << abiList(abis.net) << "\n"
            << "profiler ABI: " << abiList(abis.profiler) << "\n"
            << "NCCL releases served (the newest exported symbol each one knows):\n";
  for (const NcclRelease& r : servedReleases()) {
    std::cout << "  NCCL " << std::left << std::setw(14) << r.label() << " tuner " << std::setw(5)
              << abiName(newestWithin(abis.tuner, r.tunerMin, r.tunerMax)) << " net "
              << std::setw(5) << abiName(newestWithin(abis.net, r.netMin, r.netMax)) << " profiler "
              << abiName(newestWithin(abis.profiler, r.profilerMin, r.profilerMax)) << "\n";
  }
  if (!settings) return;
  size_t nameWidth = 0, defaultWidth = 7;
  for (const SettingInfo& s : allSettings()) {
    nameWidth = std::max(nameWidth, std::string(s.name).size());
    defaultWidth = std::max(defaultWidth, std::string(s.defaultValue).size());
  }
  std::cout << "settings (environment or nccl.conf):\n";
  for (const SettingInfo& s : allSettings()) {
    const std::string def = *s.defaultValue ? s.defaultValue : "(unset)";
    std::cout << "  " << std::left << std::setw(static_cast<int>(nameWidth)) << s.name << "  "
              << std::setw(static_cast<int>(defaultWidth)) << def << "  " << s.description;
    if (s.choices != nullptr) std::cout << " [" << s.choices << "]";
    std::cout << "\n";
  }
}

nlohmann::ordered_json toJson(const PluginLibrary& lib, const Exported& abis, bool settings) {
  using json = nlohmann::ordered_json;
  auto orNull = [](int v) { return v == 0 ? json(nullptr) : json(v); };
  json out;
  out["version"] = pilot::kVersion;
  out["plugin"] = lib.path();
  out["tuner_abi"] = abis.tuner;
  out["net_abi"] = abis.net;
  out["profiler_abi"] = abis.profiler;
  json releases = json::array();
  for (const NcclRelease& r : servedReleases()) {
    releases.push_back(
        {{"nccl", r.label()},
         {"tuner_abi", orNull(newestWithin(abis.tuner, r.tunerMin, r.tunerMax))},
         {"net_abi", orNull(newestWithin(abis.net, r.netMin, r.netMax))},
         {"profiler_abi", orNull(newestWithin(abis.profiler, r.profilerMin, r.profilerMax))}});
  }
  out["nccl"] = std::move(releases);
  if (settings) {
    json list = json::array();
    for (const SettingInfo& s : allSettings()) {
      list.push_back({{"name", s.name},
                      {"type", settingTypeName(s.type)},
                      {"default", *s.defaultValue ? json(s.defaultValue) : json(nullptr)},
                      {"description", s.description},
                      {"choices", s.choices ? json(s.choices) : json(nullptr)}});
    }
    out["settings"] = std::move(list);
  }
  return out;
}

int runVersion(const VersionOptions& opts) {
  if (!opts.json) std::cout << "nccl-pilot " << pilot::kVersion << "\n";
  auto lib = PluginLibrary::open(opts.plugin.empty() ? defaultPluginPath() : opts.plugin);
  if (!lib.ok()) return reportError(lib.error());
  const Exported abis{lib->tunerAbis(), lib->netAbis(), lib->profilerAbis()};
  if (opts.json) {
    std::cout << toJson(*lib, abis, opts.settings).dump(2) << "\n";
  } else {
    printText(*lib, abis, opts.settings);
  }
  if (abis.tuner.empty() && abis.net.empty() && abis.profiler.empty()) {
    return reportError(
        lib->path() + " exports no ncclTunerPlugin_v*, ncclNetPlugin_v* or ncclProfiler_v* symbol");
  }
  return 0;
}

}  // namespace

Command addVersionCommand(CLI::App& app) {
  auto opts = std::make_shared<VersionOptions>();
  CLI::App* sub = app.add_subcommand(
      "version",
      "Print the version, the plugin ABIs the built library exports and which NCCL "
      "releases they serve");
  sub->add_flag("--json", opts->json, "Print one JSON object instead of text");
  sub->add_flag("--settings", opts->settings,
                "Also list the settings the library reads (name, default, description)");
  sub->add_option("--plugin", opts->plugin,
                  "Plugin library to inspect (default: <dir of nccl-pilot>/../lib/"
                  "libnccl-tuner-pilot.so)");
  return {sub, [opts] { return runVersion(*opts); }};
}

}  // namespace pilot::cli
