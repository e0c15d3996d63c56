// Laying out a sweep and spelling its commands.
#include "pilot/calibration/sweep_plan.h"

#include <algorithm>
#include <set>

#include "parse/support.h"
#include "pilot/calibration/labels.h"
#include "pilot/core/text.h"
#include "pilot/tuner/names.h"

namespace pilot::calibration {
namespace {

/// File-name-safe: letters, digits and ._+- stay; anything else becomes '_'.
std::string sanitize(std::string_view label) {
  std::string out;
  for (char c : label) {
    const bool safe =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' || c == '-';
    out += safe ? c : '_';
  }
  return out;
}

/// Whether NCCL has the one algorithm a configuration forces for this collective. Lists,
/// exclusions and per-collective forms are let through: NCCL sorts those out itself.
bool algorithmAvailable(const Config& config, const std::string& collective, std::string* why) {
  auto algo = tuner::parseAlgorithm(config.algo);
  if (config.algo.empty() || !algo) return true;
  using tuner::Algorithm;
  std::set<Algorithm> allowed;
  if (collective == "allreduce") return true;
  if (collective == "allgather" || collective == "reducescatter") {
    allowed = {Algorithm::Ring, Algorithm::Nvls, Algorithm::CollNetDirect, Algorithm::Pat};
  } else {
    allowed = {Algorithm::Ring};
  }
  if (allowed.count(*algo)) return true;
  *why = std::string("NCCL has no ") + tuner::algorithmDisplayName(*algo) + " " + collective;
  return false;
}

std::string decimal(uint64_t v) {
  return std::to_string(v);
}

}  // namespace

const char* launcherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::Local:
      return "local";
    case Launcher::Srun:
      return "srun";
    case Launcher::Mpirun:
      return "mpirun";
  }
  return "?";
}

std::optional<Launcher> parseLauncher(std::string_view name) {
  for (Launcher l : {Launcher::Local, Launcher::Srun, Launcher::Mpirun}) {
    if (text::equalsIgnoreCase(name, launcherName(l))) return l;
  }
  return std::nullopt;
}

std::vector<Config> defaultSweepConfigs() {
  std::vector<Config> configs;
  for (const char* spec : {"default", "NCCL_ALGO=Ring", "NCCL_ALGO=Tree", "NCCL_PROTO=LL",
                           "NCCL_PROTO=LL128", "NCCL_PROTO=Simple"}) {
    configs.push_back(*parseConfigSpec(spec));
  }
  return configs;
}

std::string programFor(std::string_view collective) {
  auto c = tuner::parseCollective(collective);
  if (!c) return std::string(collective) + "_perf";
  switch (*c) {
    case tuner::Collective::AllReduce:
      return "all_reduce_perf";
    case tuner::Collective::AllGather:
      return "all_gather_perf";
    case tuner::Collective::ReduceScatter:
      return "reduce_scatter_perf";
    case tuner::Collective::Broadcast:
      return "broadcast_perf";
    case tuner::Collective::Reduce:
      return "reduce_perf";
  }
  return "";
}

std::vector<std::string> budgetNotes(const PlanOptions& o) {
  std::vector<std::string> notes;
  if (o.defaultRepeats == 1) {
    notes.push_back(
        "the default runs once: fit cannot measure the noise and estimates it from the data "
        "instead, so it demands more (a bar of at least twice the margin, 3 adjacent winning "
        "sizes) and smaller real gains stay unclaimed; --default-repeats " +
        std::to_string(kBudgetDefaultRepeats) + " measures it");
  } else if (o.defaultRepeats < kBudgetDefaultRepeats) {
    notes.push_back("the default runs " + std::to_string(o.defaultRepeats) +
                    " times: its noise is measured, but noise alone then writes a rule in "
                    "about 4% of sweeps against under 0.5% with 3 (docs/calibration.md); "
                    "--default-repeats " +
                    std::to_string(kBudgetDefaultRepeats));
  }
  if (o.repeats < kBudgetForcedRepeats) {
    notes.push_back(
        "forced configurations run once: a gain is checked in that one run only, and their own "
        "spread never counts as noise; --repeats " +
        std::to_string(kBudgetForcedRepeats) + " checks it in every run");
  }
  return notes;
}

Expected<SweepPlan> makePlan(const PlanOptions& input) {
  SweepPlan plan;
  plan.options = input;
  PlanOptions& o = plan.options;
  if (o.configs.empty()) o.configs = defaultSweepConfigs();
  if (o.gpusPerNode < 1) return Error{"--gpus-per-node is required (ranks per node, at least 1)"};
  if (o.repeats < 1) return Error{"--repeats must be at least 1"};
  if (o.defaultRepeats < 1) return Error{"--default-repeats must be at least 1"};
  if (o.nodes.empty()) return Error{"no node count given"};
  if (o.collectives.empty()) return Error{"no collective given"};
  if (o.minBytes > o.maxBytes) return Error{"--min is above --max"};
  if (o.stepFactor < 2) return Error{"--step-factor must be at least 2"};
  if (o.iters < 1 || o.warmup < 0)
    return Error{"--iters must be at least 1 and --warmup at least 0"};
  for (std::string& c : o.collectives) {
    auto coll = tuner::parseCollective(c);
    if (!coll) {
      return Error{"'" + c + "' is not a collective (expected " + tuner::collectiveNameList() +
                   ")"};
    }
    c = tuner::collectiveName(*coll);
  }
  for (int n : o.nodes) {
    if (n < 1) return Error{"node counts must be at least 1"};
    if (n * o.gpusPerNode < 2) {
      return Error{"one rank in all: a communicator of one rank has nothing to tune"};
    }
    if (o.launcher == Launcher::Local && n != 1) {
      return Error{"--launcher local runs on this node only; use --nodes 1 (or srun/mpirun)"};
    }
    if (o.launcher == Launcher::Mpirun && !o.hosts.empty() &&
        static_cast<size_t>(n) > o.hosts.size()) {
      return Error{std::to_string(n) + " nodes but only " + std::to_string(o.hosts.size()) +
                   " --hosts"};
    }
  }
  for (const auto& [name, value] : o.env) {
    if (std::find(std::begin(kForcingVariables), std::end(kForcingVariables), name) !=
        std::end(kForcingVariables)) {
      return Error{"--env " + name + ": forcing variables belong in --configs/--config"};
    }
  }
  if (!o.testsDir.empty()) {
    while (o.testsDir.size() > 1 && o.testsDir.back() == '/') o.testsDir.pop_back();
  }

  for (int repeat = 0; repeat < std::max(o.repeats, o.defaultRepeats); ++repeat) {
    for (int nodes : o.nodes) {
      for (const std::string& collective : o.collectives) {
        for (const Config& config : o.configs) {
          if (repeat >= (config.isDefault() ? o.defaultRepeats : o.repeats)) continue;
          std::string why;
          if (!algorithmAvailable(config, collective, &why)) {
            if (repeat == 0 && nodes == o.nodes.front()) {
              plan.notes.push_back("left out " + collective + " x " + config.label + ": " + why);
            }
            continue;
          }
          PlannedRun run;
          const size_t index = plan.runs.size() + 1;
          std::string number = std::to_string(index);
          if (number.size() < 4) number.insert(0, 4 - number.size(), '0');
          run.id = number + "-" + collective + "-n" + std::to_string(nodes) + "-" +
                   sanitize(config.label) + "-r" + std::to_string(repeat);
          run.collective = collective;
          run.nodes = nodes;
          run.ranks = nodes * o.gpusPerNode;
          run.config = config;
          run.repeat = repeat;
          run.program = programFor(collective);
          run.binary = o.testsDir.empty() ? run.program : o.testsDir + "/" + run.program;
          run.env = o.env;
          for (auto& var : configEnv(config)) run.env.push_back(var);
          const std::string g = std::to_string(o.gpusPerNode);
          switch (o.launcher) {
            case Launcher::Local:
              break;
            case Launcher::Srun:
              run.launcherArgv = {"srun", "--nodes=" + std::to_string(nodes),
                                  "--ntasks-per-node=" + g};
              break;
            case Launcher::Mpirun: {
              run.launcherArgv = {"mpirun", "-np", std::to_string(run.ranks)};
              if (o.hosts.empty()) {
                run.launcherArgv.insert(run.launcherArgv.end(), {"-npernode", g});
              } else {
                std::string hosts;
                for (int h = 0; h < nodes; ++h) {
                  hosts += (h ? "," : "") + o.hosts[static_cast<size_t>(h)] + ":" + g;
                }
                run.launcherArgv.insert(run.launcherArgv.end(), {"-H", hosts});
              }
              // mpirun starts remote ranks with their own environment: pass ours explicitly.
              for (const auto& [name, value] : run.env) {
                run.launcherArgv.insert(run.launcherArgv.end(), {"-x", name + "=" + value});
              }
              break;
            }
          }
          for (const std::string& a : o.launcherArgs) run.launcherArgv.push_back(a);
          const int gpusPerProcess = o.launcher == Launcher::Local ? o.gpusPerNode : 1;
          run.testArgv = {"-b", decimal(o.minBytes),          "-e", decimal(o.maxBytes),
                          "-f", std::to_string(o.stepFactor), "-g", std::to_string(gpusPerProcess),
                          "-c", std::to_string(o.check),      "-n", std::to_string(o.iters),
                          "-w", std::to_string(o.warmup)};
          for (const std::string& a : o.testArgs) run.testArgv.push_back(a);
          run.log = "runs/" + run.id + ".log";
          run.json = "runs/" + run.id + ".json";
          plan.runs.push_back(std::move(run));
        }
      }
    }
  }
  if (plan.runs.empty()) return Error{"the plan has no runs"};
  return plan;
}

std::vector<std::string> runArgv(const PlannedRun& run, bool withJson, const std::string& binary) {
  std::vector<std::string> argv = run.launcherArgv;
  argv.push_back(binary.empty() ? run.binary : binary);
  argv.insert(argv.end(), run.testArgv.begin(), run.testArgv.end());
  if (withJson) argv.insert(argv.end(), {"-J", run.json});
  return argv;
}

std::string shellQuote(std::string_view word) {
  const bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_./=:,+-@%^").find(c) != std::string_view::npos;
  });
  if (safe) return std::string(word);
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string shellCommand(const PlannedRun& run, bool withJson) {
  std::string line = "NCCL_PILOT_SWEEP_RUN=" + shellQuote(run.id);
  for (const auto& [name, value] : run.env) line += " " + name + "=" + shellQuote(value);
  for (const std::string& word : runArgv(run, withJson)) line += " " + shellQuote(word);
  return line + " > " + shellQuote(run.log) + " 2>&1";
}

std::string formatCommands(const SweepPlan& plan) {
  const PlanOptions& o = plan.options;
  std::string s;
  s += "#!/bin/sh\n";
  s += "# nccl-pilot sweep plan: " + std::to_string(plan.runs.size()) + " runs, launcher " +
       launcherName(o.launcher) + ".\n";
  s += "# `nccl-pilot sweep run DIR` executes these with one log per run, resumes after an\n"
       "# interruption and records failures in state.json; this script is the same commands\n"
       "# for reading, or for running by hand.\n";
  s += "set -u\ncd \"$(dirname \"$0\")\" || exit 1\nmkdir -p runs\n";
  s += "# A forcing variable inherited from the shell would turn the default runs into forced "
       "ones.\n";
  s += "unset NCCL_ALGO NCCL_PROTO NCCL_MIN_NCHANNELS NCCL_MAX_NCHANNELS\n";
  for (const PlannedRun& run : plan.runs) {
    s += "\n# " + run.id + "\n";
    // nccl-tests writes PATH.N when PATH exists: remove an old result first.
    if (o.jsonOutput) s += "rm -f " + shellQuote(run.json) + "\n";
    s += shellCommand(run, o.jsonOutput) + "\n";
  }
  return s;
}

}  // namespace pilot::calibration
