// iommu: whether DMA from GPUs and NICs is translated (kernel command line, iommu_group type).
// gdr: whether NCCL can move data between the NIC and GPU memory directly, tested the way NCCL's
// IB transport tests it (nv_mem / nvidia_peermem, else DMA-BUF) and gated the way NCCL gates it
// (the GPU-NIC path: PXB or better by default).
#include <algorithm>
#include <map>

#include "context.h"
#include "pilot/core/text.h"

namespace pilot::doctor::detail {
namespace {

constexpr const char* kIommu = "iommu";
constexpr const char* kGdr = "gdr";

/// The IOMMU switches of a kernel command line, in order ("intel_iommu=on iommu=pt").
std::string iommuOptions(const std::string& cmdline) {
  std::string out;
  for (std::string_view word : text::splitWhitespace(cmdline)) {
    if (word.rfind("intel_iommu=", 0) == 0 || word.rfind("amd_iommu=", 0) == 0 ||
        word.rfind("iommu=", 0) == 0 || word.rfind("iommu.", 0) == 0) {
      out += (out.empty() ? "" : " ") + std::string(word);
    }
  }
  return out;
}

bool hasWord(const std::string& options, std::string_view word) {
  for (std::string_view w : text::splitWhitespace(options)) {
    if (w == word) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

/// "6.1.0-18-amd64" -> 601 (major * 100 + minor); 0 unknown.
int kernelVersion(const std::string& release) {
  std::vector<std::string_view> parts = text::split(release, '.');
  if (parts.size() < 2) return 0;
  std::string_view minor = parts[1];
  size_t digits = 0;
  while (digits < minor.size() && minor[digits] >= '0' && minor[digits] <= '9') ++digits;
  std::optional<uint64_t> a = text::parseUnsigned(parts[0]);
  std::optional<uint64_t> b = text::parseUnsigned(minor.substr(0, digits));
  if (!a || !b || *a > 100 || *b > 99) return 0;
  return static_cast<int>(*a * 100 + *b);
}

}  // namespace

void checkIommu(Context& ctx) {
  const std::string cmdline = ctx.sysfs.readLine("/proc/cmdline").value_or("");
  const std::string options = iommuOptions(cmdline);
  const std::string optionText =
      "/proc/cmdline: " + (options.empty() ? std::string("no IOMMU option") : options);
  const std::vector<std::string> units = ctx.sysfs.list("/sys/class/iommu");
  if (!ctx.machine) {
    ctx.add(kIommu, Verdict::Skip, "IOMMU", ctx.detectionError);
    return;
  }
  const topology::Machine& m = *ctx.machine;
  std::map<std::string, std::vector<std::string>> byType;  // "" = no iommu_group
  auto look = [&](int pci, const std::string& name) {
    if (pci < 0) return;
    std::optional<std::string> group = ctx.sysfs.resolve(ctx.pciSysfsPath(pci) + "/iommu_group");
    std::string type;
    if (group) type = ctx.sysfs.readLine(*group + "/type").value_or("unknown");
    byType[type].push_back(name);
  };
  for (size_t g = 0; g < m.gpus.size(); ++g) look(m.gpus[g].pci, ctx.gpuName(static_cast<int>(g)));
  for (size_t n = 0; n < m.nics.size(); ++n) look(m.nics[n].pci, ctx.nicName(static_cast<int>(n)));
  ctx.fact("iommu", options.empty() ? "default" : options);
  if (byType.empty()) {
    ctx.add(kIommu, Verdict::Skip, "IOMMU", "no GPU or NIC in " + m.source + "; " + optionText);
    return;
  }
  const bool rdma = ctx.fabric.rdma;
  const std::string passthrough =
      "boot with iommu=pt (keeping intel_iommu=on / amd_iommu=on if set) so GPUs and NICs "
      "bypass translation, or turn the IOMMU off in the BIOS; translated GPU Direct RDMA is slow "
      "or hangs (NVIDIA/nccl#257, nccl-tests#115)";
  for (const auto& [type, devices] : byType) {
    const std::string subject = "IOMMU for " + joined(devices);
    if (type.empty()) {
      ctx.add(kIommu, Verdict::Pass, subject,
              "no iommu_group link: DMA is not translated (" + std::to_string(units.size()) +
                  " IOMMU units in /sys/class/iommu; " + optionText + ")");
    } else if (type == "identity") {
      ctx.add(kIommu, Verdict::Pass, subject,
              "iommu_group type identity (passthrough); " + optionText);
    } else if (type == "DMA" || type == "DMA-FQ") {
      const std::string evidence =
          "iommu_group type " + type + ": DMA is translated by the IOMMU; " + optionText;
      if (rdma) {
        ctx.add(kIommu, Verdict::Warn, subject, evidence + "; RDMA in use (" + ctx.fabric.why + ")",
                passthrough);
      } else {
        ctx.add(kIommu, Verdict::Pass, subject,
                evidence + "; no RDMA in use (" + ctx.fabric.why + ")");
      }
    } else if (type == "unknown") {
      // Kernels before 5.11 have no type file: the command line is all there is.
      const bool off = hasWord(options, "intel_iommu=off") || hasWord(options, "amd_iommu=off") ||
                       hasWord(options, "iommu=off");
      const bool pt = hasWord(options, "iommu=pt") || hasWord(options, "iommu.passthrough=1");
      if (off || pt) {
        ctx.add(kIommu, Verdict::Pass, subject,
                std::string(pt ? "passthrough" : "off") + " by the command line (no " +
                    "iommu_group/type file to confirm); " + optionText);
      } else {
        ctx.add(kIommu, Verdict::Skip, subject,
                "in an IOMMU group, but the kernel shows no iommu_group/type (before 5.11?) and "
                "the command line does not say; " +
                    optionText,
                rdma ? passthrough : "");
      }
    } else {
      ctx.add(kIommu, Verdict::Warn, subject,
              "iommu_group type " + type + " (the device is held for userspace or blocked); " +
                  optionText,
              "a device NCCL should use must be owned by its kernel driver");
    }
  }
}

void checkGdr(Context& ctx) {
  if (!ctx.machine) {
    ctx.add(kGdr, Verdict::Skip, "GPU Direct RDMA", ctx.detectionError);
    return;
  }
  const topology::Machine& m = *ctx.machine;
  if (!ctx.fabric.rdma) {
    ctx.add(kGdr, Verdict::Skip, "GPU Direct RDMA",
            "NCCL's IB transport does not carry the data: " + ctx.fabric.why);
    return;
  }
  // NCCL's own test (src/transport/net_ib/gdr.cc): any of these files exists.
  static const char* const kPeerMem[] = {"/sys/kernel/mm/memory_peers/nv_mem/version",
                                         "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
                                         "/sys/module/nvidia_peermem/version"};
  std::string peerMem;
  for (const char* file : kPeerMem) {
    if (std::optional<std::string> v = ctx.sysfs.readLine(file)) {
      peerMem = file + std::string(" ") + (v->empty() ? "present" : *v);
      break;
    }
  }
  ctx.fact("gdr.peermem", peerMem.empty() ? "none" : "loaded");
  const std::string release = ctx.sysfs.readLine("/proc/sys/kernel/osrelease").value_or("");
  const int kernel = kernelVersion(release);
  const std::optional<std::string> dmabufEnv = ctx.env("NCCL_DMABUF_ENABLE");
  const bool dmabufOff = dmabufEnv && text::trim(*dmabufEnv) == "0";
  const std::optional<std::string> gdrLevel = ctx.env("NCCL_NET_GDR_LEVEL");
  const std::string loadPeerMem =
      "as root: modprobe nvidia_peermem (ships with the NVIDIA driver; load it at boot via "
      "/etc/modules-load.d), or use DMA-BUF (Linux >= 5.12, NVIDIA open kernel modules, "
      "NCCL_DMABUF_ENABLE=1)";
  int checked = 0;
  for (const topology::GpuNicPair& pair : ctx.pairs) {
    std::vector<int> rdmaNics;
    for (int n : pair.nics) {
      if (m.nics[n].rdma) rdmaNics.push_back(n);
    }
    if (rdmaNics.empty()) continue;
    ++checked;
    std::string nics;
    for (int n : rdmaNics) nics += (nics.empty() ? "" : " + ") + ctx.nicName(n);
    const std::string subject = ctx.gpuName(pair.gpu) + " <-> " + nics;
    const std::string path = std::string("path ") + topology::pathName(pair.path);
    std::optional<bool> dmabuf;
    if (ctx.inputs.probes.dmaBufSupported && m.pci[m.gpus[pair.gpu].pci].busId)
      dmabuf = ctx.inputs.probes.dmaBufSupported(*m.pci[m.gpus[pair.gpu].pci].busId);
    const std::string dmabufText = !dmabuf   ? "DMA-BUF support unknown here (no CUDA driver asked)"
                                   : *dmabuf ? "CUDA reports DMA-BUF support"
                                             : "CUDA reports no DMA-BUF support";
    std::string evidence =
        (peerMem.empty() ? std::string("no nv_mem or nvidia_peermem (none of ") + kPeerMem[0] +
                               ", " + kPeerMem[1] + ", " + kPeerMem[2] + ")"
                         : "peer memory module: " + peerMem) +
        "; " + dmabufText + (dmabufOff ? " but NCCL_DMABUF_ENABLE=0" : "") + "; " + path;
    if (pair.path != topology::PathType::PIX && pair.path != topology::PathType::PXB && !gdrLevel) {
      ctx.add(kGdr, Verdict::Warn, subject,
              evidence + ": NCCL enables GPU Direct RDMA only up to PXB by default",
              ctx.virtualization.empty()
                  ? "put the GPU and its NIC under one PCIe switch; NCCL_NET_GDR_LEVEL=PHB forces "
                    "it (measure: the root complex may be slower than host memory)"
                  : "in a VM, nccl-pilot's net plugin describes GPU and NIC as PIX to NCCL "
                    "(NCCL_PILOT_TOPO_REPAIR=auto); without it, write an NCCL_TOPO_FILE");
      continue;
    }
    if (!peerMem.empty()) {
      ctx.add(kGdr, Verdict::Pass, subject, evidence);
    } else if (dmabuf && *dmabuf && !dmabufOff) {
      ctx.add(kGdr, Verdict::Pass, subject, evidence);
    } else if (dmabuf && *dmabuf) {
      ctx.add(kGdr, Verdict::Fail, subject, evidence,
              "unset NCCL_DMABUF_ENABLE (or load nvidia_peermem)");
    } else if (dmabuf || (kernel > 0 && kernel < 512)) {
      ctx.add(
          kGdr, Verdict::Fail, subject,
          evidence + (dmabuf ? "" : "; kernel " + release + " predates DMA-BUF for RDMA (5.12)"),
          loadPeerMem);
    } else {
      ctx.add(kGdr, Verdict::Warn, subject,
              evidence + "; kernel " + (release.empty() ? "?" : release),
              loadPeerMem +
                  "; NCCL_DEBUG=INFO tells which it got: 'via NET/IB/0/GDRDMA' on the "
                  "channel lines means GPU Direct RDMA is on");
    }
  }
  if (checked == 0) {
    ctx.add(kGdr, Verdict::Skip, "GPU Direct RDMA",
            "no GPU is paired with an RDMA NIC (" + std::to_string(ctx.pairs.size()) +
                " GPU-NIC pairs)");
  }
}

}  // namespace pilot::doctor::detail
