// NCCL's cost model for Ring, Tree and PAT (nccl_model.h). Every constant below is a fact read
// from NCCL's src/graph/tuning.cc (v2.27.5-1 .. v2.30.7-1), src/graph/search.cc and
// src/enqueue.cc; the code is ours.
#include "nccl_model.h"

#include <algorithm>
#include <cmath>

namespace sim {
namespace {

constexpr int kTree = 0, kRing = 1, kPat = 6;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;

// Base latency per protocol (LL, LL128, Simple), us: Tree, Ring; PAT's 8 us is its own.
constexpr double kBaseTree[3] = {6.8, 14.0, 8.4};
constexpr double kBaseRing[3] = {6.6, 14.0, 8.4};
constexpr double kBasePat = 8.0;
// Hardware latency per hop, us, per protocol: [NVLink, PCI, network] x [Tree, Ring].
constexpr double kHwTree[3][3] = {{0.6, 1.25, 4.0}, {1.0, 1.9, 4.0}, {5.0, 8.5, 14.0}};
constexpr double kHwRing[3][3] = {{0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}};
constexpr int kNvlink = 0, kPci = 1, kNet = 2;

// Per-channel caps, GB/s, by GPU generation (Volta, Ampere, Hopper, Blackwell) x nodes (1, 2,
// more). llMaxBws' rows are by GPU on one node and by CPU vendor (Intel 0, AMD 1) on several.
constexpr double kLlMax[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double kRingLL128Max[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
constexpr double kTreeLL128Max[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
constexpr double kTreeMax[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};

struct Blackwell {
  double ringLL128[3], treeLL128[3], tree[3];
  int batchColls;  // NCCL_MAX_DEV_WORK_BATCH_COLLS
};

const Blackwell* versionFacts(const std::string& v) {
  static const Blackwell k227 = {{73.4, 73.4, 73.4}, {73.4, 73.4, 58.0}, {77.4, 82.8, 72.0}, 10};
  static const Blackwell k228 = {{73.4, 34.6, 73.4}, {55.6, 31.67, 20.0}, {70.0, 42.8, 24.0}, 10};
  static const Blackwell k229 = {{40.0, 40.0, 40.0}, {55.6, 31.67, 20.0}, {70.0, 42.8, 24.0}, 10};
  static const Blackwell k230 = {{40.0, 40.0, 40.0}, {55.6, 31.67, 20.0}, {70.0, 42.8, 24.0}, 8};
  if (v == "2.27") return &k227;
  if (v == "2.28") return &k228;
  if (v == "2.29") return &k229;
  if (v == "2.30") return &k230;
  return nullptr;
}

// Tree AllReduce bandwidth correction by log2(nBytes / 64), 64 B .. 256 MiB, per protocol.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

/// floor(log2(v)), -1 for 0 (NCCL's log2i).
int floorLog2(uint64_t v) {
  int r = -1;
  while (v != 0) {
    v >>= 1;
    ++r;
  }
  return r;
}

int genIndex(int compCap) {
  return compCap >= 100 ? 3 : compCap >= 90 ? 2 : compCap >= 80 ? 1 : 0;
}

}  // namespace

NcclShape g5Shape(int nodes) {
  NcclShape s;
  s.nodes = nodes;
  s.ranks = nodes;
  return s;
}

std::string checkNcclVersion(const std::string& version) {
  return versionFacts(version) ? "" : "unknown NCCL version " + version + " (2.27 .. 2.30)";
}

NcclCellModel ncclCellModel(const NcclShape& s, int coll, int cell) {
  NcclCellModel m;
  const int a = cell / 3, p = cell % 3;
  const Blackwell* facts = versionFacts(s.nccl);
  if (facts == nullptr || s.ranks <= 1 || s.nodes < 1 || cell < 0 || cell >= 21) return m;
  if (a != kTree && a != kRing && a != kPat) return m;  // CollNet, NVLS: off
  // Which algorithm serves which collective.
  if ((coll == kBroadcast || coll == kReduce) && a != kRing) return m;
  if ((coll == kAllGather || coll == kReduceScatter) && a == kTree) return m;
  if (coll == kAllReduce && a == kPat) return m;
  if (a == kPat) {
    // PAT: Simple only, SM60+, one GPU per node, a host net device.
    if (p != kSimple || s.compCap < 60 || s.nodes != s.ranks || !s.hostNetDevice) return m;
  }
  // LL128 is on by default only up to PXB (PXN on Hopper+), on SM70+.
  if (p == kLL128 && (!s.ll128Path || s.compCap < 70)) return m;

  const int gen = genIndex(s.compCap);
  const int nodeIdx = s.nodes <= 2 ? s.nodes - 1 : 2;
  const int llRow = s.nodes == 1 ? gen : (s.amdCpu ? 1 : 0);
  const double llMax = kLlMax[llRow][nodeIdx];
  const double ringLL128Max = gen == 3 ? facts->ringLL128[nodeIdx] : kRingLL128Max[gen][nodeIdx];
  const double treeLL128Max = gen == 3 ? facts->treeLL128[nodeIdx] : kTreeLL128Max[gen][nodeIdx];
  const double treeMax = gen == 3 ? facts->tree[nodeIdx] : kTreeMax[gen][nodeIdx];
  const double ppn = static_cast<double>(s.ranks) / s.nodes;
  const int ch = s.graphChannels;
  const int nsteps = coll == kAllReduce                               ? 2 * (s.ranks - 1)
                     : (coll == kAllGather || coll == kReduceScatter) ? s.ranks - 1
                                                                      : s.ranks;

  // Bandwidth: bus bandwidth of the graph, then the per-algorithm refinements.
  double bw = ch * s.netGBps;
  if (a == kRing && p == kLL) bw = std::min(llMax, bw * 0.5);
  if (a == kRing && p == kLL128) bw = std::min(bw * 0.92, ch * ringLL128Max);
  if (a == kTree && coll == kAllReduce) bw = std::min(bw * 0.92, ch * treeMax);
  if (a == kTree && p == kLL) bw = std::min(bw / 3.8, llMax);
  if (a == kTree && p == kLL128) {
    bw = std::min(bw * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), ch * treeLL128Max);
  }
  if (a == kTree && s.treePattern) bw *= 0.85;
  if (a == kPat) bw *= 0.75;
  // Bus bandwidth to algorithm bandwidth: not for PAT (AllGather/ReduceScatter off the ring).
  if (a == kRing) bw *= static_cast<double>(s.ranks) / nsteps;
  if (a == kTree) bw *= 0.5;
  m.bandwidthGBps = bw;

  // Latency.
  const int intraHw = s.nvlink ? kNvlink : kPci;
  const double* hwIntra = a == kTree ? kHwTree[intraHw] : kHwRing[intraHw];
  double intraLat = hwIntra[p];  // unused by PAT
  // One GPU per node (always so for PAT): the network latency is fully exposed, Tree's is used.
  double interLat = ppn == 1 || a != kRing ? kHwTree[kNet][p] : kHwRing[kNet][p];
  interLat += s.netLatencyUs;
  if (p == kSimple) interLat += s.netLatencyUs;  // the flush
  if (a == kRing) {
    double lat = kBaseRing[p];
    if (coll == kBroadcast || coll == kReduce) {
      // Not modelled beyond NCCL's same-channels case: one hop of the algorithm's hardware.
      const double* hw = s.nodes == 1 ? hwIntra : kHwRing[kNet];
      lat += hw[p];
    } else {
      double netOverhead = 0;
      if (s.nodes > 1) netOverhead = (s.amdCpu ? 2.0 : 1.0) * (p == kSimple ? 3 : 1);
      intraLat = std::max(intraLat, netOverhead);
      const int interSteps = s.nodes == 1         ? 0
                             : coll == kAllReduce ? 2 * (s.nodes - 1)
                                                  : s.nodes - 1;
      lat += (nsteps - interSteps) * intraLat + interSteps * interLat;
    }
    m.latencyUs = lat;
  } else if (a == kTree) {
    m.latencyUs = kBaseTree[p] + 2 * ((s.ranks / s.nodes - 1) * intraLat +
                                      floorLog2(static_cast<uint64_t>(s.nodes)) * interLat);
  } else {  // PAT
    m.latencyUs =
        kBasePat + floorLog2(static_cast<uint64_t>(s.nodes)) * (interLat / 3.5) + s.ranks * 2.8;
  }
  return m;
}

std::array<float, 21> ncclCostTable(const NcclShape& s, int coll, uint64_t nBytes, int numPipeOps) {
  std::array<float, 21> table;
  table.fill(-1.0f);
  const Blackwell* facts = versionFacts(s.nccl);
  if (facts == nullptr) return table;
  if (s.ranks == 1) {
    table[kRing * 3 + kSimple] = 0.0f;
    return table;
  }
  for (int cell = 0; cell < 21; ++cell) {
    const NcclCellModel m = ncclCellModel(s, coll, cell);
    if (m.bandwidthGBps <= 0) continue;
    const int a = cell / 3, p = cell % 3;
    double bw = m.bandwidthGBps, lat = m.latencyUs;
    const int logSize = floorLog2(nBytes >> 6);
    if (a == kTree && coll == kAllReduce && logSize >= 0 && logSize < 23) {
      bw *= kTreeCorrection[p][logSize];
    }
    // The ring's plateau: Simple AllReduce across nodes once each rank's share per channel
    // reaches 64 B.
    if (a == kRing && p == kSimple && s.nodes > 1 && coll == kAllReduce &&
        nBytes / static_cast<uint64_t>(s.runChannels * s.ranks) >= 64) {
      lat *= s.compCap < 80 ? 1.9 : 1.4;
    }
    // Ring pays its latency per pipelined op; the others per batch of ops.
    const int latCount =
        a == kRing ? numPipeOps : (numPipeOps + facts->batchColls - 1) / facts->batchColls;
    table[static_cast<size_t>(cell)] =
        static_cast<float>(lat * latCount + static_cast<double>(nBytes) / (1000.0 * bw));
  }
  return table;
}

int ncclPick(const std::array<float, 21>& table) {
  int best = -1;
  for (int c = 0; c < 21; ++c) {
    if (table[static_cast<size_t>(c)] >= 0 &&
        (best < 0 || table[static_cast<size_t>(c)] < table[static_cast<size_t>(best)])) {
      best = c;
    }
  }
  return best;
}

}  // namespace sim
