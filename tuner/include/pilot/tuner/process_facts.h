// What a rule's `fabric=` and `nccl=` keys are matched against: facts of the whole process,
// handed to the tuner by plugin/ (which detects the fabric with topology/ and reads the running
// NCCL's version), and which NCCL release loads which tuner ABI.
//
// Every rank must take the same decision or the job hangs (NVIDIA/nccl #1136, #1184: ranks that
// chose different algorithms). Besides the table itself and the communicator's shape (which
// NCCL gives every rank alike), these facts are the only inputs that change which rules apply,
// and each node reads them for itself: the RDMA ports under /sys, the environment, the NCCL
// library in the process. They agree on every node of a homogeneous job. A job whose nodes
// differ in them (one node's IB ports down, another NCCL build in one container, NCCL_IB_DISABLE
// set on some nodes) would apply different rules on different nodes, which is why the tuner
// logs them at init: compare the `TUNER/Pilot` lines of two nodes to find the odd one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pilot/core/fabric.h"
#include "pilot/tuner/table.h"

namespace pilot::tuner {

struct ProcessFacts {
  /// The fabric NCCL's inter-node data crosses; nullopt = not known, and rules with fabric=
  /// never match.
  std::optional<Fabric> fabric;
  std::string fabricWhy;  ///< for the log: the port that decided, or why there is no RDMA
  /// The running NCCL's version code: one version when it could be read, else the releases the
  /// tuner ABI in use implies (any = nothing known). A rule with nccl= matches only when its
  /// range holds all of these.
  Range nccl;
  std::string ncclWhy;  ///< for the log: where the version came from

  /// Orders by fabric and NCCL versions only (what compile() reads).
  bool operator<(const ProcessFacts& o) const;
};

/// A rule's fabric= key holds for these facts (true when the rule has none).
bool fabricAdmits(const Rule& rule, const ProcessFacts& facts);
/// A rule's nccl= key holds for these facts (true when the rule has none).
bool ncclAdmits(const Rule& rule, const ProcessFacts& facts);

/// Tuner ABI versions this library exports; NCCL loads the newest it knows.
constexpr int kOldestTunerAbi = 2, kNewestTunerAbi = 7;

/// The NCCL releases that load tuner ABI `abi` as their newest (research/tuner.md §1.1, the
/// 2.32.6 release notes): v2 2.21, v3 2.22-2.23, v4 2.24-2.27, v5 2.28-2.29, v6 2.30.0-2.32.5,
/// v7 2.32.6 and later. Any for an ABI outside v2..v7.
Range ncclVersionsOfTunerAbi(int abi);
/// The tuner ABI NCCL `versionCode` loads from a library that exports v2..v7; 0 before 2.21.
int tunerAbiOf(uint64_t versionCode);

/// "2.32.6" for 23206.
std::string formatNcclVersion(uint64_t versionCode);
/// "2.32.6", "2.30.0-2.32.5", "2.32.6 and later", "any".
std::string formatNcclVersions(const Range& versions);

}  // namespace pilot::tuner
