// The fake NCCL's side of algorithm selection: which release calls the tuner how, a synthetic
// cost model standing in for ncclTopoGetAlgoTime, and topoGetAlgoInfo's minimum search
// (docs/research/tuner.md §1.2). Tests assert on what NCCL would finally run, not raw cells.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nccl_host_abi.h"

namespace fake {

constexpr int kMaxAlgo = 7;
constexpr int kNumProto = NCCL_NUM_PROTOCOLS;
constexpr unsigned kAllAlgos = (1u << kMaxAlgo) - 1;
constexpr unsigned kAllProtos = (1u << kNumProto) - 1;

/// One NCCL release, as far as its tuner call sites differ.
struct Release {
  const char* name;
  int abi;         ///< the tuner ABI it loads: the newest it knows (the plugin exports all)
  int numAlgo;     ///< NCCL_NUM_ALGORITHMS: 6 until 2.22 (no PAT), 7 from 2.23
  float startMin;  ///< topoGetAlgoInfo's first minimum: 3.6e9 in 2.22-2.28, FLT_MAX from 2.29
  int version;     ///< what its ncclGetVersion reports (a release of that line)
};

/// 2.21 (v2), 2.22 (v3, 6 algorithms), 2.23 (v3), 2.24 and 2.27 (v4), 2.28 and 2.29 (v5),
/// 2.30 and 2.31 (v6), 2.32 (2.32.6, v7).
const std::vector<Release>& allReleases();
/// The releases that hand the tuner a cost table (2.22 and later).
std::vector<Release> costTableReleases();
/// The releases that ask the tuner for a chunk size (tuner ABI v6 and v7: 2.30 and later).
std::vector<Release> chunkReleases();
const Release& release(const std::string& name);

struct Shape {
  size_t nRanks = 16;
  size_t nNodes = 2;
  /// v5+ NVL-domain info (NCCL's min/max local ranks); 0 = nRanks / nNodes.
  int minLocalRanks = 0;
  int maxLocalRanks = 0;
  /// v5+ nNvlDomains; 0 = nNodes (NCCL's one domain per node). 1 over several nodes = MNNVL.
  int nvlDomains = 0;
};

/// What the hardware and the user's NCCL_ALGO / NCCL_PROTO leave usable.
struct Platform {
  bool nvls = false;
  bool collNet = false;
  unsigned algoMask = kAllAlgos;    ///< NCCL_ALGO
  unsigned protoMask = kAllProtos;  ///< NCCL_PROTO
  float scale = 1.0f;               ///< multiplies every modelled time
};

/// NCCL's float[numAlgo][numProto], flat.
struct CostTable {
  int numAlgo = kMaxAlgo;
  float cells[kMaxAlgo * kNumProto] = {};

  float& at(int algo, int proto) { return cells[algo * kNumProto + proto]; }
  float at(int algo, int proto) const { return cells[algo * kNumProto + proto]; }
  int size() const { return numAlgo * kNumProto; }
};

/// Model times in microseconds; IGNORE where the release, the communicator, the collective or
/// the platform rule the cell out.
CostTable modelCosts(const Release& rel, const Shape& shape, const Platform& platform, int coll,
                     size_t nBytes);

struct Choice {
  int algo = -1;
  int proto = -1;
  bool operator==(const Choice& o) const { return algo == o.algo && proto == o.proto; }
  bool operator!=(const Choice& o) const { return !(*this == o); }
};
std::string toString(const Choice& c);

/// topoGetAlgoInfo: the minimum over cells >= 0 below startMin, strict <, so the lowest index
/// wins ties. {-1, -1} when nothing is selectable.
Choice selectMin(const CostTable& table, float startMin);
/// What NCCL would pick if only the masked algorithms and protocols were left usable.
Choice selectWithin(const CostTable& table, float startMin, unsigned algoMask, unsigned protoMask);

}  // namespace fake
