// `nccl-pilot sweep`: calibration measurements with nccl-tests.
//   sweep plan  lays out collectives x forcing configurations x node counts x repeats and
//               writes PLAN_DIR/manifest.json and PLAN_DIR/commands.sh;
//   sweep run   executes a plan (resumable, one log per run, failures recorded);
//   sweep show  parses outputs (a sweep directory, logs, -J files) and shows what each run
//               measured and why a run is left out, before `fit` uses them.
// docs/sweep.md has the syntax of configurations and labels and the file formats.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "pilot/calibration/dataset_loader.h"
#include "pilot/calibration/labels.h"
#include "pilot/calibration/sweep_plan.h"
#include "pilot/calibration/sweep_run.h"
#include "pilot/core/text.h"
#include "pilot/tuner/names.h"

namespace pilot::cli {
namespace {

using namespace pilot::calibration;

constexpr int kExitInterrupted = 130;  // what a shell reports for a Ctrl-C'd command

struct PlanArgs {
  std::string output;
  std::vector<std::string> collectives = {"allreduce", "allgather", "reducescatter"};
  std::string configs;
  std::vector<std::string> config;
  int repeats = kBudgetForcedRepeats;
  int defaultRepeats = 0;  // 0 = max(kBudgetDefaultRepeats, repeats)
  std::vector<int> nodes = {1};
  int gpusPerNode = 0;
  std::string min = "8", max = "16G";
  int stepFactor = 2, iters = 20, warmup = 5, check = 1;
  std::string launcher = "local";
  std::string testsDir;
  std::vector<std::string> hosts, launcherArgs, testArgs, env;
  std::string setup;
  std::string jsonOutput = "auto";
  bool force = false;
};

struct RunArgs {
  std::string dir;
  int jobs = 1;
  bool dryRun = false, retryFailed = false, noProgress = false;
  double timeout = 0;
  std::string testsDir;
};

struct ShowArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> labels;
  bool json = false, samples = false;
};

Expected<PlanOptions> planOptions(const PlanArgs& a) {
  PlanOptions o;
  o.collectives = a.collectives;
  if (!a.configs.empty()) {
    auto list = parseConfigList(a.configs);
    if (!list.ok()) return Error{"--configs: " + list.error()};
    o.configs = *list;
  }
  for (const std::string& c : a.config) {
    auto config = parseNamedConfig(c);
    if (!config.ok()) return Error{"--config '" + c + "': " + config.error()};
    o.configs.push_back(*config);
  }
  o.repeats = a.repeats;
  o.defaultRepeats =
      a.defaultRepeats > 0 ? a.defaultRepeats : std::max(kBudgetDefaultRepeats, a.repeats);
  o.nodes = a.nodes;
  o.gpusPerNode = a.gpusPerNode;
  auto lo = text::parseBytes(a.min), hi = text::parseBytes(a.max);
  if (!lo) return Error{"--min '" + a.min + "' is not a byte count"};
  if (!hi) return Error{"--max '" + a.max + "' is not a byte count"};
  o.minBytes = *lo;
  o.maxBytes = *hi;
  o.stepFactor = a.stepFactor;
  o.iters = a.iters;
  o.warmup = a.warmup;
  o.check = a.check;
  auto launcher = parseLauncher(a.launcher);
  if (!launcher) return Error{"--launcher '" + a.launcher + "': expected local, srun or mpirun"};
  o.launcher = *launcher;
  if (!a.testsDir.empty()) {
    std::error_code ec;
    o.testsDir = std::filesystem::absolute(a.testsDir, ec).lexically_normal().string();
    if (ec) o.testsDir = a.testsDir;
  }
  o.hosts = a.hosts;
  o.launcherArgs = a.launcherArgs;
  o.testArgs = a.testArgs;
  for (const std::string& kv : a.env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return Error{"--env '" + kv + "': expected NAME=VALUE"};
    o.env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  o.setup = a.setup;
  return o;
}

/// --json-output auto: ask the first binary whether it takes -J.
bool decideJson(const PlanArgs& a, const PlanOptions& o) {
  if (a.jsonOutput == "yes") return true;
  if (a.jsonOutput == "no") return false;
  const std::string program = programFor(o.collectives.front());
  const std::string binary = findTestBinary(o.testsDir, program);
  if (binary.empty()) {
    std::cerr << "note: " << program << " not found "
              << (o.testsDir.empty() ? std::string("on PATH") : "in " + o.testsDir)
              << "; the commands leave out -J (sweep run checks again where it runs)\n";
    return false;
  }
  auto json = probeJsonSupport(binary);
  if (!json) {
    std::cerr << "note: '" << binary << " --help' did not run; the commands leave out -J\n";
    return false;
  }
  return *json;
}

int runPlan(const PlanArgs& a) {
  auto options = planOptions(a);
  if (!options.ok()) return reportError(options.error(), kExitUsage);
  auto plan = makePlan(*options);
  if (!plan.ok()) return reportError(plan.error(), kExitUsage);
  plan->options.jsonOutput = decideJson(a, plan->options);
  if (Status s = writePlan(*plan, a.output, a.force); !s.ok()) return reportError(s.error());
  for (const std::string& note : plan->notes) std::cerr << "note: " << note << "\n";
  const PlanOptions& o = plan->options;
  std::cout << "planned " << plan->runs.size() << " runs (" << o.collectives.size()
            << " collective(s) x " << o.configs.size() << " configuration(s) x " << o.nodes.size()
            << " node count(s); the default x" << o.defaultRepeats << ", forced x" << o.repeats;
  if (!plan->notes.empty()) std::cout << ", less " << plan->notes.size() << " left out";
  std::cout << "), " << launcherName(o.launcher) << ", " << text::formatBytes(o.minBytes) << ".."
            << text::formatBytes(o.maxBytes) << (o.jsonOutput ? ", with -J" : "") << "\n"
            << "  " << a.output << "/manifest.json\n"
            << "  " << a.output << "/commands.sh\n"
            << "run it with: nccl-pilot sweep run " << a.output << "\n";
  // What a smaller budget gives up, so it is chosen knowingly.
  for (const std::string& note : budgetNotes(o)) std::cout << "evidence: " << note << "\n";
  return 0;
}

int runRun(const RunArgs& a) {
  RunOptions o;
  o.jobs = a.jobs;
  o.dryRun = a.dryRun;
  o.retryFailed = a.retryFailed;
  o.timeoutSeconds = a.timeout;
  o.testsDir = a.testsDir;
  o.progressBar = !a.noProgress && isatty(STDERR_FILENO);
  if (a.dryRun) o.out = &std::cout;  // the commands are the output
  auto summary = runSweep(a.dir, o);
  if (!summary.ok()) return reportError(summary.error());
  if (a.dryRun) return 0;
  const RunSummary& s = *summary;
  std::cerr << s.planned << " planned: " << s.done << " done now, " << s.skipped << " done before, "
            << s.failed << " failed";
  if (s.interrupted) std::cerr << ", " << s.interrupted << " interrupted";
  const int left = s.planned - s.done - s.skipped - s.failed;
  if (left > 0) std::cerr << ", " << left << " still to run";
  std::cerr << " (" << a.dir << "/state.json)\n";
  if (s.stopped) {
    std::cerr << "stopped; `nccl-pilot sweep run " << a.dir << "` continues where it left off\n";
    return kExitInterrupted;
  }
  return s.failed > 0 ? kExitFailure : 0;
}

void printRuns(std::ostream& out, const Dataset& data) {
  out << std::left << std::setw(44) << "source" << std::setw(14) << "collective" << std::right
      << std::setw(6) << "nodes" << std::setw(6) << "ranks"
      << "  " << std::left << std::setw(16) << "config" << std::setw(9) << "from" << std::right
      << std::setw(4) << "rep" << std::setw(6) << "sizes"
      << "  status\n";
  for (const Run& run : data.runs) {
    size_t sizes = 0;
    for (const Sample& s : run.samples) sizes += s.inPlace ? 0 : 1;
    std::string source = run.source;
    if (source.size() > 43) source = "..." + source.substr(source.size() - 40);
    out << std::left << std::setw(44) << source << std::setw(14)
        << (run.collective.empty() ? "?" : run.collective) << std::right << std::setw(6)
        << run.nodes << std::setw(6) << run.ranks << "  " << std::left << std::setw(16)
        << (run.config.label.empty() ? "?" : run.config.label) << std::setw(9)
        << (run.configSource.empty() ? "-" : run.configSource) << std::right << std::setw(4)
        << (run.repeat < 0 ? std::string("-") : std::to_string(run.repeat)) << std::setw(6) << sizes
        << "  " << (run.failed ? "EXCLUDED" : "ok") << "\n";
    for (const std::string& p : run.problems) out << "    " << p << "\n";
  }
}

int runShow(const ShowArgs& a) {
  LoadOptions options;
  for (const std::string& l : a.labels) {
    auto rule = parseLabelRule(l);
    if (!rule.ok()) return reportError(rule.error(), kExitUsage);
    options.labels.push_back(*rule);
  }
  const Dataset data = loadDataset(a.inputs, options);
  if (a.json) {
    std::cout << datasetJson(data, a.samples);
  } else {
    printRuns(std::cout, data);
    int usable = 0;
    for (const Run& run : data.runs) usable += run.failed ? 0 : 1;
    std::cout << data.runs.size() << " run(s), " << usable << " usable, "
              << data.runs.size() - static_cast<size_t>(usable) << " excluded\n";
  }
  for (const std::string& p : data.problems) std::cerr << "note: " << p << "\n";
  for (const Run& run : data.runs) {
    if (!run.failed) return 0;
  }
  return reportError("no usable run in the input");
}

const char* kConfigHelp =
    "Configurations, comma-separated: default, or NCCL variables joined by '+' "
    "(NCCL_ALGO=Tree+NCCL_PROTO=Simple), optionally named (tree_simple:NCCL_ALGO=...). A comma "
    "not followed by a configuration continues the value: NCCL_ALGO=Ring,Tree is one. Default: "
    "default, NCCL_ALGO=Ring, NCCL_ALGO=Tree, NCCL_PROTO=LL, NCCL_PROTO=LL128, NCCL_PROTO=Simple";

}  // namespace

Command addSweepCommand(CLI::App& app) {
  CLI::App* sweep = app.add_subcommand(
      "sweep", "Plan and run nccl-tests calibration sweeps; show what their outputs measured");
  sweep->require_subcommand(1);

  auto plan = std::make_shared<PlanArgs>();
  CLI::App* p = sweep->add_subcommand(
      "plan", "Write a sweep plan: PLAN_DIR/manifest.json and PLAN_DIR/commands.sh");
  p->add_option("-o,--output", plan->output, "Plan directory (created)")->required();
  p->add_option("--collectives", plan->collectives,
                std::string("Collectives, comma-separated: ") + tuner::collectiveNameList())
      ->delimiter(',')
      ->capture_default_str();
  p->add_option("--configs", plan->configs, kConfigHelp);
  p->add_option("--config", plan->config,
                "One more configuration (repeatable); here ',' and '+' both join variables: "
                "ring_ll:NCCL_ALGO=Ring,NCCL_PROTO=LL");
  p->add_option("--repeats", plan->repeats,
                "Runs of each forced configuration (twice lets fit check a gain in every run)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  p->add_option("--default-repeats", plan->defaultRepeats,
                "Runs of NCCL's default, which measure the noise every gain must beat "
                "(default: the larger of 3 and --repeats)")
      ->check(CLI::Range(1, 1000));
  p->add_option("--nodes", plan->nodes, "Node counts, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  p->add_option("--gpus-per-node", plan->gpusPerNode, "Ranks (GPUs) per node")
      ->required()
      ->check(CLI::Range(1, 1024));
  p->add_option("--min", plan->min, "Smallest size (bytes; 64K, 16M, 1G accepted)")
      ->capture_default_str();
  p->add_option("--max", plan->max, "Largest size")->capture_default_str();
  p->add_option("--step-factor", plan->stepFactor, "nccl-tests -f")->capture_default_str();
  p->add_option("--iters", plan->iters, "nccl-tests -n")->capture_default_str();
  p->add_option("--warmup", plan->warmup, "nccl-tests -w")->capture_default_str();
  p->add_option("--check", plan->check,
                "nccl-tests -c (0 skips validation: wrong results go unseen)")
      ->capture_default_str();
  p->add_option("--launcher", plan->launcher, "local (one node, one process -g N), srun or mpirun")
      ->capture_default_str();
  p->add_option("--tests-dir", plan->testsDir,
                "Directory of the nccl-tests binaries (default: PATH where the runs start)");
  p->add_option("--hosts", plan->hosts,
                "mpirun: hosts for -H, comma-separated (default: -npernode)")
      ->delimiter(',');
  p->add_option("--launcher-arg", plan->launcherArgs,
                "Extra srun/mpirun argument (repeatable; --launcher-arg=--mpi=pmix)");
  p->add_option("--test-arg", plan->testArgs, "Extra nccl-tests argument (repeatable)");
  p->add_option("--env", plan->env,
                "NAME=VALUE set for every run (repeatable), e.g. NCCL_DEBUG=INFO "
                "--env NCCL_DEBUG_SUBSYS=ENV,TUNING to log NCCL's choices");
  p->add_option("--setup", plan->setup, "Free text recorded with every run (network settings)");
  p->add_option("--json-output", plan->jsonOutput,
                "Pass -J: auto (if the binary's --help offers it), yes, no")
      ->check(CLI::IsMember({"auto", "yes", "no"}))
      ->capture_default_str();
  p->add_flag("--force", plan->force, "Replace an existing plan (its outputs and state stay)");

  auto run = std::make_shared<RunArgs>();
  CLI::App* r = sweep->add_subcommand(
      "run", "Execute a plan: resumable, one log per run in PLAN_DIR/runs, state in state.json");
  r->add_option("dir", run->dir, "Plan directory")->required();
  r->add_option("--jobs", run->jobs, "Runs at once; keep 1 unless the runs use disjoint GPUs")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  r->add_flag("--dry-run", run->dryRun, "Print the commands that would run; run nothing");
  r->add_flag("--retry-failed", run->retryFailed, "Run failed runs again");
  r->add_option("--timeout", run->timeout, "Seconds before a run is stopped and failed (0: none)")
      ->check(CLI::NonNegativeNumber);
  r->add_option("--tests-dir", run->testsDir,
                "Directory of the nccl-tests binaries (overrides the plan)");
  r->add_flag("--no-progress", run->noProgress, "Plain lines even on a terminal");

  auto show = std::make_shared<ShowArgs>();
  CLI::App* s = sweep->add_subcommand(
      "show", "Parse nccl-tests outputs and list each run: shape, configuration, repeat, problems");
  s->add_option("inputs", show->inputs,
                "Sweep plan directories, nccl-tests logs, -J files, directories of them")
      ->required();
  s->add_option("--label", show->labels,
                "PATTERN=SPEC: runs whose '# RUN config=' name (else file name) matches PATTERN "
                "('*' wildcards) ran SPEC (default, or NCCL_ALGO=Ring,NCCL_PROTO=LL; '*' in SPEC "
                "is what the pattern's first '*' matched). Repeatable; the first match wins");
  s->add_flag("--json", show->json, "Print the runs as JSON");
  s->add_flag("--samples", show->samples, "With --json: include every row");

  return {sweep, [=] {
            if (p->parsed()) return runPlan(*plan);
            if (r->parsed()) return runRun(*run);
            return runShow(*show);
          }};
}

}  // namespace pilot::cli
