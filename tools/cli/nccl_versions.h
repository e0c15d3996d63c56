// NCCL releases nccl-pilot serves and the plugin ABI each one takes (the table in
// docs/architecture.md). `version` uses it to say which exported symbol each NCCL loads;
// `explain` uses it to drive the symbol, and build the cost table, that the named NCCL would.
#pragma once

#include <cstdint>
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
  /// NCCL's version code (major * 10000 + minor * 100 + patch); patch must be known.
  uint64_t code() const;
};

/// "2.28" as the newest 2.28 release nccl-pilot knows (2.28.9); a minor newer than any known
/// as its .0. A given patch stays.
NcclVersion withPatch(const NcclVersion& v);

/// "2.28", "2.28.3" or "2.28.3-1" (NCCL's package suffix). Rejects anything older than 2.21,
/// the first release with a tuner ABI we export, and any major version other than 2.
Expected<NcclVersion> parseNcclVersion(std::string_view text);

/// A row of the served-releases table: NCCL 2.<firstMinor>..2.<lastMinor> (patches firstPatch
/// .. lastPatch of a single minor, where a patch release changed the ABI) loads the newest
/// symbol it knows within these ABI ranges.
struct NcclRelease {
  int firstMinor, lastMinor;
  int tunerMin, tunerMax;
  int netMin, netMax;
  int profilerMin, profilerMax;  ///< 0, 0: no profiler interface (before 2.23)
  int firstPatch = 0, lastPatch = 99;

  std::string label() const;  ///< "2.21", "2.22-2.23", "2.32.0-2.32.5", "2.32.6+"
};
const std::vector<NcclRelease>& servedReleases();

/// The newest release we know; later 2.x releases are assumed to behave like it.
constexpr int kNewestKnownMinor = 32;

/// The tuner ABI `v` loads from a library that exports every version we build (v2..v7); a
/// version without a patch is its minor's newest known release (2.32: 2.32.7, v7).
int tunerAbiFor(const NcclVersion& v);

/// Newest of `exported` within [lo, hi], or 0 when none is.
int newestWithin(const std::vector<int>& exported, int lo, int hi);

}  // namespace pilot::cli
