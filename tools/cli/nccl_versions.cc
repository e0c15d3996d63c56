#include "cli/nccl_versions.h"

#include "pilot/core/text.h"
#include "pilot/tuner/process_facts.h"

namespace pilot::cli {

std::string NcclVersion::str() const {
  std::string s = std::to_string(major) + "." + std::to_string(minor);
  if (patch >= 0) s += "." + std::to_string(patch);
  return s;
}

uint64_t NcclVersion::code() const {
  return tuner::ncclVersionCode(static_cast<unsigned>(major), static_cast<unsigned>(minor),
                                static_cast<unsigned>(patch < 0 ? 0 : patch));
}

NcclVersion withPatch(const NcclVersion& v) {
  if (v.patch >= 0) return v;
  // The newest release of each line (docs/research/nccl-plugin-apis-2026.md §1).
  static constexpr int kNewestPatch[][2] = {
      {21, 5}, {22, 3}, {23, 4}, {24, 3}, {25, 1}, {26, 6},
      {27, 7}, {28, 9}, {29, 7}, {30, 7}, {31, 2}, {32, 7},
  };
  NcclVersion out = v;
  out.patch = 0;
  for (const auto& [minor, patch] : kNewestPatch) {
    if (minor == v.minor) out.patch = patch;
  }
  return out;
}

Expected<NcclVersion> parseNcclVersion(std::string_view text) {
  const std::string shown(text.substr(0, 32));
  auto malformed = [&] {
    return Error{"NCCL version '" + shown + "' is not MAJOR.MINOR[.PATCH] (e.g. 2.28 or 2.28.3)"};
  };
  std::string_view core = text::trim(text);
  // Package versions carry a build suffix ("2.21.5-1"); it never changes the ABI.
  if (size_t dash = core.find('-'); dash != std::string_view::npos) core = core.substr(0, dash);
  std::vector<std::string_view> parts = text::split(core, '.');
  if (parts.size() < 2 || parts.size() > 3) return malformed();
  int numbers[3] = {0, 0, -1};
  for (size_t i = 0; i < parts.size(); ++i) {
    auto n = text::parseUnsigned(parts[i]);
    if (!n || *n > 9999) return malformed();
    numbers[i] = static_cast<int>(*n);
  }
  NcclVersion v{numbers[0], numbers[1], numbers[2]};
  if (v.major != 2) {
    return Error{"NCCL " + v.str() + " is not a 2.x release; nccl-pilot serves NCCL 2.21 to 2." +
                 std::to_string(kNewestKnownMinor)};
  }
  if (v.minor < 21) {
    return Error{
        "NCCL " + v.str() +
        " predates tuner ABI v2, the oldest nccl-pilot exports; it needs NCCL 2.21 or later"};
  }
  return v;
}

std::string NcclRelease::label() const {
  std::string s = "2." + std::to_string(firstMinor);
  if (firstPatch > 0 && lastPatch == 99) return s + "." + std::to_string(firstPatch) + "+";
  if (firstPatch > 0 || lastPatch < 99) {
    return s + "." + std::to_string(firstPatch) + "-" + s + "." + std::to_string(lastPatch);
  }
  if (lastMinor != firstMinor) s += "-2." + std::to_string(lastMinor);
  return s;
}

const std::vector<NcclRelease>& servedReleases() {
  // The tuner columns agree with tuner::ncclVersionsOfTunerAbi (a test checks); 2.32.3 still
  // knows tuner v6 only, 2.32.6 added v7. No net ABI newer than v12 is released.
  // Profiler: v1 2.23, v2 2.24, v3 2.26, v4 2.27, v5 2.28, v6 2.29 (research/
  // nccl-plugin-apis-2026.md §4); each release loads v1 up to its newest.
  static const std::vector<NcclRelease> releases = {
      {21, 21, 2, 2, 5, 8, 0, 0},        {22, 22, 2, 3, 5, 8, 0, 0},
      {23, 23, 2, 3, 5, 8, 1, 1},        {24, 25, 2, 4, 5, 9, 1, 2},
      {26, 26, 2, 4, 6, 10, 1, 3},       {27, 27, 2, 4, 6, 10, 1, 4},
      {28, 28, 2, 5, 6, 11, 1, 5},       {29, 29, 2, 5, 6, 11, 1, 6},
      {30, 30, 2, 6, 6, 12, 1, 6},       {31, 31, 2, 6, 6, 12, 1, 6},
      {32, 32, 2, 6, 6, 12, 1, 6, 0, 5}, {32, 32, 2, 7, 6, 12, 1, 6, 6, 99},
  };
  return releases;
}

int tunerAbiFor(const NcclVersion& v) {
  const int abi = tuner::tunerAbiOf(withPatch(v).code());
  return abi == 0 ? tuner::kOldestTunerAbi : abi;
}

int newestWithin(const std::vector<int>& exported, int lo, int hi) {
  int best = 0;
  for (int v : exported) {
    if (v >= lo && v <= hi && v > best) best = v;
  }
  return best;
}

}  // namespace pilot::cli
