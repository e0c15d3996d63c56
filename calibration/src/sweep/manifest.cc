// manifest.json: the plan's options and every run, written by `sweep plan`, read by
// `sweep run` and by the loader. Read back strictly: a run the manifest cannot describe fully
// is an error, not a guess.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "pilot/calibration/labels.h"
#include "pilot/calibration/sweep_plan.h"
#include "pilot/core/text.h"
#include "sweep/file_io.h"

namespace pilot::calibration {
namespace {

using nlohmann::json;

constexpr int kManifestVersion = 1;
constexpr const char* kFormat = "nccl-pilot sweep";

json envJson(const EnvList& env) {
  json list = json::array();
  for (const auto& [name, value] : env) list.push_back(name + "=" + value);
  return list;
}

json configJson(const Config& c) {
  return json{{"label", c.label}, {"spec", configSpec(c)}};
}

struct Reader {
  std::string error;

  const json& at(const json& object, const char* key) {
    static const json null;
    if (!object.is_object() || !object.contains(key)) {
      if (error.empty()) error = std::string("missing '") + key + "'";
      return null;
    }
    return object.at(key);
  }
  /// Whether `v` read as T holds no number an integer cannot take (1e300 as an int): converting
  /// one would be undefined (UBSan, under tests/fuzz/sweep_manifest_fuzz).
  template <typename T>
  static bool fits(const json& v) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return !v.is_number_float() || text::truncatesInto<T>(v.get<double>());
    } else if constexpr (std::is_same_v<T, std::vector<int>>) {
      return !v.is_array() || std::all_of(v.begin(), v.end(), fits<int>);
    }
    return true;
  }
  template <typename T>
  T get(const json& object, const char* key, T fallback = T()) {
    const json& v = at(object, key);
    if (!fits<T>(v)) {
      if (error.empty()) error = std::string("'") + key + "' is out of range";
      return fallback;
    }
    try {
      return v.is_null() ? fallback : v.get<T>();
    } catch (const json::exception&) {
      if (error.empty()) error = std::string("'") + key + "' has the wrong type";
      return fallback;
    }
  }
  template <typename T>
  T optional(const json& object, const char* key, T fallback) {
    if (!object.is_object() || !object.contains(key)) return fallback;
    return get<T>(object, key, fallback);
  }
  EnvList env(const json& object, const char* key) {
    EnvList out;
    for (const std::string& kv : get<std::vector<std::string>>(object, key)) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        if (error.empty())
          error = std::string("'") + key + "' entry '" + kv + "' is not NAME=VALUE";
        continue;
      }
      out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    return out;
  }
  Config config(const json& object) {
    const json& c = at(object, "config");
    auto parsed = parseConfigSpec(get<std::string>(c, "spec"));
    if (!parsed.ok()) {
      if (error.empty()) error = "config: " + parsed.error();
      return Config();
    }
    parsed->label = get<std::string>(c, "label");
    return *parsed;
  }
};

}  // namespace

std::string formatManifest(const SweepPlan& plan) {
  const PlanOptions& o = plan.options;
  json configs = json::array();
  for (const Config& c : o.configs) configs.push_back(configJson(c));
  json runs = json::array();
  for (const PlannedRun& r : plan.runs) {
    runs.push_back(json{{"id", r.id},
                        {"collective", r.collective},
                        {"nodes", r.nodes},
                        {"ranks", r.ranks},
                        {"config", configJson(r.config)},
                        {"repeat", r.repeat},
                        {"program", r.program},
                        {"launcher_argv", r.launcherArgv},
                        {"binary", r.binary},
                        {"test_argv", r.testArgv},
                        {"env", envJson(r.env)},
                        {"log", r.log},
                        {"json", r.json},
                        {"command", shellCommand(r, o.jsonOutput)}});
  }
  json doc{{"format", kFormat},
           {"version", kManifestVersion},
           {"launcher", launcherName(o.launcher)},
           {"tests_dir", o.testsDir},
           {"collectives", o.collectives},
           {"configs", configs},
           {"repeats", o.repeats},
           {"default_repeats", o.defaultRepeats},
           {"nodes", o.nodes},
           {"gpus_per_node", o.gpusPerNode},
           {"min_bytes", o.minBytes},
           {"max_bytes", o.maxBytes},
           {"step_factor", o.stepFactor},
           {"iters", o.iters},
           {"warmup", o.warmup},
           {"check", o.check},
           {"hosts", o.hosts},
           {"launcher_args", o.launcherArgs},
           {"test_args", o.testArgs},
           {"env", envJson(o.env)},
           {"json_output", o.jsonOutput},
           {"setup", o.setup},
           {"notes", plan.notes},
           {"runs", runs}};
  return doc.dump(2) + "\n";
}

Expected<SweepPlan> parseManifest(std::string_view text) {
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Error{"manifest is not valid JSON"};
  Reader r;
  if (r.get<std::string>(doc, "format") != kFormat)
    return Error{"not an nccl-pilot sweep manifest"};
  const int version = r.get<int>(doc, "version");
  if (version > kManifestVersion) {
    return Error{"manifest version " + std::to_string(version) + " is newer than this nccl-pilot"};
  }
  SweepPlan plan;
  PlanOptions& o = plan.options;
  auto launcher = parseLauncher(r.get<std::string>(doc, "launcher"));
  if (!launcher) return Error{"manifest: unknown launcher"};
  o.launcher = *launcher;
  o.testsDir = r.get<std::string>(doc, "tests_dir");
  o.collectives = r.get<std::vector<std::string>>(doc, "collectives");
  o.repeats = r.get<int>(doc, "repeats");
  // Manifests written before the default had its own count ran it as often as the rest.
  o.defaultRepeats = r.optional<int>(doc, "default_repeats", o.repeats);
  o.nodes = r.get<std::vector<int>>(doc, "nodes");
  o.gpusPerNode = r.get<int>(doc, "gpus_per_node");
  o.minBytes = r.get<uint64_t>(doc, "min_bytes");
  o.maxBytes = r.get<uint64_t>(doc, "max_bytes");
  o.stepFactor = r.get<int>(doc, "step_factor");
  o.iters = r.get<int>(doc, "iters");
  o.warmup = r.get<int>(doc, "warmup");
  o.check = r.get<int>(doc, "check");
  o.hosts = r.optional<std::vector<std::string>>(doc, "hosts", {});
  o.launcherArgs = r.optional<std::vector<std::string>>(doc, "launcher_args", {});
  o.testArgs = r.optional<std::vector<std::string>>(doc, "test_args", {});
  o.env = r.env(doc, "env");
  o.jsonOutput = r.get<bool>(doc, "json_output");
  o.setup = r.optional<std::string>(doc, "setup", "");
  plan.notes = r.optional<std::vector<std::string>>(doc, "notes", {});
  for (const json& c : r.at(doc, "configs")) {
    json wrapper{{"config", c}};
    o.configs.push_back(r.config(wrapper));
  }
  for (const json& j : r.at(doc, "runs")) {
    PlannedRun run;
    run.id = r.get<std::string>(j, "id");
    run.collective = r.get<std::string>(j, "collective");
    run.nodes = r.get<int>(j, "nodes");
    run.ranks = r.get<int>(j, "ranks");
    run.config = r.config(j);
    run.repeat = r.get<int>(j, "repeat");
    run.program = r.get<std::string>(j, "program");
    run.launcherArgv = r.get<std::vector<std::string>>(j, "launcher_argv");
    run.binary = r.get<std::string>(j, "binary");
    run.testArgv = r.get<std::vector<std::string>>(j, "test_argv");
    run.env = r.env(j, "env");
    run.log = r.get<std::string>(j, "log");
    run.json = r.get<std::string>(j, "json");
    if (!r.error.empty()) return Error{"manifest run " + run.id + ": " + r.error};
    if (run.id.empty() || run.id.find('/') != std::string::npos || run.log.empty() ||
        run.log.front() == '/' || run.log.find("..") != std::string::npos) {
      return Error{"manifest run '" + run.id + "': id and log must be plain relative names"};
    }
    plan.runs.push_back(std::move(run));
  }
  if (!r.error.empty()) return Error{"manifest: " + r.error};
  return plan;
}

Status writePlan(const SweepPlan& plan, const std::string& dir, bool overwrite) {
  namespace fs = std::filesystem;
  const std::string manifest = dir + "/manifest.json";
  if (!overwrite && detail::isRegularFile(manifest)) {
    return Error{dir +
                 " already holds a sweep plan; pass --force to replace it (its runs/ and "
                 "state.json are kept)"};
  }
  std::error_code ec;
  fs::create_directories(dir + "/runs", ec);
  if (ec) return Error{"cannot create " + dir + "/runs: " + ec.message()};
  if (Status s = detail::writeFileAtomic(manifest, formatManifest(plan)); !s.ok()) return s;
  const std::string commands = dir + "/commands.sh";
  if (Status s = detail::writeFileAtomic(commands, formatCommands(plan)); !s.ok()) return s;
  chmod(commands.c_str(), 0755);
  return Status::success();
}

Expected<SweepPlan> readPlan(const std::string& dir) {
  auto text = readFile(dir + "/manifest.json");
  if (!text.ok()) return Error{text.error() + " (is " + dir + " a sweep plan directory?)"};
  auto plan = parseManifest(*text);
  if (!plan.ok()) return Error{dir + "/manifest.json: " + plan.error()};
  return plan;
}

}  // namespace pilot::calibration
