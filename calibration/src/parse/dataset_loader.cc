#include "pilot/calibration/dataset_loader.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "parse/support.h"
#include "pilot/calibration/sweep_plan.h"
#include "pilot/calibration/sweep_run.h"
#include "sweep/file_io.h"

namespace pilot::calibration {
namespace {

constexpr const char* kUnlabelled = "unlabelled: which configuration ran is unknown";

/// Binary files (a stray core dump, an archive) are skipped, not parsed.
bool looksBinary(const std::string& text) {
  return text.substr(0, 4096).find('\0') != std::string::npos;
}

/// The label a run is known by: its `# RUN config=` name when it has one (and forces
/// something), else the configuration's canonical label.
std::string labelFor(const Config& config, const RunEvidence& evidence) {
  if (config.isDefault()) return "default";
  return evidence.label.empty() ? canonicalLabel(config) : evidence.label;
}

/// A sweep directory: each planned run's log and JSON, configuration from the manifest.
void addSweep(Dataset& data, const std::string& dir, const LoadOptions& options) {
  auto plan = readPlan(dir);
  if (!plan.ok()) {
    data.problems.push_back(plan.error());
    return;
  }
  auto state = readState(dir);
  if (!state.ok()) data.problems.push_back(state.error());
  int missing = 0;
  for (const PlannedRun& planned : plan->runs) {
    const std::string logPath = dir + "/" + planned.log, jsonPath = dir + "/" + planned.json;
    std::vector<ParsedRun> fromText, fromJson;
    if (auto text = readFile(logPath); text.ok()) {
      fromText = parseNcclTestsText(*text, logPath).runs;
    }
    if (auto text = readFile(jsonPath); text.ok()) {
      fromJson = parseNcclTestsJson(*text, jsonPath).runs;
    }
    if (fromText.empty() && fromJson.empty()) {
      ++missing;
      continue;
    }
    // The JSON has full precision and the whole environment; the log has NCCL's lines.
    const bool useJson = !fromJson.empty() && !fromJson.front().run.samples.empty();
    std::vector<ParsedRun> runs = useJson ? fromJson : fromText;
    for (ParsedRun& p : runs) {
      Run& run = p.run;
      if (useJson && !fromText.empty()) {
        const Run& text = fromText.front().run;
        run.ncclChoices = text.ncclChoices;
        if (run.ncclVersion.empty()) run.ncclVersion = text.ncclVersion;
        // NCCL's own word on its network beats what the environment implies.
        if (!text.network.empty()) run.network = text.network;
        if (text.fabrics != 0) run.fabrics = text.fabrics;
        if (text.failed && !run.failed) {
          run.failed = true;
          run.problems.push_back("the log says: " + text.problems.back());
        }
      }
      if (!run.collective.empty() && run.collective != planned.collective) {
        run.failed = true;
        run.problems.push_back("planned as " + planned.collective + " but the output is " +
                               run.collective);
      }
      run.collective = planned.collective;
      if (run.ranks != 0 && run.ranks != planned.ranks) {
        run.problems.push_back("planned " + std::to_string(planned.ranks) + " ranks, ran " +
                               std::to_string(run.ranks));
      }
      if (run.nodes != 0 && run.nodes != planned.nodes) {
        run.problems.push_back("planned " + std::to_string(planned.nodes) + " nodes, ran on " +
                               std::to_string(run.nodes));
      }
      if (run.ranks == 0) run.ranks = planned.ranks;
      if (run.nodes == 0) run.nodes = planned.nodes;
      run.config = planned.config;
      run.configSource = "manifest";
      if (p.evidence.config && forcingKey(*p.evidence.config) != forcingKey(planned.config)) {
        // What the run reports beats what it was meant to be.
        run.problems.push_back("planned " + configSpec(planned.config) + " but the output " +
                               "shows " + configSpec(*p.evidence.config));
        run.config = *p.evidence.config;
        run.configSource = p.evidence.configSource;
      }
      run.setup = plan->options.setup;
      if (run.fabrics == 0) {
        // The environment the plan set for the run may have kept NCCL's IB transport out.
        std::string ibDisable, net;
        for (const auto& [name, value] : planned.env) {
          if (name == "NCCL_IB_DISABLE") ibDisable = value;
          if (name == "NCCL_NET") net = value;
        }
        run.fabrics = detail::fabricsOfEnvironment(ibDisable, net);
      }
      run.source = (useJson ? jsonPath : logPath) + " (" + planned.id + ")";
      if (state.ok()) {
        auto it = state->runs.find(planned.id);
        if (it != state->runs.end() && it->second.status == RunStatus::Failed) {
          run.failed = true;
          run.problems.push_back("sweep run recorded a failure: " + it->second.message);
        }
      }
      data.runs.push_back(std::move(run));
    }
  }
  (void)options;  // manifest runs need no labels
  if (missing > 0) {
    data.problems.push_back(dir + ": " + std::to_string(missing) + " of " +
                            std::to_string(plan->runs.size()) +
                            " planned runs have no output yet (`nccl-pilot sweep run` not done?)");
  }
}

}  // namespace

void settleConfig(ParsedRun& parsed, const std::vector<LabelRule>& rules,
                  const std::string& fallbackKey) {
  Run& run = parsed.run;
  const RunEvidence& ev = parsed.evidence;
  const std::string key = ev.label.empty() ? fallbackKey : ev.label;
  auto byRule = applyLabelRules(rules, key);
  if (ev.config) {
    run.config = *ev.config;
    run.config.label = labelFor(run.config, ev);
    run.configSource = ev.configSource;
    if (byRule && byRule->ok() && forcingKey(**byRule) != forcingKey(*ev.config)) {
      run.problems.push_back("--label says " + configSpec(**byRule) + " for '" + key +
                             "' but the output shows " + configSpec(*ev.config) +
                             "; the output wins");
    }
    return;
  }
  if (byRule) {
    if (!byRule->ok()) {
      run.failed = true;
      run.problems.push_back(byRule->error());
      return;
    }
    run.config = **byRule;
    run.config.label = labelFor(run.config, ev);
    run.configSource = "label";
    return;
  }
  run.config = Config();
  run.config.label = "";
  run.configSource = "";
  run.failed = true;
  run.problems.push_back(std::string(kUnlabelled) + " (label key '" + key + "'); pass --label '" +
                         key + "=SPEC' (SPEC: default or NCCL_ALGO=...,NCCL_PROTO=...)");
}

void addOutput(Dataset& data, const std::string& text, const std::string& name,
               const std::string& labelKey, const LoadOptions& options) {
  if (looksBinary(text)) {
    data.problems.push_back(name + ": binary file, skipped");
    return;
  }
  ParsedOutput parsed =
      looksLikeJson(text) ? parseNcclTestsJson(text, name) : parseNcclTestsText(text, name);
  for (std::string& p : parsed.problems) data.problems.push_back(std::move(p));
  if (parsed.runs.empty() && !text.empty()) {
    data.problems.push_back(name + ": no nccl-tests output found");
  }
  for (ParsedRun& p : parsed.runs) {
    settleConfig(p, options.labels, labelKey);
    data.runs.push_back(std::move(p.run));
  }
}

Dataset loadDataset(const std::vector<std::string>& inputs, const LoadOptions& options) {
  Dataset data;
  for (std::string input : inputs) {
    while (input.size() > 1 && input.back() == '/') input.pop_back();
    if (detail::baseName(input) == "manifest.json") {
      input = input.size() > 14 ? input.substr(0, input.size() - 14) : ".";
    }
    if (detail::isDirectory(input)) {
      if (detail::isRegularFile(input + "/manifest.json")) {
        addSweep(data, input, options);
        continue;
      }
      const std::vector<std::string> files = detail::listFiles(input);
      if (files.empty()) data.problems.push_back(input + ": no files");
      for (const std::string& file : files) {
        auto text = readFile(file);
        if (!text.ok()) {
          data.problems.push_back(text.error());
          continue;
        }
        // Inside a directory the key is the path below it: "auto_ll/2026-02-22.txt".
        addOutput(data, *text, file, file.substr(input.size() + 1), options);
      }
      continue;
    }
    auto text = readFile(input);
    if (!text.ok()) {
      data.problems.push_back(text.error());
      continue;
    }
    addOutput(data, *text, input, std::string(detail::baseName(input)), options);
  }
  finishDataset(data);
  return data;
}

void finishDataset(Dataset& data) {
  // One label per forcing: the first seen wins.
  std::map<std::string, std::string> labelOf;
  std::set<std::pair<std::string, std::string>> reported;
  for (Run& run : data.runs) {
    if (run.configSource.empty()) continue;
    const std::string key = forcingKey(run.config);
    auto [it, inserted] = labelOf.emplace(key, run.config.label);
    if (!inserted && it->second != run.config.label) {
      if (reported.emplace(run.config.label, it->second).second) {
        data.problems.push_back("'" + run.config.label + "' forces the same as '" + it->second +
                                "' (" + configSpec(run.config) + "); both are called '" +
                                it->second + "'");
      }
      run.config.label = it->second;
    }
  }
  // Different forcings under one label (two files using one name differently) would merge in
  // a report: the later ones take their canonical label.
  std::map<std::string, std::string> forcingOf;
  for (Run& run : data.runs) {
    if (run.configSource.empty()) continue;
    const std::string key = forcingKey(run.config);
    auto [it, inserted] = forcingOf.emplace(run.config.label, key);
    if (!inserted && it->second != key) {
      const std::string renamed = canonicalLabel(run.config);
      data.problems.push_back("label '" + run.config.label + "' names two configurations; " +
                              configSpec(run.config) + " is called '" + renamed + "'");
      run.config.label = renamed;
    }
  }
  std::vector<std::string> unlabelled;
  for (const Run& run : data.runs) {
    if (run.configSource.empty() && run.failed) unlabelled.push_back(run.source);
  }
  if (!unlabelled.empty()) {
    data.problems.push_back(std::to_string(unlabelled.size()) +
                            " run(s) excluded as unlabelled (first: " + unlabelled.front() +
                            "); say which configuration they ran with --label 'PATTERN=SPEC', "
                            "e.g. --label '*=default' for logs of NCCL's defaults");
  }
  assignRepeats(data);
}

void assignRepeats(Dataset& data) {
  std::map<std::string, int> next;
  for (Run& run : data.runs) {
    if (run.failed) {
      run.repeat = -1;
      continue;
    }
    const std::string key = run.collective + "|" + std::to_string(run.nodes) + "|" +
                            std::to_string(run.ranks) + "|" + run.setup + "|" +
                            forcingKey(run.config);
    run.repeat = next[key]++;
  }
}

std::string datasetJson(const Dataset& data, bool withSamples) {
  using nlohmann::json;
  json runs = json::array();
  for (const Run& run : data.runs) {
    uint64_t lo = 0, hi = 0;
    size_t rows = 0;
    for (const Sample& s : run.samples) {
      if (s.inPlace) continue;
      lo = rows == 0 ? s.size : std::min(lo, s.size);
      hi = std::max(hi, s.size);
      ++rows;
    }
    json j{{"source", run.source},
           {"collective", run.collective},
           {"nodes", run.nodes},
           {"ranks", run.ranks},
           {"setup", run.setup},
           {"config", {{"label", run.config.label}, {"spec", configSpec(run.config)}}},
           {"config_source", run.configSource},
           {"repeat", run.repeat},
           {"nccl_version", run.ncclVersion},
           {"network", run.network},
           {"fabric", detail::fabricsText(run.fabrics)},
           {"failed", run.failed},
           {"problems", run.problems},
           {"rows", rows},
           {"min_size", lo},
           {"max_size", hi},
           {"nccl_choices", run.ncclChoices.size()}};
    if (withSamples) {
      json samples = json::array();
      for (const Sample& s : run.samples) {
        samples.push_back({{"size", s.size},
                           {"count", s.count},
                           {"in_place", s.inPlace},
                           {"time_us", s.timeUs},
                           {"algbw", s.algbw},
                           {"busbw", s.busbw},
                           {"wrong", s.wrong}});
      }
      j["samples"] = samples;
      json choices = json::array();
      for (const NcclChoice& c : run.ncclChoices) {
        choices.push_back({{"bytes", c.bytes}, {"algo", c.algo}, {"proto", c.proto}});
      }
      j["nccl_choices"] = choices;
    }
    runs.push_back(std::move(j));
  }
  return json{{"runs", runs}, {"problems", data.problems}}.dump(2, ' ', false,
                                                                json::error_handler_t::replace) +
         "\n";
}

}  // namespace pilot::calibration
