// NCCL releases nccl-pilot serves and the plugin ABI each one takes (the table in
// docs/architecture.md). `version` uses it to say which exported symbol each NCCL loads;
// `explain` uses it to drive the symbol, and build the cost table, that the named NCCL would.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pilot/core/result.h"

namespace pilot::cli {

struct NcclVersion {
  int major = 2;
  int minor = 0;
  int patch = -1;  ///< -1 = not given ("2.28")

  std::string str() const;
};

/// "2.28", "2.28.3" or "2.28.3-1" (NCCL's package suffix). Rejects anything older than 2.21,
/// the first release with a tuner ABI we export, and any major version other than 2.
Expected<NcclVersion> parseNcclVersion(std::string_view text);

/// A row of the served-releases table: NCCL 2.<firstMinor>..2.<lastMinor> loads the newest
/// symbol it knows within these ABI ranges.
struct NcclRelease {
  int firstMinor, lastMinor;
  int tunerMin, tunerMax;
  int netMin, netMax;

  std::string label() const;  ///< "2.21", "2.22-2.23"
};
const std::vector<NcclRelease>& servedReleases();

/// The newest release we know; later 2.x releases are assumed to behave like it.
constexpr int kNewestKnownMinor = 30;

/// The tuner ABI `v` loads from a library that exports every version we build (v2..v6).
int tunerAbiFor(const NcclVersion& v);

/// Newest of `exported` within [lo, hi], or 0 when none is.
int newestWithin(const std::vector<int>& exported, int lo, int hi);

}  // namespace pilot::cli
