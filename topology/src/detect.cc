// detectMachine (which source to use) and what every source shares: PCIe link spellings,
// cpumap conversions, keeping only the PCI nodes NCCL needs, and the common finishing touches.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>

#include "detect_internal.h"
#include "hwloc_library.h"
#include "pilot/core/text.h"

namespace pilot::topology {
namespace detail {
namespace {

struct Generation {
  double gigatransfers;
  const char* ncclName;
  double gigabytesPerLane;  // after line encoding, as hwloc reports it
};
// NCCL accepts both sysfs spellings; we write the kernel >= 5.7 one (research/topology.md §1.2).
constexpr Generation kGenerations[] = {
    {2.5, "2.5 GT/s PCIe", 0.25},    {5.0, "5.0 GT/s PCIe", 0.5},
    {8.0, "8.0 GT/s PCIe", 0.985},   {16.0, "16.0 GT/s PCIe", 1.969},
    {32.0, "32.0 GT/s PCIe", 3.938}, {64.0, "64.0 GT/s PCIe", 7.563},
};

}  // namespace

int pcieGeneration(std::string_view speed) {
  std::vector<std::string_view> words = text::splitWhitespace(text::trim(speed));
  if (words.size() < 2 || words[1] != "GT/s") return 0;
  std::optional<double> rate = parseDecimal(words[0]);
  if (!rate) return 0;
  for (size_t g = 0; g < std::size(kGenerations); ++g) {
    if (std::fabs(*rate - kGenerations[g].gigatransfers) < 0.01) return static_cast<int>(g) + 1;
  }
  return 0;
}

const char* pcieSpeedName(int generation) {
  if (generation < 1 || generation > static_cast<int>(std::size(kGenerations))) return "";
  return kGenerations[generation - 1].ncclName;
}

PcieLink estimateLinkFromHwloc(double gigabytesPerSecond) {
  // hwloc reports the *current* link rate (an idle GPU may have trained down) and no width, so
  // this is a guess: the (width, generation) whose bandwidth is closest, if within 3%. Equal
  // products (Gen3 x16 = Gen4 x8, Gen4 x16 = Gen5 x8) cannot be told apart: the wider wins.
  PcieLink link;
  if (!(gigabytesPerSecond > 0)) return link;
  double bestError = 0.03;
  for (int width : {16, 8, 4, 2, 1}) {
    for (size_t g = 0; g < std::size(kGenerations); ++g) {
      double expected = width * kGenerations[g].gigabytesPerLane;
      double error = std::fabs(gigabytesPerSecond - expected) / expected;
      if (error <= bestError && (link.width == 0 || error < bestError - 0.001)) {
        link.speed = kGenerations[g].ncclName;
        link.width = width;
        bestError = error;
      }
    }
  }
  return link;
}

const char* compiledArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__powerpc64__)
  return "ppc64";
#else
  return "";
#endif
}

std::string cpumapFromCpus(const std::vector<unsigned>& cpus, size_t words) {
  unsigned highest = 0;
  for (unsigned c : cpus) highest = std::max(highest, c);
  size_t needed = cpus.empty() ? 1 : highest / 32 + 1;
  std::vector<uint32_t> bits(std::max(words, needed), 0);
  for (unsigned c : cpus) bits[c / 32] |= 1u << (c % 32);
  std::string out;
  for (size_t i = bits.size(); i-- > 0;) {
    char word[12];
    std::snprintf(word, sizeof word, "%08x", bits[i]);
    if (!out.empty()) out += ',';
    out += word;
  }
  return out;
}

std::optional<std::vector<unsigned>> parseCpumap(std::string_view cpumap) {
  std::vector<std::string_view> words = text::split(text::trim(cpumap), ',');
  if (words.size() > kMaxCpus / 32) return std::nullopt;
  std::vector<unsigned> cpus;
  for (size_t w = 0; w < words.size(); ++w) {
    std::optional<uint32_t> value = words[w].size() <= 8 ? parseHex(words[w]) : std::nullopt;
    if (!value) return std::nullopt;
    unsigned base = static_cast<unsigned>(words.size() - 1 - w) * 32;
    for (unsigned bit = 0; bit < 32; ++bit) {
      if (*value & (1u << bit)) cpus.push_back(base + bit);
    }
  }
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

std::optional<std::vector<unsigned>> parseCpuList(std::string_view cpulist) {
  std::vector<unsigned> cpus;
  std::string_view trimmed = text::trim(cpulist);
  if (trimmed.empty()) return cpus;
  for (std::string_view range : text::split(trimmed, ',')) {
    std::vector<std::string_view> ends = text::split(range, '-');
    if (ends.size() > 2) return std::nullopt;
    std::optional<uint64_t> lo = text::parseUnsigned(ends[0]);
    std::optional<uint64_t> hi = ends.size() == 2 ? text::parseUnsigned(ends[1]) : lo;
    if (!lo || !hi || *lo > *hi || *hi >= kMaxCpus) return std::nullopt;
    // Repeated ranges must not multiply what a garbage list allocates: no machine lists more
    // CPUs than there are CPU numbers.
    if (cpus.size() + (*hi - *lo + 1) > kMaxCpus) return std::nullopt;
    for (uint64_t c = *lo; c <= *hi; ++c) cpus.push_back(static_cast<unsigned>(c));
  }
  return cpus;
}

std::optional<double> parseDecimal(std::string_view s) {
  s = text::trim(s);
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? "" : s.substr(dot + 1);
  if (whole.empty() || whole.size() > 12 || fraction.size() > 9) return std::nullopt;
  std::optional<uint64_t> w = text::parseUnsigned(whole);
  std::optional<uint64_t> f = fraction.empty() ? 0 : text::parseUnsigned(fraction);
  if (!w || !f) return std::nullopt;
  return static_cast<double>(*w) +
         static_cast<double>(*f) / std::pow(10.0, static_cast<double>(fraction.size()));
}

std::optional<uint32_t> parseHex(std::string_view s) {
  s = text::trim(s);
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 8) return std::nullopt;
  uint32_t value = 0;
  for (char c : s) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (digit < 0) return std::nullopt;
    value = value << 4 | static_cast<uint32_t>(digit);
  }
  return value;
}

std::string nodeGuid(std::string_view colonHex) {
  std::string hex;
  for (char c : text::trim(colonHex)) {
    if (c != ':') hex += c;
  }
  bool allHex = std::all_of(hex.begin(), hex.end(),
                            [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  if (hex.size() != 16 || !allHex) return "";
  return "0x" + text::toLower(hex);
}

std::vector<int> appendKeptPci(const std::vector<PciDraft>& drafts, Machine& machine) {
  const int n = static_cast<int>(drafts.size());
  auto validIndex = [n](int i) { return i >= 0 && i < n; };
  std::vector<bool> keep(drafts.size(), false);
  for (int i = 0; i < n; ++i) {
    if (!drafts[i].wanted) continue;
    for (int p = i, guard = 0; validIndex(p) && !keep[p] && guard <= n; p = drafts[p].node.parent) {
      keep[p] = true;
      ++guard;
    }
  }
  std::vector<std::vector<int>> children(drafts.size());
  std::vector<int> roots;
  for (int i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    int p = drafts[i].node.parent;
    (validIndex(p) ? children[p] : roots).push_back(i);
  }
  auto byBusId = [&](int a, int b) {
    const auto& x = drafts[a].node.busId;
    const auto& y = drafts[b].node.busId;
    if (x.has_value() != y.has_value()) return y.has_value();
    return x && *x < *y;
  };
  for (auto& list : children) std::stable_sort(list.begin(), list.end(), byBusId);

  // Roots (host bridges) have no bus id of their own: order them by their lowest descendant.
  std::vector<std::optional<BusId>> lowest(drafts.size());
  std::function<std::optional<BusId>(int)> lowestBelow = [&](int i) {
    std::optional<BusId> best = drafts[i].node.busId;
    for (int c : children[i]) {
      std::optional<BusId> sub = lowestBelow(c);
      if (sub && (!best || *sub < *best)) best = sub;
    }
    return best;
  };
  for (int r : roots) lowest[r] = lowestBelow(r);
  std::stable_sort(roots.begin(), roots.end(), [&](int a, int b) {
    if (lowest[a].has_value() != lowest[b].has_value()) return lowest[a].has_value();
    return lowest[a] && *lowest[a] < *lowest[b];
  });

  std::vector<int> map(drafts.size(), -1);
  std::function<void(int, int)> emit = [&](int i, int parent) {
    PciNode node = drafts[i].node;
    node.parent = parent;
    bool parentIsHost = parent < 0 || machine.pci[parent].kind == PciKind::HostBridge;
    if (node.kind == PciKind::Switch || node.kind == PciKind::RootPort)
      node.kind = parentIsHost ? PciKind::RootPort : PciKind::Switch;
    map[i] = static_cast<int>(machine.pci.size());
    machine.pci.push_back(std::move(node));
    int self = map[i];
    for (int c : children[i]) emit(c, self);
  };
  for (int r : roots) emit(r, -1);
  return map;
}

void finalizeMachine(Machine& m) {
  // NUMA ids: a host bridge takes the first known id below it, a device reporting -1 takes
  // its nearest ancestor's (sysfs reports per device; hwloc per locality).
  for (size_t i = 0; i < m.pci.size(); ++i) {
    int numa = m.pci[i].numaNode;
    for (int p = m.pci[i].parent; numa >= 0 && p >= 0 && m.pci[p].numaNode < 0; p = m.pci[p].parent)
      m.pci[p].numaNode = numa;
  }
  for (PciNode& node : m.pci) {
    if (node.numaNode < 0 && node.parent >= 0) node.numaNode = m.pci[node.parent].numaNode;
  }

  std::vector<int> knownNuma;
  for (const CpuNode& cpu : m.cpus) {
    if (cpu.numaId >= 0) knownNuma.push_back(cpu.numaId);
  }
  size_t unknown =
      std::count_if(m.pci.begin(), m.pci.end(), [](const PciNode& n) { return n.numaNode < 0; });
  if (unknown > 0 && knownNuma.size() == 1) {
    // Physically true (there is nowhere else to be), and it keeps NCCL away from numaid -1,
    // which has crashed its path search (aws-ofi-nccl PR #873).
    for (PciNode& node : m.pci) {
      if (node.numaNode < 0) node.numaNode = knownNuma[0];
    }
    m.notes.push_back(std::to_string(unknown) + " PCI nodes have NUMA node -1; the machine has " +
                      "one NUMA node, so they are placed on node " + std::to_string(knownNuma[0]));
  }

  // Every NUMA id a PCI root hangs from needs a <cpu> entry.
  for (const PciNode& node : m.pci) {
    if (node.parent >= 0 || m.cpuByNuma(node.numaNode) != nullptr) continue;
    CpuNode cpu;
    if (!m.cpus.empty()) cpu = m.cpus.front();
    cpu.numaId = node.numaNode;
    cpu.affinity.clear();
    if (node.numaNode < 0) {
      // Unknown locality: any CPU will do, so the entry spans them all.
      std::vector<unsigned> all;
      for (const CpuNode& other : m.cpus) {
        auto cpus = parseCpumap(other.affinity);
        if (cpus) all.insert(all.end(), cpus->begin(), cpus->end());
      }
      if (!all.empty()) cpu.affinity = cpumapFromCpus(all, 0);
      m.notes.push_back(
          "PCI devices with unknown NUMA node are placed on a CPU entry with numaid "
          "-1 spanning all CPUs");
    } else {
      m.notes.push_back("PCI devices report NUMA node " + std::to_string(node.numaNode) +
                        ", which has no CPU entry; added one without affinity");
    }
    if (cpu.arch.empty()) cpu.arch = compiledArch();
    m.cpus.push_back(cpu);
  }

  for (const CpuNode& cpu : m.cpus) {
    if (cpu.arch == "x86_64" && cpu.vendor.empty()) {
      // NCCL requires vendor (and family/model for Intel) on x86 <cpu> nodes.
      m.notes.push_back("CPU vendor unknown (x86 needs one in NCCL's topology)");
      break;
    }
  }
  std::stable_sort(m.cpus.begin(), m.cpus.end(), [](const CpuNode& a, const CpuNode& b) {
    if ((a.numaId < 0) != (b.numaId < 0)) return b.numaId < 0;
    return a.numaId < b.numaId;
  });
  auto busOf = [&m](int pci) -> std::optional<BusId> {
    if (pci < 0 || static_cast<size_t>(pci) >= m.pci.size()) return std::nullopt;
    return m.pci[pci].busId;
  };
  std::stable_sort(m.gpus.begin(), m.gpus.end(), [&](const Gpu& a, const Gpu& b) {
    auto x = busOf(a.pci), y = busOf(b.pci);
    if (x.has_value() != y.has_value()) return x.has_value();
    return x && *x < *y;
  });
  std::stable_sort(m.nics.begin(), m.nics.end(), [&](const Nic& a, const Nic& b) {
    auto x = busOf(a.pci), y = busOf(b.pci);
    if (x.has_value() != y.has_value()) return x.has_value();  // virtual NICs last
    if (x && *x != *y) return *x < *y;
    return a.name < b.name;
  });
}

}  // namespace detail

Expected<Machine> detectMachine(const DetectOptions& options,
                                std::shared_ptr<const HwlocLibrary> hwloc) {
  try {
    if (!options.hwlocXml.empty()) {
      if (!options.useHwloc)
        return Error{"hwloc XML " + options.hwlocXml + " given, but hwloc use is switched off"};
      if (!hwloc)
        return Error{"cannot read hwloc XML " + options.hwlocXml +
                     ": hwloc (libhwloc.so.15) is not available"};
      return detectWithHwloc(*hwloc, options);
    }
    SysfsRoot sysfs(options.sysfsRoot);
    std::string why;
    if (!options.useHwloc) {
      why = "hwloc switched off";
    } else if (!hwloc) {
      why = "hwloc (libhwloc.so.15) is not available";
    } else if (options.sysfsRoot.find_first_not_of('/') != std::string::npos) {
      // hwloc reads the running machine; a recorded tree under another root is sysfs' job.
      why = "sysfs root " + options.sysfsRoot + " is not the running machine's";
    } else {
      Expected<Machine> live = detectWithHwloc(*hwloc, options);
      if (live.ok()) return live;
      why = live.error();
    }
    Expected<Machine> machine = detectFromSysfs(sysfs);
    if (machine.ok()) machine->notes.push_back("detected from sysfs alone: " + why);
    return machine;
  } catch (const std::exception& e) {
    return Error{std::string("topology detection failed: ") + e.what()};
  } catch (...) {
    return Error{"topology detection failed with an unknown exception"};
  }
}

}  // namespace pilot::topology
