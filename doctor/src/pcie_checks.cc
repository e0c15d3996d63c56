// pcie-acs: ACS redirect bits on the bridges NCCL's peer-to-peer traffic crosses, read from
// each bridge's config space. pcie-link: links that trained below what both ends support
// (NCCL itself reads a NIC's maximum link, never its current one, so it cannot see this).
#include <algorithm>
#include <cstdio>

#include "context.h"
#include "pilot/doctor/pci_config.h"
#include "pilot/topology/sysfs_facts.h"

namespace pilot::doctor::detail {
namespace {

constexpr const char* kAcs = "pcie-acs";
constexpr const char* kLink = "pcie-link";

std::string hex(unsigned value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%0*x", digits, value);
  return buffer;
}

std::string joinPaths(const std::vector<std::string>& paths) {
  std::string out = paths.empty() ? "" : paths.front();
  if (paths.size() > 1) out += " and " + std::to_string(paths.size() - 1) + " more path(s)";
  return out;
}

std::string roleOf(const Context& ctx, int pci, const std::optional<PciConfigSpace>& config) {
  if (config) {
    if (std::optional<PcieCapability> pcie = pcieCapability(*config)) {
      if (pcie->portType != PciePortType::Other && pcie->portType != PciePortType::Endpoint)
        return portTypeName(pcie->portType);
    }
  }
  return bridgeRoleName(bridgeRole(*ctx.machine, pci));
}

/// ATS on the NICs of a path, for the VM case (where ACS is expected and translated requests
/// from an ATS-enabled NIC may go peer to peer).
std::string atsOfNics(const Context& ctx, const std::vector<int>& nics) {
  std::string out;
  std::vector<int> seen;
  for (int nic : nics) {
    if (std::find(seen.begin(), seen.end(), nic) != seen.end()) continue;
    seen.push_back(nic);
    const int pci = ctx.machine->nics[nic].pci;
    std::optional<std::string> bytes = ctx.sysfs.readAll(ctx.pciSysfsPath(pci) + "/config", 4096);
    Expected<PciConfigSpace> config = parsePciConfig(bytes.value_or(""));
    std::string state = "unknown (config space unreadable)";
    if (config.ok() && config->hasExtendedSpace()) {
      std::optional<AtsRegisters> ats = atsRegisters(*config);
      state = !ats ? "no ATS capability" : ats->enabled ? "ATS enabled" : "ATS disabled";
    }
    out += "; " + ctx.nicName(nic) + ": " + state;
  }
  return out;
}

void checkBridge(Context& ctx, const PathBridge& bridge) {
  const std::string bus = ctx.busOf(bridge.pci);
  const std::string file = ctx.pciSysfsPath(bridge.pci) + "/config";
  const std::string asRoot =
      "run nccl-pilot doctor as root (the kernel shows unprivileged readers only the 64-byte "
      "header), or as root: lspci -vvv -s " +
      bus + " | grep ACSCtl";
  std::optional<std::string> bytes = ctx.sysfs.readAll(file, kPcieConfigBytes);
  std::optional<PciConfigSpace> config;
  std::string unreadable;
  if (!bytes) {
    unreadable = "cannot read " + file;
  } else if (Expected<PciConfigSpace> parsed = parsePciConfig(*bytes); parsed.ok()) {
    config = std::move(parsed.value());
  } else {
    unreadable = file + ": " + parsed.error();
  }
  const std::string subject =
      bus + " (" + roleOf(ctx, bridge.pci, config) + " on " + joinPaths(bridge.paths) + ")";
  if (!config) {
    ctx.note(unreadable);
    ctx.add(kAcs, Verdict::Skip, subject, unreadable, asRoot);
    return;
  }
  if (config->bytes.size() <= kPciHeaderBytes) {
    ctx.add(kAcs, Verdict::Skip, subject,
            file + " shows only the " + std::to_string(config->bytes.size()) +
                "-byte header: ACS sits in extended config space (from 0x100)",
            asRoot);
    return;
  }
  std::optional<AcsRegisters> acs = acsRegisters(*config);
  if (!acs) {
    if (!config->problems.empty()) {
      std::string problems;
      for (const std::string& p : config->problems) problems += (problems.empty() ? "" : "; ") + p;
      const std::string why = file + ": " + problems;
      ctx.note(why);
      ctx.add(kAcs, Verdict::Skip, subject, why + "; no ACS capability found before that", asRoot);
      return;
    }
    ctx.add(kAcs, Verdict::Pass, subject,
            config->hasExtendedSpace()
                ? "no ACS capability among the " + std::to_string(config->extended.size()) +
                      " extended capabilities of " + file
                : file + " has no extended config space (" + std::to_string(config->bytes.size()) +
                      " bytes): no ACS capability");
    return;
  }
  const uint16_t on = acs->control & acs::kRedirectingBits;
  std::string evidence = "ACSCtl " + hex(acs->control, 4) + ": " + describeAcsBits(acs->control) +
                         " (ACS capability at " + hex(acs->offset, 3) + " of " + file + ")";
  if (on == 0) {
    ctx.add(kAcs, Verdict::Pass, subject, evidence);
    return;
  }
  if (!ctx.virtualization.empty()) {
    ctx.add(kAcs, Verdict::Warn, subject,
            evidence + "; this is a virtual machine (" + ctx.virtualization + ")" +
                atsOfNics(ctx, bridge.nics),
            "in a VM the host sets ACS to isolate devices and it is expected: enable ATS on the "
            "NIC (lspci -vvv -s NIC | grep ATSCtl) so its translated requests may go peer to "
            "peer, and ask the provider for GPUs and NICs under one PCIe switch");
    return;
  }
  ctx.add(kAcs, Verdict::Fail, subject, evidence,
          "as root: setpci -s " + bus +
              " ECAP_ACS+0x6.w=0000 (lasts until reboot); to keep it off, disable ACS in the BIOS "
              "or boot with pci=disable_acs_redir=" +
              bus + " (clears the redirect bits)");
}

std::string linkText(int generation, int width) {
  std::string out = width > 0 ? "x" + std::to_string(width) : "x?";
  if (generation > 0) {
    out += " Gen" + std::to_string(generation) + " (" + topology::pcieSpeedText(generation) + ")";
  } else {
    out += " at an unknown speed";
  }
  return out;
}

int minKnown(int a, int b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

enum class LinkKind { Gpu, Nic, Bridge };

void checkLink(Context& ctx, int pci, LinkKind kind, const std::string& subject) {
  const topology::Machine& m = *ctx.machine;
  const int parent = m.pci[pci].parent;
  if (parent < 0 || !m.pci[parent].busId || !m.pci[pci].busId) return;  // no link to a bridge
  const std::string dir = ctx.pciSysfsPath(pci);
  std::optional<topology::PciLinkState> own =
      topology::readPciLinkState(ctx.sysfs, *m.pci[pci].busId);
  std::optional<topology::PciLinkState> up =
      topology::readPciLinkState(ctx.sysfs, *m.pci[parent].busId);
  if (!own || !up) {
    ctx.add(kLink, Verdict::Skip, subject, dir + " or its port above is not in sysfs");
    return;
  }
  if (own->maxGeneration == 0 || own->maxWidth == 0) {
    // A virtual function (or a device that reports no link): its link is the physical function's.
    ctx.add(kLink, Verdict::Skip, subject,
            "link not reported: max_link_speed '" + own->maxSpeed + "', max_link_width " +
                std::to_string(own->maxWidth) + " in " + dir +
                "; a virtual function's link belongs to its physical function");
    return;
  }
  // An unreadable current value of the device: the port above reports the same link.
  const int curGen = own->currentGeneration ? own->currentGeneration : up->currentGeneration;
  const int curWidth = own->currentWidth ? own->currentWidth : up->currentWidth;
  const int capGen = minKnown(own->maxGeneration, up->maxGeneration);
  const int capWidth = minKnown(own->maxWidth, up->maxWidth);
  const std::string where = " (current_link_* and max_link_* of " + dir +
                            " and of the port above, " + ctx.busOf(parent) + ")";
  if (curGen == 0 || curWidth == 0) {
    ctx.add(kLink, Verdict::Skip, subject,
            "current link not reported: '" + own->currentSpeed + "' x" +
                std::to_string(own->currentWidth) + where);
    return;
  }
  const std::string evidence =
      linkText(curGen, curWidth) + ", both ends capable of " + linkText(capGen, capWidth) + where;
  const std::string confirm = "lspci -vv -s " + ctx.busOf(pci) + " | grep -E 'LnkCap|LnkSta'";
  if (curGen < capGen || curWidth < capWidth) {
    if (kind == LinkKind::Gpu) {
      ctx.add(kLink, Verdict::Warn, subject, evidence,
              "an idle GPU lowers its link to save power: confirm under load with nvidia-smi "
              "--query-gpu=pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width."
              "current,pcie.link.width.max --format=csv while a job runs; if it stays low, reseat "
              "the GPU and check the riser and the BIOS PCIe settings");
    } else {
      ctx.add(kLink, Verdict::Fail, subject, evidence,
              "the link trained below what both ends support: reseat the card (or its riser and "
              "cable), check the slot's BIOS settings (forced speed, bifurcation) and dmesg for "
              "PCIe AER errors; confirm with " +
                  confirm);
    }
    return;
  }
  if (capGen < own->maxGeneration || capWidth < own->maxWidth) {
    ctx.add(kLink, Verdict::Warn, subject,
            evidence + "; the device itself supports " +
                linkText(own->maxGeneration, own->maxWidth) + ", the port above only " +
                linkText(up->maxGeneration, up->maxWidth),
            "the slot limits the device: move it to a slot of its full width and speed");
    return;
  }
  ctx.add(kLink, Verdict::Pass, subject, evidence);
}

}  // namespace

void checkPcieAcs(Context& ctx) {
  if (!ctx.machine) {
    ctx.add(kAcs, Verdict::Skip, "PCI tree", ctx.detectionError);
    return;
  }
  const std::vector<PathBridge> bridges = bridgesOnNcclPaths(ctx);
  if (bridges.empty()) {
    ctx.add(kAcs, Verdict::Skip, "PCI paths",
            "no bridge between a GPU and its NIC, or between GPUs under one switch (" +
                std::to_string(ctx.machine->gpus.size()) + " GPUs, " +
                std::to_string(ctx.pairs.size()) + " GPU-NIC pairs)");
    return;
  }
  for (const PathBridge& b : bridges) checkBridge(ctx, b);
}

void checkPcieLink(Context& ctx) {
  if (!ctx.machine) {
    ctx.add(kLink, Verdict::Skip, "PCI tree", ctx.detectionError);
    return;
  }
  const topology::Machine& m = *ctx.machine;
  const size_t before = ctx.report.findings.size();
  std::vector<int> upstreamPorts;
  auto collectUpstream = [&](int pci) {
    for (int p = pci >= 0 ? m.pci[pci].parent : -1; p >= 0; p = m.pci[p].parent) {
      if (bridgeRole(m, p) == BridgeRole::SwitchUpstream &&
          std::find(upstreamPorts.begin(), upstreamPorts.end(), p) == upstreamPorts.end())
        upstreamPorts.push_back(p);
    }
  };
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    checkLink(ctx, m.gpus[g].pci, LinkKind::Gpu, ctx.gpuName(static_cast<int>(g)));
    collectUpstream(m.gpus[g].pci);
  }
  for (size_t n = 0; n < m.nics.size(); ++n) {
    if (m.nics[n].pci < 0) continue;
    checkLink(ctx, m.nics[n].pci, LinkKind::Nic, ctx.nicName(static_cast<int>(n)));
    collectUpstream(m.nics[n].pci);
  }
  std::sort(upstreamPorts.begin(), upstreamPorts.end(),
            [&](int a, int b) { return *m.pci[a].busId < *m.pci[b].busId; });
  for (int p : upstreamPorts) {
    checkLink(ctx, p, LinkKind::Bridge, ctx.busOf(p) + " (switch upstream port)");
  }
  if (ctx.report.findings.size() == before) {
    ctx.add(kLink, Verdict::Skip, "PCIe links", "no GPU or NIC below a PCIe port in " + m.source);
  }
}

}  // namespace pilot::doctor::detail
