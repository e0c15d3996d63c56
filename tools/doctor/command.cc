// `nccl-pilot doctor`: runs the checks of the doctor/ layer on this machine (or a recorded
// tree) and prints one line per finding, or JSON; writes this node's fingerprint for the
// distributed check, or compares the fingerprints of all nodes.
#include <unistd.h>

#include <climits>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "doctor/fingerprint_file.h"
#include "doctor/probes.h"
#include "doctor/report.h"
#include "pilot/doctor/doctor.h"
#include "pilot/topology/sources.h"

namespace pilot::cli {
namespace {

struct DoctorOptions {
  std::string sysfsRoot = "/";
  bool json = false;
  std::string only;
  std::string fingerprintDir;
  std::string compareDir;
  std::string node;
};

std::string hostName(const std::string& sysfsRoot) {
  // A recorded tree names its own host; the live machine is asked.
  topology::SysfsRoot sysfs(sysfsRoot);
  if (auto name = sysfs.readLine("/proc/sys/kernel/hostname"); name && !name->empty()) return *name;
  char buffer[HOST_NAME_MAX + 1] = {};
  return ::gethostname(buffer, sizeof buffer - 1) == 0 ? buffer : "node";
}

int runCompare(const DoctorOptions& opts) {
  std::vector<UnreadableFingerprint> unreadable;
  auto fingerprints = readFingerprints(opts.compareDir, &unreadable);
  if (!fingerprints.ok()) return reportError(fingerprints.error());
  if (fingerprints->empty() && unreadable.empty())
    return reportError("no fingerprints (*.json) in " + opts.compareDir +
                       " (write them with nccl-pilot doctor --fingerprint DIR on every node)");
  const doctor::Comparison comparison = doctor::compareFingerprints(*fingerprints);
  if (opts.json) {
    std::cout << comparisonJson(comparison, *fingerprints, unreadable).dump(2) << "\n";
  } else {
    printComparisonText(std::cout, comparison, *fingerprints, unreadable);
  }
  const bool agree =
      comparison.differences.empty() && comparison.splits.empty() && unreadable.empty();
  return agree ? 0 : kExitFailure;
}

int runDoctorCommand(const DoctorOptions& opts) {
  if (!opts.compareDir.empty()) {
    if (!opts.fingerprintDir.empty() || !opts.only.empty())
      return reportError("--compare reads fingerprints; it takes no --fingerprint or --only",
                         kExitUsage);
    return runCompare(opts);
  }
  std::string unknown;
  auto only = doctor::parseCheckList(opts.only, &unknown);
  if (!only) {
    std::string ids;
    for (const std::string& id : doctor::checkIds()) ids += (ids.empty() ? "" : ", ") + id;
    return reportError("--only: unknown check '" + unknown + "' (checks: " + ids + ")", kExitUsage);
  }
  doctor::DoctorInputs inputs;
  inputs.sysfsRoot = opts.sysfsRoot;
  inputs.env = doctor::Environment::fromProcess();
  inputs.probes = liveProbes(/*recorded=*/opts.sysfsRoot != "/");
  const doctor::DoctorReport report = doctor::runDoctor(inputs, *only);
  if (opts.json) {
    std::cout << doctorJson(report).dump(2) << "\n";
  } else {
    printDoctorText(std::cout, report);
  }
  if (!opts.fingerprintDir.empty()) {
    const std::string node = opts.node.empty() ? hostName(opts.sysfsRoot) : opts.node;
    if (Status s = writeFingerprint(opts.fingerprintDir, node, report); !s.ok())
      return reportError(s.error());
    std::cerr << "wrote " << opts.fingerprintDir << "/" << safeNodeName(node) << ".json\n";
  }
  return doctor::exitStatus(doctor::summarize(report.findings));
}

}  // namespace

Command addDoctorCommand(CLI::App& app) {
  auto opts = std::make_shared<DoctorOptions>();
  CLI::App* sub = app.add_subcommand(
      "doctor",
      "Find what makes NCCL slow on this machine before a job runs (ACS, PCIe links, IOMMU, GPU "
      "Direct RDMA, RDMA ports, RoCE, NUMA, memlock, CPU governor, NCCL libraries, NCCL_* "
      "variables); exit 1 with any FAIL");
  sub->add_option("--sysfs-root", opts->sysfsRoot,
                  "Directory holding the sys/ and proc/ trees to read (a recorded machine)")
      ->capture_default_str();
  sub->add_flag("--json", opts->json, "Print one JSON object instead of one line per finding");
  sub->add_option("--only", opts->only,
                  "Run only these checks (comma-separated ids: pcie-acs, pcie-link, iommu, gdr, "
                  "rdma-port, roce, numa, memlock, cpu-governor, nccl, env)");
  sub->add_option("--fingerprint", opts->fingerprintDir,
                  "Also write this node's fingerprint and findings to DIR/<node>.json (run on "
                  "every node, then --compare DIR)");
  sub->add_option("--node", opts->node, "Node name for --fingerprint (default: the host name)");
  sub->add_option("--compare", opts->compareDir,
                  "Compare the fingerprints in DIR and name every node that differs from the "
                  "majority; exit 1 when any does");
  return {sub, [opts] { return runDoctorCommand(*opts); }};
}

}  // namespace pilot::cli
