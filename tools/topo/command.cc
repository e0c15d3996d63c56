// `nccl-pilot topo`: detects the machine exactly as the net plugin does inside NCCL, pairs each
// GPU with its NIC(s), repairs flat VM topologies, and shows the result like `nvidia-smi topo -m`
// (or as JSON); optionally writes the NCCL topology XML and compares with an NCCL dump.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "pilot/core/file.h"
#include "pilot/topology/nccl_xml.h"
#include "pilot/topology/topo_file.h"
#include "topo/compare.h"
#include "topo/report.h"

namespace pilot::cli {
namespace {

struct TopoOptions {
  std::string hwlocXml;
  std::string sysfsRoot = "/";
  bool noRepair = false;
  std::string repair = "auto";
  std::string ncclXml;
  std::string compare;
  bool json = false;
};

int runTopo(const TopoOptions& opts) {
  topology::DetectOptions detect;
  detect.hwlocXml = opts.hwlocXml;
  detect.sysfsRoot = opts.sysfsRoot;
  auto machine = topology::detectLocalMachine(detect);
  if (!machine.ok()) return reportError("topology detection failed: " + machine.error());
  auto policy = topology::parseRepairPolicy(opts.noRepair ? "off" : opts.repair);
  if (!policy) return reportError("--repair " + opts.repair + ": expected auto, on or off");
  const TopoView view = buildTopoView(std::move(machine.value()), *policy);

  std::optional<TopoComparison> comparison;
  if (!opts.compare.empty()) {
    auto text = readFile(opts.compare);
    if (!text.ok()) return reportError(text.error());
    auto dump = topology::readNcclXml(text.value(), opts.compare);
    if (!dump.ok()) return reportError(opts.compare + ": " + dump.error());
    comparison = compareMachines(view.forNccl(), view.pairs, dump.value());
  }

  if (!opts.ncclXml.empty()) {
    auto xml = topology::writeNcclXml(view.forNccl());
    if (!xml.ok()) return reportError("cannot write the NCCL topology XML: " + xml.error());
    if (Status s = writeFile(opts.ncclXml, xml.value()); !s.ok()) return reportError(s.error());
    std::cerr << "wrote " << opts.ncclXml << " (use it as NCCL_TOPO_FILE)\n";
  }

  if (opts.json) {
    auto out = topoJson(view);
    if (comparison) out["compare"] = comparisonJson(*comparison, opts.compare);
    std::cout << out.dump(2) << "\n";
  } else {
    printTopoText(std::cout, view);
    if (comparison) printComparisonText(std::cout, *comparison, opts.compare, view.repaired());
  }
  return 0;  // a difference from the dump is a finding, not a failure
}

}  // namespace

Command addTopoCommand(CLI::App& app) {
  auto opts = std::make_shared<TopoOptions>();
  CLI::App* sub = app.add_subcommand(
      "topo",
      "Show the machine as the net plugin describes it to NCCL: GPU/NIC matrix, pairs, "
      "flat-VM repair");
  sub->add_option("--hwloc-xml", opts->hwlocXml,
                  "Detect from this hwloc XML export (lstopo --of xml) instead of this machine");
  sub->add_option("--sysfs-root", opts->sysfsRoot,
                  "Directory holding the sys/ and proc/ trees to read (a recorded machine)")
      ->capture_default_str();
  sub->add_option("--repair", opts->repair,
                  "Flat-VM repair: auto (only on a virtual machine), on (also bare metal), off")
      ->capture_default_str();
  sub->add_flag("--no-repair", opts->noRepair, "Same as --repair off");
  sub->add_option("--nccl-xml", opts->ncclXml,
                  "Also write the NCCL topology XML the plugin would give NCCL to this file");
  sub->add_option("--compare", opts->compare,
                  "Compare with an NCCL topology dump (NCCL_TOPO_DUMP_FILE) or NCCL XML file");
  sub->add_flag("--json", opts->json, "Print one JSON object instead of text");
  return {sub, [opts] { return runTopo(*opts); }};
}

}  // namespace pilot::cli
