#include "pilot/tuner/process_facts.h"

#include <iterator>
#include <limits>
#include <tuple>

namespace pilot::tuner {
namespace {

constexpr uint64_t kNoLaterRelease = std::numeric_limits<uint64_t>::max();

/// The first release that loads each ABI as its newest. 2.32 is split: 2.32.3 knows v6 only,
/// 2.32.6 added v7.
struct FirstRelease {
  int abi;
  uint64_t version;
};
constexpr FirstRelease kFirst[] = {
    {2, ncclVersionCode(2, 21)}, {3, ncclVersionCode(2, 22)}, {4, ncclVersionCode(2, 24)},
    {5, ncclVersionCode(2, 28)}, {6, ncclVersionCode(2, 30)}, {7, ncclVersionCode(2, 32, 6)},
};
constexpr size_t kReleases = std::size(kFirst);

}  // namespace

bool ProcessFacts::operator<(const ProcessFacts& o) const {
  return std::tie(fabric, nccl.lo, nccl.hi) < std::tie(o.fabric, o.nccl.lo, o.nccl.hi);
}

bool fabricAdmits(const Rule& rule, const ProcessFacts& facts) {
  if (rule.fabrics == 0) return true;
  return facts.fabric.has_value() && (rule.fabrics & bit(*facts.fabric)) != 0;
}

bool ncclAdmits(const Rule& rule, const ProcessFacts& facts) {
  if (rule.ncclVersions.any()) return true;
  return rule.ncclVersions.lo <= facts.nccl.lo && facts.nccl.hi <= rule.ncclVersions.hi;
}

Range ncclVersionsOfTunerAbi(int abi) {
  for (size_t i = 0; i < kReleases; ++i) {
    if (kFirst[i].abi != abi) continue;
    return Range{kFirst[i].version,
                 i + 1 < kReleases ? kFirst[i + 1].version - 1 : kNoLaterRelease};
  }
  return Range{};
}

int tunerAbiOf(uint64_t versionCode) {
  int abi = 0;
  for (const FirstRelease& f : kFirst) {
    if (versionCode >= f.version) abi = f.abi;
  }
  return abi;
}

std::string formatNcclVersion(uint64_t code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

std::string formatNcclVersions(const Range& r) {
  if (r.any()) return "any";
  if (r.lo == r.hi) return formatNcclVersion(r.lo);
  if (r.hi == kNoLaterRelease) return formatNcclVersion(r.lo) + " and later";
  if (r.lo == 0) return "up to " + formatNcclVersion(r.hi);
  return formatNcclVersion(r.lo) + "-" + formatNcclVersion(r.hi);
}

}  // namespace pilot::tuner
