#include "cli/nccl_versions.h"

#include "pilot/core/text.h"

namespace pilot::cli {

std::string NcclVersion::str() const {
  std::string s = std::to_string(major) + "." + std::to_string(minor);
  if (patch >= 0) s += "." + std::to_string(patch);
  return s;
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
  if (lastMinor != firstMinor) s += "-2." + std::to_string(lastMinor);
  return s;
}

const std::vector<NcclRelease>& servedReleases() {
  static const std::vector<NcclRelease> releases = {
      {21, 21, 2, 2, 5, 8},  {22, 23, 2, 3, 5, 8},  {24, 25, 2, 4, 5, 9},
      {26, 27, 2, 4, 6, 10}, {28, 29, 2, 5, 6, 11}, {30, 30, 2, 6, 6, 12},
  };
  return releases;
}

int tunerAbiFor(const NcclVersion& v) {
  for (const NcclRelease& r : servedReleases()) {
    if (v.minor >= r.firstMinor && v.minor <= r.lastMinor) return r.tunerMax;
  }
  return servedReleases().back().tunerMax;  // newer than anything we know
}

int newestWithin(const std::vector<int>& exported, int lo, int hi) {
  int best = 0;
  for (int v : exported) {
    if (v >= lo && v <= hi && v > best) best = v;
  }
  return best;
}

}  // namespace pilot::cli
