// numa: this process's CPU mask against each GPU's and NIC's local CPUs. memlock: the locked
// memory limit RDMA registration needs. cpu-governor: the CPU frequency governor. All read from
// /proc/self and /sys through the root, so a recorded tree replays a job's view.
#include <algorithm>
#include <map>
#include <set>

#include "context.h"
#include "pilot/core/text.h"
#include "pilot/topology/sysfs_facts.h"

namespace pilot::doctor::detail {
namespace {

constexpr const char* kNuma = "numa";
constexpr const char* kMemlock = "memlock";
constexpr const char* kGovernor = "cpu-governor";

/// "Cpus_allowed_list:\t0-63" from /proc/self/status.
std::optional<std::string> statusField(const Context& ctx, const std::string& key) {
  std::optional<std::string> status = ctx.sysfs.readAll("/proc/self/status", 1 << 16);
  if (!status) return std::nullopt;
  for (std::string_view line : text::split(*status, '\n')) {
    if (line.rfind(key + ":", 0) == 0) return std::string(text::trim(line.substr(key.size() + 1)));
  }
  return std::nullopt;
}

std::optional<std::set<unsigned>> cpuSet(std::string_view list) {
  std::optional<std::vector<unsigned>> cpus = topology::parseCpuListText(list);
  if (!cpus) return std::nullopt;
  return std::set<unsigned>(cpus->begin(), cpus->end());
}

/// A device's local CPUs: local_cpulist, else its NUMA node's cpulist.
std::optional<std::string> localCpus(const Context& ctx, int pci, std::string* where) {
  const std::string dir = ctx.pciSysfsPath(pci);
  if (auto list = ctx.sysfs.readLine(dir + "/local_cpulist")) {
    *where = dir + "/local_cpulist";
    return list;
  }
  const int numa = ctx.machine->pci[pci].numaNode;
  if (numa < 0) return std::nullopt;
  *where = "/sys/devices/system/node/node" + std::to_string(numa) + "/cpulist";
  return ctx.sysfs.readLine(*where);
}

std::string formatBytes(uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
    return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0)
    return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

void checkNuma(Context& ctx) {
  if (!ctx.machine) {
    ctx.add(kNuma, Verdict::Skip, "CPU affinity", ctx.detectionError);
    return;
  }
  const topology::Machine& m = *ctx.machine;
  const std::optional<std::string> allowed = statusField(ctx, "Cpus_allowed_list");
  const std::optional<std::set<unsigned>> mask = allowed ? cpuSet(*allowed) : std::nullopt;
  if (!mask) {
    ctx.add(kNuma, Verdict::Skip, "this process's CPU mask",
            allowed ? "Cpus_allowed_list '" + allowed->substr(0, 40) +
                          "' in /proc/self/status "
                          "is not a cpulist"
                    : "no Cpus_allowed_list in /proc/self/status");
    return;
  }
  if (m.gpus.empty()) {
    ctx.add(kNuma, Verdict::Skip, "CPU affinity", "no GPU in " + m.source);
    return;
  }
  const std::string maskText =
      "this process may run on CPUs " + *allowed + " (Cpus_allowed_list, /proc/self/status)";
  auto judge = [&](int pci, const std::string& name) -> std::pair<bool, std::string> {
    std::string where;
    std::optional<std::string> list = localCpus(ctx, pci, &where);
    std::optional<std::set<unsigned>> local = list ? cpuSet(*list) : std::nullopt;
    if (!local || local->empty()) return {true, name + " local CPUs unknown"};
    size_t shared = 0;
    for (unsigned c : *local) shared += mask->count(c);
    return {shared > 0, name + " local CPUs " + *list + " (" + where +
                            "): " + std::to_string(shared) + " of them allowed"};
  };
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    auto [gpuOk, gpuText] = judge(m.gpus[g].pci, ctx.gpuName(static_cast<int>(g)));
    std::string evidence = maskText + "; " + gpuText;
    bool ok = gpuOk;
    for (const topology::GpuNicPair& pair : ctx.pairs) {
      if (pair.gpu != static_cast<int>(g)) continue;
      for (int n : pair.nics) {
        if (m.nics[n].pci < 0) continue;
        auto [nicOk, nicText] = judge(m.nics[n].pci, ctx.nicName(n));
        evidence += "; " + nicText;
        ok = ok && nicOk;
      }
    }
    if (ok) {
      ctx.add(kNuma, Verdict::Pass, ctx.gpuName(static_cast<int>(g)), evidence);
    } else {
      ctx.add(kNuma, Verdict::Warn, ctx.gpuName(static_cast<int>(g)),
              evidence + ": a rank on this GPU runs its NCCL threads across the CPU interconnect",
              "bind each rank to its GPU's CPUs: srun --cpu-bind=... or numactl --cpunodebind=N "
              "per rank, or widen the job's cpuset (NVIDIA/nccl#1017)");
    }
  }
}

void checkMemlock(Context& ctx) {
  const std::string limits = ctx.sysfs.readAll("/proc/self/limits", 1 << 16).value_or("");
  std::string soft;
  for (std::string_view line : text::split(limits, '\n')) {
    if (line.rfind("Max locked memory", 0) != 0) continue;
    std::vector<std::string_view> words = text::splitWhitespace(line.substr(17));
    if (!words.empty()) soft = std::string(words[0]);
  }
  if (soft.empty()) {
    ctx.add(kMemlock, Verdict::Skip, "RLIMIT_MEMLOCK",
            "no 'Max locked memory' line in /proc/self/limits");
    return;
  }
  ctx.fact("memlock", soft);
  const std::string evidence = "soft limit " + soft + " (Max locked memory, /proc/self/limits)";
  if (soft == "unlimited") {
    ctx.add(kMemlock, Verdict::Pass, "RLIMIT_MEMLOCK", evidence);
    return;
  }
  std::optional<uint64_t> bytes = text::parseUnsigned(soft);
  const std::string shown = bytes ? evidence + " = " + formatBytes(*bytes) : evidence;
  if (!ctx.fabric.rdma) {
    ctx.add(kMemlock, Verdict::Pass, "RLIMIT_MEMLOCK",
            shown + "; no RDMA in use (" + ctx.fabric.why + ")");
    return;
  }
  const std::string fix =
      "unlimited for the job: ulimit -l unlimited; '* - memlock unlimited' in "
      "/etc/security/limits.conf; slurmd with LimitMEMLOCK=infinity (and srun "
      "--propagate=MEMLOCK); docker --ulimit memlock=-1; Kubernetes: the runtime's default ulimits";
  // NCCL's documentation asks for unlimited; below 16 GiB registrations of large buffers fail.
  const bool small = !bytes || *bytes < (16ull << 30);
  ctx.add(kMemlock, small ? Verdict::Fail : Verdict::Warn, "RLIMIT_MEMLOCK",
          shown + "; RDMA registers (locks) NCCL's buffers (" + ctx.fabric.why + ")", fix);
}

void checkCpuGovernor(Context& ctx) {
  std::map<std::string, std::vector<unsigned>> byGovernor;
  size_t cpus = 0;
  for (const std::string& entry : ctx.sysfs.list("/sys/devices/system/cpu")) {
    if (entry.rfind("cpu", 0) != 0) continue;
    std::optional<uint64_t> n = text::parseUnsigned(entry.substr(3));
    if (!n || *n >= (1u << 16)) continue;
    ++cpus;
    std::optional<std::string> governor =
        ctx.sysfs.readLine("/sys/devices/system/cpu/" + entry + "/cpufreq/scaling_governor");
    if (governor) byGovernor[*governor].push_back(static_cast<unsigned>(*n));
  }
  if (byGovernor.empty()) {
    ctx.add(kGovernor, Verdict::Skip, "CPU frequency governor",
            "no cpufreq/scaling_governor under /sys/devices/system/cpu (" + std::to_string(cpus) +
                " CPUs): the firmware or hypervisor sets the frequency");
    return;
  }
  std::string facts;
  for (auto& [governor, list] : byGovernor) {
    std::sort(list.begin(), list.end());
    facts += (facts.empty() ? "" : ",") + governor;
    const std::string evidence = governor + " on " + std::to_string(list.size()) + " of " +
                                 std::to_string(cpus) + " CPUs (first cpu" +
                                 std::to_string(list.front()) +
                                 ", /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor)";
    if (governor == "performance") {
      ctx.add(kGovernor, Verdict::Pass, "CPUs with governor " + governor, evidence);
    } else {
      ctx.add(kGovernor, Verdict::Warn, "CPUs with governor " + governor,
              evidence + ": proxy threads that wake from a low clock add latency to every step",
              "as root: cpupower frequency-set -g performance (or the tuned/BIOS performance "
              "profile)");
    }
  }
  ctx.fact("cpu.governor", facts);
}

}  // namespace pilot::doctor::detail
