// The check registry, the shared context (the machine detected once) and the general facts of
// a node's fingerprint.
#include "pilot/doctor/doctor.h"

#include <unistd.h>

#include <algorithm>

#include "context.h"
#include "pilot/core/text.h"
#include "pilot/doctor/fingerprint.h"

extern char** environ;

namespace pilot::doctor {
namespace {

using CheckFn = void (*)(detail::Context&);
struct CheckEntry {
  const char* id;
  CheckFn run;
};
const CheckEntry kChecks[] = {
    {"pcie-acs", detail::checkPcieAcs},
    {"pcie-link", detail::checkPcieLink},
    {"iommu", detail::checkIommu},
    {"gdr", detail::checkGdr},
    {"rdma-port", detail::checkRdmaPorts},
    {"roce", detail::checkRoce},
    {"numa", detail::checkNuma},
    {"memlock", detail::checkMemlock},
    {"cpu-governor", detail::checkCpuGovernor},
    {"nccl", detail::checkNccl},
    {"env", detail::checkEnv},
};

/// What identifies this node's hardware and software for --compare, whatever checks ran.
void generalFacts(detail::Context& ctx) {
  const topology::SysfsRoot& s = ctx.sysfs;
  ctx.fact("kernel", s.readLine("/proc/sys/kernel/osrelease").value_or(""));
  ctx.fact("driver.nvidia", s.readLine("/sys/module/nvidia/version").value_or(""));
  for (const auto& [name, value] : ctx.inputs.env.vars) {
    // NCCL_HOSTID differs per node by design.
    if (name.rfind("NCCL_", 0) == 0 && name != "NCCL_HOSTID") ctx.fact("env." + name, value);
  }
  if (!ctx.machine) return;
  const topology::Machine& m = *ctx.machine;
  std::string shape;
  for (const topology::Gpu& g : m.gpus) shape += "gpu " + ctx.busOf(g.pci) + "\n";
  for (const topology::Nic& n : m.nics) shape += "nic " + n.name + " " + ctx.busOf(n.pci) + "\n";
  std::string pairs;
  for (const topology::GpuNicPair& p : ctx.pairs) {
    std::string nics;
    for (int n : p.nics) nics += (nics.empty() ? "" : "+") + m.nics[n].name;
    pairs += std::string(pairs.empty() ? "" : ", ") + "GPU" + std::to_string(p.gpu) + "->" + nics +
             " " + topology::pathName(p.path);
  }
  for (const topology::PciNode& n : m.pci) {
    shape += "pci " + (n.busId ? n.busId->str() : std::string("host")) + " " +
             std::to_string(static_cast<int>(n.kind)) + " " + std::to_string(n.parent) + "\n";
  }
  ctx.fact("topology.gpus", std::to_string(m.gpus.size()));
  ctx.fact("topology.nics", std::to_string(m.nics.size()));
  ctx.fact("topology.pairs", pairs.empty() ? "none" : pairs);
  ctx.fact("topology.digest", contentDigest(shape + pairs));
}

}  // namespace

const char* verdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::Pass:
      return "PASS";
    case Verdict::Warn:
      return "WARN";
    case Verdict::Fail:
      return "FAIL";
    case Verdict::Skip:
      break;
  }
  return "SKIP";
}

Summary summarize(const std::vector<Finding>& findings) {
  Summary s;
  for (const Finding& f : findings) {
    switch (f.verdict) {
      case Verdict::Pass:
        ++s.pass;
        break;
      case Verdict::Warn:
        ++s.warn;
        break;
      case Verdict::Fail:
        ++s.fail;
        break;
      case Verdict::Skip:
        ++s.skip;
        break;
    }
  }
  return s;
}

int exitStatus(const Summary& summary) {
  return summary.fail > 0 ? 1 : 0;
}

Verdict worstVerdict(const std::vector<Finding>& findings, const std::string& check) {
  auto rank = [](Verdict v) {
    switch (v) {
      case Verdict::Fail:
        return 3;
      case Verdict::Warn:
        return 2;
      case Verdict::Pass:
        return 1;
      case Verdict::Skip:
        break;
    }
    return 0;
  };
  Verdict worst = Verdict::Skip;
  for (const Finding& f : findings) {
    if (f.check == check && rank(f.verdict) > rank(worst)) worst = f.verdict;
  }
  return worst;
}

const std::vector<std::string>& checkIds() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> out;
    for (const CheckEntry& c : kChecks) out.emplace_back(c.id);
    return out;
  }();
  return ids;
}

std::optional<std::vector<std::string>> parseCheckList(std::string_view list,
                                                       std::string* unknown) {
  std::vector<std::string> wanted;
  for (std::string_view part : text::split(list, ',')) {
    std::string id = text::toLower(text::trim(part));
    if (id.empty()) continue;
    if (std::find(checkIds().begin(), checkIds().end(), id) == checkIds().end()) {
      if (unknown) *unknown = id;
      return std::nullopt;
    }
    wanted.push_back(id);
  }
  std::vector<std::string> ordered;
  for (const std::string& id : checkIds()) {
    if (std::find(wanted.begin(), wanted.end(), id) != wanted.end()) ordered.push_back(id);
  }
  return ordered;
}

Environment Environment::fromProcess() {
  Environment e;
  for (char** p = environ; p != nullptr && *p != nullptr; ++p) {
    std::string_view entry(*p);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    e.vars.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return e;
}

EnvLookup Environment::lookup() const {
  return [vars = vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

namespace detail {

Context::Context(const DoctorInputs& in, DoctorReport& out)
    : inputs(in), sysfs(in.sysfsRoot), env(in.env.lookup()), report(out) {
  Expected<topology::Machine> detected = topology::detectFromSysfs(sysfs);
  if (detected.ok()) {
    machine = std::move(detected.value());
    pairs = topology::pairGpusWithNics(*machine);
    virtualization = topology::virtualizationEvidence(*machine);
    for (const std::string& n : machine->notes) note(n);
  } else {
    detectionError = detected.error();
    note(detectionError);
  }
  ports = topology::listRdmaPorts(sysfs);
  fabric = topology::chooseFabric(ports, env);
}

void Context::add(const char* check, Verdict verdict, std::string subject, std::string evidence,
                  std::string fix) {
  report.findings.push_back(
      Finding{check, verdict, std::move(subject), std::move(evidence), std::move(fix)});
}

std::string Context::busOf(int pci) const {
  if (!machine || pci < 0 || static_cast<size_t>(pci) >= machine->pci.size()) return "?";
  const topology::PciNode& n = machine->pci[pci];
  return n.busId ? n.busId->str() : "host bridge";
}

std::string Context::gpuName(int gpu) const {
  if (!machine || gpu < 0 || static_cast<size_t>(gpu) >= machine->gpus.size()) return "GPU?";
  return "GPU" + std::to_string(gpu) + " " + busOf(machine->gpus[gpu].pci);
}

std::string Context::nicName(int nic) const {
  if (!machine || nic < 0 || static_cast<size_t>(nic) >= machine->nics.size()) return "NIC?";
  const topology::Nic& n = machine->nics[nic];
  return n.pci >= 0 ? n.name + " (" + busOf(n.pci) + ")" : n.name;
}

std::string Context::pciSysfsPath(int pci) const {
  return "/sys/bus/pci/devices/" + busOf(pci);
}

}  // namespace detail

DoctorReport runDoctor(const DoctorInputs& inputs, const std::vector<std::string>& only) {
  DoctorReport report;
  detail::Context ctx(inputs, report);
  if (ctx.machine) {
    const topology::Machine& m = *ctx.machine;
    report.machine = m.source + ": " + std::to_string(m.gpus.size()) + " GPUs, " +
                     std::to_string(m.nics.size()) + " NICs, " +
                     (ctx.virtualization.empty() ? "bare metal"
                                                 : "virtual machine (" + ctx.virtualization + ")");
  } else {
    report.machine = "sysfs " + inputs.sysfsRoot + ": no PCI tree (" + ctx.detectionError + ")";
  }
  generalFacts(ctx);
  for (const CheckEntry& c : kChecks) {
    if (!only.empty() && std::find(only.begin(), only.end(), c.id) == only.end()) continue;
    try {
      c.run(ctx);
    } catch (const std::exception& e) {  // a check never takes the others down with it
      ctx.add(c.id, Verdict::Skip, "check", std::string("the check stopped: ") + e.what());
    }
    ctx.fact(std::string("status.") + c.id, verdictName(worstVerdict(report.findings, c.id)));
  }
  return report;
}

}  // namespace pilot::doctor
