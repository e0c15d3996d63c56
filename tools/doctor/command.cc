// `nccl-pilot doctor`: runs the checks of the doctor/ layer on this machine (or a recorded
// tree) and prints one line per finding, or JSON; writes this node's fingerprint for the
// distributed check, or compares the fingerprints of all nodes; or, with --job, compares what
// every rank of a job ran (the provenance records under its metrics directory).
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "doctor/fingerprint_file.h"
#include "doctor/probes.h"
#include "doctor/report.h"
#include "pilot/doctor/doctor.h"
#include "pilot/doctor/job_audit.h"
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
  std::string jobDir;
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

int runJob(const DoctorOptions& opts) {
  if (!opts.compareDir.empty() || !opts.fingerprintDir.empty() || !opts.only.empty() ||
      !opts.node.empty() || opts.sysfsRoot != "/") {
    return reportError(
        "--job reads a job's records; it takes no --compare, --fingerprint, --node, --only or "
        "--sysfs-root",
        kExitUsage);
  }
  std::error_code ec;
  if (!std::filesystem::exists(opts.jobDir, ec))
    return reportError("--job: no such directory: " + opts.jobDir, kExitUsage);
  const doctor::JobRecords records = doctor::readJobRecords({opts.jobDir});
  if (records.processes.empty()) {
    for (const std::string& note : records.notes) std::cerr << "note: " << note << "\n";
    return reportError(
        "no nccl-pilot provenance record under " + opts.jobDir +
            " (nccl_pilot_*.provenance.json, or a \"provenance\" line in nccl_pilot_*.jsonl): "
            "set NCCL_PILOT_METRICS_DIR on every rank (a shared folder, or gather each node's "
            "files into one) and run the job with nccl-pilot as NCCL's plugin",
        kExitUsage);
  }
  const doctor::JobAudit audit = doctor::auditJob(records, opts.jobDir);
  if (opts.json) {
    std::cout << jobJson(audit).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    printJobText(std::cout, audit);
  }
  return doctor::exitStatus(doctor::summarize(audit.findings));
}

int runDoctorCommand(const DoctorOptions& opts) {
  if (!opts.jobDir.empty()) return runJob(opts);
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
      "variables); exit 1 with any FAIL. With --job DIR: compare what every rank of a job ran "
      "(NCCL version and library, libnccl copies, table, plugins, NCCL_* settings)");
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
  sub->add_option("--job", opts->jobDir,
                  "Compare the provenance records every rank wrote under DIR (its "
                  "NCCL_PILOT_METRICS_DIR, or the nodes' files gathered there): FAIL for NCCL "
                  "versions or libraries that differ, a second libnccl in a process, tuning "
                  "tables that differ; WARN for debug-only, dangerous, unknown or differing "
                  "NCCL_* settings; exit 1 with any FAIL, 2 when DIR holds no record");
  return {sub, [opts] { return runDoctorCommand(*opts); }};
}

}  // namespace pilot::cli
