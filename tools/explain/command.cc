// `nccl-pilot explain`: what the built tuner decides for one collective on one communicator
// shape across a size range, on a given fabric and NCCL release. The table is parsed here only
// for its diagnostics and its exact size boundaries; every decision comes from the real plugin
// library, driven through the ABI version the named NCCL release would load (the plugin reads
// the fabric from NCCL_PILOT_TUNER_FABRIC and the version from this process's ncclGetVersion).
// `--digest` prints the table's digest for NCCL_PILOT_TUNER_TABLE_SHA256 instead.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/plugin_loader.h"
#include "explain/acting_nccl.h"
#include "explain/model.h"
#include "explain/report.h"
#include "explain/tuner_driver.h"
#include "explain/tuner_log.h"
#include "pilot/core/config.h"
#include "pilot/core/text.h"
#include "pilot/topology/fabric.h"
#include "pilot/tuner/compiled_table.h"
#include "pilot/tuner/exploration.h"

namespace pilot::cli {
namespace {

struct ExplainOptions {
  std::string table;
  std::string coll;
  uint64_t nodes = 0;
  uint64_t ranks = 0;
  std::string min = "8";
  std::string max = "16G";
  std::string nccl;
  std::string fabric;
  bool digest = false;
  std::string explore;  ///< with --digest: the schedule digest for this NCCL_PILOT_TUNER_EXPLORE
  std::vector<std::string> enable;
  std::vector<std::string> disable;
  std::string plugin;
  int regBuff = 0;
  int pipeOps = 1;
  bool json = false;
  bool verbose = false;
};

/// --nccl, else the table's "#@ nccl:" provenance line, else the newest release we serve.
Expected<NcclVersion> chooseNccl(const ExplainOptions& opts, const tuner::TuningTable& table) {
  if (!opts.nccl.empty()) return parseNcclVersion(opts.nccl);
  for (const auto& [key, value] : table.provenance) {
    if (!text::equalsIgnoreCase(key, "nccl")) continue;
    auto v = parseNcclVersion(value);
    if (v.ok()) {
      std::cerr << "note: explaining for NCCL " << v->str()
                << " (the table's '#@ nccl:' line); pass --nccl to choose another\n";
      return v;
    }
    std::cerr << "warning: the table's '#@ nccl: " << value << "' line: " << v.error() << "\n";
  }
  NcclVersion newest{2, kNewestKnownMinor, -1};
  std::cerr << "note: explaining for NCCL " << newest.str()
            << " (the newest served); pass --nccl to choose another\n";
  return newest;
}

/// A version without a patch is its line's newest release: what an nccl= key is matched with.
NcclVersion withPatchNoted(const NcclVersion& v) {
  const NcclVersion out = withPatch(v);
  if (v.patch < 0) {
    std::cerr << "note: NCCL " << v.str() << " taken as " << out.str()
              << (v.minor <= kNewestKnownMinor ? ", the newest such release nccl-pilot knows"
                                               : ", a release newer than nccl-pilot knows")
              << "; pass --nccl " << v.str() << ".N for another\n";
  }
  return out;
}

/// --fabric, else what this machine would detect (the plugin's own definition).
Expected<Fabric> chooseFabric(const ExplainOptions& opts) {
  if (!opts.fabric.empty()) {
    if (auto f = parseFabric(opts.fabric)) return *f;
    return Error{"--fabric '" + opts.fabric + "' is not a fabric (expected ib, roce, ethernet)"};
  }
  const topology::FabricChoice detected = topology::detectFabric(processEnv());
  std::cerr << "note: fabric " << fabricName(detected.fabric) << " here (" << detected.why
            << "); pass --fabric to choose another\n";
  return detected.fabric;
}

/// The usable cells after --enable and --disable, plus what NCCL_ALGO / NCCL_PROTO would say.
struct CellChoice {
  CellMask usable;
  std::string ncclAlgo, ncclProto;  // "^Tree,Ring" forms; empty = unset
  bool cellDisables = false;        // some ALGO/PROTO pair, which neither variable can express
};

Expected<CellChoice> chooseCells(const ExplainOptions& opts, Collective coll,
                                 const CostShape& shape) {
  CellChoice out;
  out.usable = defaultCells(coll, opts.ranks, opts.nodes, shape);
  for (const std::string& arg : opts.enable) {
    auto sel = parseCellSelector(arg);
    if (!sel.ok()) return Error{"--enable " + sel.error()};
    if (Status s = enableCells(out.usable, *sel, shape); !s.ok()) return Error{s.error()};
  }
  for (const std::string& arg : opts.disable) {
    auto sel = parseCellSelector(arg);
    if (!sel.ok()) return Error{"--disable " + sel.error()};
    disableCells(out.usable, *sel);
    auto append = [](std::string& list, const char* name) {
      list += (list.empty() ? "^" : ",") + std::string(name);
    };
    if (sel->wholeAlgorithms()) {
      for (int a = 0; a < tuner::kNumAlgorithms; ++a) {
        if (sel->algos & (1u << a)) append(out.ncclAlgo, tuner::algorithmDisplayName(Algorithm(a)));
      }
    } else if (sel->wholeProtocols()) {
      for (int p = 0; p < tuner::kNumProtocols; ++p) {
        if (sel->protos & (1u << p)) append(out.ncclProto, tuner::protocolDisplayName(Protocol(p)));
      }
    } else {
      out.cellDisables = true;
    }
  }
  if (out.usable.empty()) {
    // Still worth showing: the tuner gets an all-IGNORE table and must leave it alone.
    std::cerr << "warning: no usable algorithm/protocol left for " << tuner::collectiveName(coll)
              << " after --disable; NCCL would fail this collective\n";
  }
  return out;
}

/// The environment the plugin reads when it loads its table (once, at the first init).
void prepareEnvironment(const ExplainOptions& opts, const CellChoice& cells, int abi,
                        Fabric fabric) {
  setenv(setting::kTunerTable, opts.table.c_str(), 1);
  setenv(setting::kTunerFabric, fabricName(fabric), 1);
  // Exploration off: explain shows the table's decisions, not a job's explorations.
  for (const char* name :
       {setting::kTunerConfigFile, setting::kTunerEnable, setting::kNcclAlgo, setting::kNcclProto,
        setting::kTunerTableSha256, setting::kTunerExplore, setting::kTunerExploreDigest}) {
    unsetenv(name);
  }
  if (abi != 2) return;  // from v3 on, exclusions reach the tuner as IGNORE cells only
  // NCCL 2.21 lets a v2 tuner override NCCL_ALGO/NCCL_PROTO, so our v2 path steps aside when
  // either is set. Set them as the --disable flags imply so the plugin shows that.
  if (!cells.ncclAlgo.empty()) setenv(setting::kNcclAlgo, cells.ncclAlgo.c_str(), 1);
  if (!cells.ncclProto.empty()) setenv(setting::kNcclProto, cells.ncclProto.c_str(), 1);
  if (!cells.ncclAlgo.empty() || !cells.ncclProto.empty()) {
    std::cerr << "note: NCCL 2.21 (tuner ABI v2) with"
              << (cells.ncclAlgo.empty() ? "" : " NCCL_ALGO=" + cells.ncclAlgo)
              << (cells.ncclProto.empty() ? "" : " NCCL_PROTO=" + cells.ncclProto)
              << ": the table steps aside and NCCL decides\n";
  }
  if (cells.cellDisables) {
    std::cerr << "note: NCCL 2.21 cannot exclude a single algorithm/protocol pair and runs a "
                 "v2 tuner's pick unchecked; pair --disable flags only change which cells "
                 "explain counts as usable\n";
  }
}

/// Parses the table for its diagnostics (printed here, so the plugin's copies are dropped) and
/// its boundaries. Fails only when the file cannot be read at all.
Expected<tuner::TuningTable> loadTable(const std::string& path, TunerLogOptions& log) {
  tuner::ParsedTable parsed = tuner::loadTableFile(path);
  for (const tuner::Diagnostic& d : parsed.diagnostics) {
    if (d.line == 0) return Error{"table " + path + ": " + d.message};
    const std::string where = path + ":" + std::to_string(d.line);
    std::cerr << where << ": warning: " << d.message << "\n";
    log.suppress.push_back(where + ": " + d.message);
  }
  if (parsed.table.rules.empty()) {
    std::cerr << "warning: " << path << " has no rules; NCCL decides everywhere\n";
  }
  return std::move(parsed.table);
}

struct ProbeContext {
  const TunerDriver& driver;
  const tuner::CompiledTable& compiled;
  const ExplainContext& ctx;
  bool tableOff;  // v2 with NCCL_ALGO/NCCL_PROTO set: the table steps aside, no line decides
};

/// Asks the plugin at every probe size and names the deciding line of each answer.
Expected<std::vector<Probe>> probeAll(const ProbeContext& p, uint64_t min, uint64_t max,
                                      const std::string& pluginPath) {
  const ExplainContext& ctx = p.ctx;
  const int regBuff = ctx.abi >= 4 ? ctx.regBuff : -1;
  std::vector<Probe> probes;
  bool warnedMismatch = false, warnedUnusable = false;
  for (uint64_t size : probeSizes(p.compiled.boundaries(ctx.coll), min, max)) {
    auto decision = p.driver.decide(ctx.coll, size, ctx.pipeOps, regBuff);
    if (!decision.ok()) return Error{"at " + formatSize(size) + ": " + decision.error()};
    const ProbeCall call{ctx.coll, size, ctx.pipeOps, regBuff, ctx.abi, ctx.nNodes};
    const int line = p.tableOff ? 0 : decidingLine(p.compiled, call, ctx.usable, ctx.shape);
    const bool acted = decision->kind != DecisionKind::Default || decision->channels > 0;
    if (acted && line == 0 && !warnedMismatch) {
      warnedMismatch = true;
      std::cerr << "warning: at " << formatSize(size)
                << " the plugin acted where no rule of this table applies; is " << pluginPath
                << " from another build?\n";
    }
    const auto& cell = decision->cell;
    if (ctx.abi == 2 && cell && !ctx.usable.has(cell->algo, cell->proto) && !warnedUnusable) {
      warnedUnusable = true;
      std::cerr << "warning: at " << formatSize(size) << " the tuner picks " << cellName(*cell)
                << ", which is not usable here; NCCL 2.21 runs it unchecked\n";
    }
    probes.push_back(Probe{size, *decision, line});
  }
  return probes;
}

/// v2 cannot carry a restriction: say where a restricting rule leaves NCCL's choice alone.
void noteV2Restrictions(const std::vector<SizeRange>& ranges, const tuner::TuningTable& table) {
  for (const SizeRange& r : ranges) {
    if (r.decision.kind != DecisionKind::Default) continue;
    for (const tuner::Rule& rule : table.rules) {
      bool decided =
          std::find(r.ruleLines.begin(), r.ruleLines.end(), rule.line) != r.ruleLines.end();
      if (decided && rule.namesChoice() && !rule.selectsOneCell()) {
        std::cerr << "note: line " << rule.line << " restricts, which tuner ABI v2 cannot say; at "
                  << formatSize(r.lo) << " .. " << formatSize(r.hi)
                  << " NCCL 2.21 keeps its own choice\n";
        break;
      }
    }
  }
}

/// The first 16 hex digits of the table's SHA-256, the value a launcher exports as
/// NCCL_PILOT_TUNER_TABLE_SHA256 (and what the tuner logs at init).
int printDigest(const ExplainOptions& opts) {
  TunerLogOptions ignored;
  auto table = loadTable(opts.table, ignored);
  if (!table.ok()) return reportError(table.error());
  if (opts.explore.empty()) {
    std::cout << table->sha256.substr(0, 16) << "\n";
    return 0;
  }
  // Read as the tuner reads NCCL_PILOT_TUNER_EXPLORE, so both give one digest.
  const std::string value = opts.explore;
  auto settings = tuner::readExploreSettings([&value](const char* name) {
    return std::string(name) == setting::kTunerExplore ? std::optional<std::string>(value)
                                                       : std::nullopt;
  });
  if (!settings.ok()) return reportError("--explore: " + settings.error(), kExitUsage);
  if (!settings.value().on())
    return reportError("--explore 0 explores nothing: no schedule", kExitUsage);
  std::cout << tuner::exploreDigest(settings.value(), table->sha256) << "\n";
  return 0;
}

int runExplain(const ExplainOptions& opts) {
  if (opts.digest) return printDigest(opts);
  for (const auto& [value, name] :
       {std::pair{opts.coll.empty(), "--coll"}, std::pair{opts.nodes == 0, "--nodes"},
        std::pair{opts.ranks == 0, "--ranks"}}) {
    if (value) return reportError(std::string(name) + " is required (unless --digest)", kExitUsage);
  }
  auto coll = tuner::parseCollective(opts.coll);
  if (!coll) {
    return reportError("--coll '" + opts.coll + "' is not a collective (expected " +
                           tuner::collectiveNameList() + ")",
                       kExitUsage);
  }
  if (opts.ranks < opts.nodes) {
    return reportError("--ranks " + std::to_string(opts.ranks) + " is fewer than --nodes " +
                           std::to_string(opts.nodes),
                       kExitUsage);
  }
  auto minBytes = text::parseBytes(opts.min), maxBytes = text::parseBytes(opts.max);
  if (!minBytes) return reportError("--min '" + opts.min + "' is not a byte count", kExitUsage);
  if (!maxBytes) return reportError("--max '" + opts.max + "' is not a byte count", kExitUsage);
  if (*minBytes > *maxBytes) return reportError("--min is above --max", kExitUsage);

  TunerLogOptions logOptions;
  logOptions.verbose = opts.verbose;
  auto table = loadTable(opts.table, logOptions);
  if (!table.ok()) return reportError(table.error());
  auto chosen = chooseNccl(opts, *table);
  if (!chosen.ok()) return reportError(chosen.error(), kExitUsage);
  if (chosen->minor > kNewestKnownMinor) {
    std::cerr << "warning: NCCL " << chosen->str() << " is newer than any release nccl-pilot "
              << "knows; assuming it behaves like 2." << kNewestKnownMinor << "\n";
  }
  const NcclVersion nccl = withPatchNoted(*chosen);
  auto fabric = chooseFabric(opts);
  if (!fabric.ok()) return reportError(fabric.error(), kExitUsage);
  const int abi = tunerAbiFor(nccl);
  const CostShape shape = costShapeFor(nccl);
  auto cells = chooseCells(opts, *coll, shape);
  if (!cells.ok()) return reportError(cells.error(), kExitUsage);

  prepareEnvironment(opts, *cells, abi, *fabric);
  actAsNccl(nccl.code());
  configureTunerLog(logOptions);
  auto lib = PluginLibrary::open(opts.plugin.empty() ? defaultPluginPath() : opts.plugin);
  if (!lib.ok()) return reportError(lib.error());
  auto driver =
      TunerDriver::create(*lib, TunerSetup{abi, opts.ranks, opts.nodes, shape, cells->usable});
  if (!driver.ok()) return reportError(driver.error());

  ExplainContext ctx{opts.table, nccl,       abi,          shape,        *coll,
                     opts.nodes, opts.ranks, opts.pipeOps, opts.regBuff, cells->usable};
  ctx.fabric = *fabric;
  // What the plugin matches fabric= and nccl= keys with: the fabric named and the version its
  // ncclGetVersion call gets from this process (acting_nccl.cc).
  tuner::ProcessFacts facts;
  facts.fabric = *fabric;
  facts.nccl = tuner::Range::exactly(nccl.code());
  const auto compiled =
      tuner::CompiledTable::compile(*table, tuner::CommShape::from(opts.ranks, opts.nodes), facts);
  if (compiled.droppedByFabric() > 0 || compiled.droppedByNccl() > 0) {
    std::cerr << "note: " << compiled.droppedByFabric() << " rule(s) for this shape hold on "
              << "another fabric only (fabric=), " << compiled.droppedByNccl()
              << " for other NCCL releases only (nccl=)\n";
  }
  for (const tuner::CompiledTable::Mark& m : compiled.marks()) {
    if (m.coll == *coll) ctx.marks.push_back(m);
  }
  const bool tableOff = abi == 2 && (!cells->ncclAlgo.empty() || !cells->ncclProto.empty());
  auto probes =
      probeAll(ProbeContext{**driver, compiled, ctx, tableOff}, *minBytes, *maxBytes, lib->path());
  if (!probes.ok()) return reportError(probes.error());
  const std::vector<SizeRange> ranges = mergeRanges(*probes, *maxBytes);
  if (abi == 2) noteV2Restrictions(ranges, *table);

  if (opts.json) {
    std::cout << explainJson(ctx, ranges).dump(2) << "\n";
  } else {
    printExplainText(std::cout, ctx, ranges);
  }
  return 0;
}

}  // namespace

Command addExplainCommand(CLI::App& app) {
  auto opts = std::make_shared<ExplainOptions>();
  CLI::App* sub = app.add_subcommand(
      "explain", "Show what the built tuner decides for one collective across a size range");
  sub->add_option("--table", opts->table, "Tuning table to explain")->required();
  sub->add_flag("--digest", opts->digest,
                "Only print the table's SHA-256 (16 hex digits), the value a launcher exports "
                "as NCCL_PILOT_TUNER_TABLE_SHA256");
  sub->add_option("--explore", opts->explore,
                  "With --digest: print instead the schedule digest (8 hex digits) of this "
                  "NCCL_PILOT_TUNER_EXPLORE with the table, the value a launcher exports as "
                  "NCCL_PILOT_TUNER_EXPLORE_DIGEST");
  sub->add_option("--coll", opts->coll,
                  std::string("Collective: ") + tuner::collectiveNameList() + " (required)");
  sub->add_option("--nodes", opts->nodes, "Nodes in the communicator (required)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  sub->add_option("--ranks", opts->ranks, "Ranks in the communicator, all nodes (required)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 24));
  sub->add_option("--min", opts->min, "Smallest size in bytes (64K, 16M, 1G accepted)")
      ->capture_default_str();
  sub->add_option("--max", opts->max, "Largest size in bytes")->capture_default_str();
  sub->add_option("--nccl", opts->nccl,
                  "NCCL release to act as, e.g. 2.21, 2.28.3, 2.32 (default: the table's '#@ "
                  "nccl:' line, else 2.32); picks the tuner ABI, the cost-table shape and what "
                  "nccl= keys match (a version without patch: its newest known release)");
  sub->add_option("--fabric", opts->fabric,
                  "Fabric the fabric= keys match: ib, roce, ethernet (default: what this "
                  "machine detects)");
  sub->add_option("--enable", opts->enable,
                  "Also count ALGO[/PROTO] as usable, e.g. NVLS, NVLSTree/Simple, "
                  "collnet_direct (repeatable, comma-separated)")
      ->delimiter(',');
  sub->add_option("--disable", opts->disable,
                  "Mark ALGO, PROTO or ALGO/PROTO unusable as NCCL_ALGO/NCCL_PROTO would, e.g. "
                  "tree, ll, ring/ll128 (repeatable, comma-separated)")
      ->delimiter(',');
  sub->add_option("--plugin", opts->plugin,
                  "Plugin library (default: <dir of nccl-pilot>/../lib/libnccl-tuner-pilot.so)");
  sub->add_option("--regbuff", opts->regBuff, "regBuff NCCL passes (tuner ABI v4+)")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  sub->add_option("--pipeops", opts->pipeOps, "numPipeOps NCCL passes")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  sub->add_flag("--json", opts->json, "Print one JSON object instead of a table");
  sub->add_flag("-v,--verbose", opts->verbose, "Also show the plugin's INFO and TRACE lines");
  return {sub, [opts] { return runExplain(*opts); }};
}

}  // namespace pilot::cli
