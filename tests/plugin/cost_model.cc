#include "cost_model.h"

#include <cfloat>
#include <stdexcept>

namespace fake {
namespace {

// Latency (us) and bandwidth (GB/s) per algorithm x protocol; 0 bandwidth = no such cell.
// Invented numbers with NCCL's shape: LL wins small messages, Simple wins large ones, Tree
// beats Ring on latency, NVLS/PAT run Simple only.
constexpr float kLatency[kMaxAlgo][kNumProto] = {
    {4, 6, 12}, {5, 8, 14}, {3, 5, 10}, {3.5f, 5.5f, 11}, {0, 0, 9}, {0, 0, 11}, {0, 0, 10}};
constexpr float kBandwidth[kMaxAlgo][kNumProto] = {
    {8, 30, 40}, {10, 40, 60}, {12, 35, 50}, {12, 35, 50}, {0, 0, 80}, {0, 0, 70}, {0, 0, 45}};

bool supported(int algo, int coll, const Shape& s, const Platform& p) {
  const bool allReduce = coll == ncclFuncAllReduce;
  const bool agRs = coll == ncclFuncAllGather || coll == ncclFuncReduceScatter;
  switch (algo) {
    case NCCL_ALGO_TREE:
      return allReduce;
    case NCCL_ALGO_RING:
      return true;
    case NCCL_ALGO_COLLNET_DIRECT:
    case NCCL_ALGO_COLLNET_CHAIN:
      return allReduce && p.collNet;
    case NCCL_ALGO_NVLS:
      return p.nvls && (allReduce || (agRs && s.nNodes == 1));
    case NCCL_ALGO_NVLS_TREE:
      return p.nvls && allReduce && s.nNodes > 1;
    case NCCL_ALGO_PAT:
      return agRs && s.nRanks == s.nNodes;  // one rank per node
  }
  return false;
}

}  // namespace

const std::vector<Release>& allReleases() {
  static const std::vector<Release> kReleases = {
      {"2.21", 2, 6, 3.6e9f, 22105},  {"2.22", 3, 6, 3.6e9f, 22203},
      {"2.23", 3, 7, 3.6e9f, 22304},  {"2.24", 4, 7, 3.6e9f, 22403},
      {"2.27", 4, 7, 3.6e9f, 22707},  {"2.28", 5, 7, 3.6e9f, 22809},
      {"2.29", 5, 7, FLT_MAX, 22907}, {"2.30", 6, 7, FLT_MAX, 23007},
      {"2.31", 6, 7, FLT_MAX, 23102}, {"2.32", 7, 7, FLT_MAX, 23206},
  };
  return kReleases;
}

std::vector<Release> costTableReleases() {
  std::vector<Release> out;
  for (const Release& r : allReleases()) {
    if (r.abi >= 3) out.push_back(r);
  }
  return out;
}

std::vector<Release> chunkReleases() {
  std::vector<Release> out;
  for (const Release& r : allReleases()) {
    if (r.abi >= 6) out.push_back(r);
  }
  return out;
}

const Release& release(const std::string& name) {
  for (const Release& r : allReleases()) {
    if (name == r.name) return r;
  }
  throw std::invalid_argument("no such release: " + name);
}

CostTable modelCosts(const Release& rel, const Shape& shape, const Platform& platform, int coll,
                     size_t nBytes) {
  CostTable t;
  t.numAlgo = rel.numAlgo;
  for (int a = 0; a < t.numAlgo; ++a) {
    for (int p = 0; p < kNumProto; ++p) {
      const bool usable = kBandwidth[a][p] > 0 && supported(a, coll, shape, platform) &&
                          (platform.algoMask & (1u << a)) && (platform.protoMask & (1u << p));
      t.at(a, p) = NCCL_ALGO_PROTO_IGNORE;
      if (!usable) continue;
      const float time = kLatency[a][p] + static_cast<float>(nBytes) / (1000.0f * kBandwidth[a][p]);
      t.at(a, p) = time * platform.scale;
    }
  }
  if (shape.nRanks == 1) {  // NCCL: only Ring/Simple, at no cost
    for (float& c : t.cells) c = NCCL_ALGO_PROTO_IGNORE;
    t.at(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE) = 0.0f;
  }
  return t;
}

std::string toString(const Choice& c) {
  static const char* const kAlgo[] = {"Tree",     "Ring", "CollNetDirect", "CollNetChain", "NVLS",
                                      "NVLSTree", "PAT"};
  static const char* const kProto[] = {"LL", "LL128", "Simple"};
  if (c.algo < 0 || c.proto < 0) return "none";
  return std::string(c.algo < kMaxAlgo ? kAlgo[c.algo] : "?") + "/" +
         (c.proto < kNumProto ? kProto[c.proto] : "?");
}

Choice selectWithin(const CostTable& table, float startMin, unsigned algoMask, unsigned protoMask) {
  Choice best;
  float minTime = startMin;
  for (int a = 0; a < table.numAlgo; ++a) {
    if (!(algoMask & (1u << a))) continue;
    for (int p = 0; p < kNumProto; ++p) {
      const float t = table.at(a, p);
      if (!(protoMask & (1u << p)) || t == NCCL_ALGO_PROTO_IGNORE) continue;
      if (t >= 0.0f && t < minTime) {
        best = {a, p};
        minTime = t;
      }
    }
  }
  return best;
}

Choice selectMin(const CostTable& table, float startMin) {
  return selectWithin(table, startMin, kAllAlgos, kAllProtos);
}

}  // namespace fake
