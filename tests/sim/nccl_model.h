// NCCL's own cost model (issue 29, item 1): the cost table NCCL 2.27-2.30 fills before it calls
// a tuner's getCollInfo, for Ring, Tree and PAT, from a few facts about the machine.
//
// Written from the facts of NCCL's src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime,
// ncclPatEnable, getNetOverhead), src/graph/search.cc (ncclTopoCompute: a graph of one GPU per
// node has the TREE pattern; speedArrayInter; the net's latency) and src/enqueue.cc
// (updateCollCostTable, topoGetAlgoInfo), tags v2.27.5-1 .. v2.30.7-1. No NCCL code is copied.
//
// What differs between the versions for these three algorithms (git diff of tuning.cc):
//   - Volta, Ampere and Hopper constants: identical 2.27 .. 2.30.
//   - Blackwell (sm >= 100): Ring/LL128 per-channel cap 73.4 (2.27, 2.28.3), 73.4/34.6/73.4
//     (2.28.9), 34.5/34.6/34.5 (2.29.2), 40 (2.29.7, 2.30); Tree/LL128 cap 73.4/73.4/58 (2.27) ->
//     55.6/31.67/20 (2.28+); Tree cap 77.4/82.8/72 (2.27) -> 70/42.8/24 (2.28+). "2.28" here is
//     2.28.9, "2.29" is 2.29.7.
//   - NCCL_MAX_DEV_WORK_BATCH_COLLS (device.h: 1024 B / sizeof(ncclDevWorkColl)): 10 up to 2.29
//     (96 B), 8 in 2.30 (128 B). It divides the latency count of non-ring algorithms.
//   - PAT's 8 us base moved from the latency formula into the base-latency table in 2.28: same
//     value.
// CollNet and NVLS are not modelled: their cells are always -1 (CollNet off, no NVSwitch: a TCP
// cluster of PCIe GPUs).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace sim {

/// The machine as NCCL's tuning model sees it. Defaults: AWS g5.xlarge (see g5Shape()).
struct NcclShape {
  int nodes = 2;       ///< comm->nNodes
  int ranks = 2;       ///< comm->nRanks
  int compCap = 86;    ///< the GPUs' SM version (minCompCap = maxCompCap), 86 = A10G
  bool amdCpu = true;  ///< CPU vendor AMD (else Intel): picks llMaxBws' row and the net overhead
  /// Bandwidth per channel of the graphs NCCL searched, GB/s: bwIntra = bwInter (one NIC per
  /// GPU). NCCL takes the largest entry of its speed list not above the NIC's speed: a NIC
  /// reporting no speed is a 10 Gbps NIC to NCCL (1.25 GB/s), hence 1.2.
  double netGBps = 1.2;
  int graphChannels = 1;  ///< the graphs' nChannels (one NIC of 1.2 GB/s carries one channel)
  int runChannels = 2;    ///< comm->nChannels (the ring plateau test), the graph's doubled
  /// The GPU-NIC path lets NCCL enable LL128 by default: PXB or better (PXN for sm >= 90).
  /// false = the path crosses the CPU (PHB, SYS): NCCL disables LL128.
  bool ll128Path = false;
  /// comm->maxTreePattern is NCCL_TOPO_PATTERN_TREE (all NIC traffic through one GPU): Tree
  /// bandwidth x 0.85. ncclTopoCompute forces TREE when a node has one GPU.
  bool treePattern = true;
  bool nvlink = false;  ///< intra-node links are NVLink (else PCI): the intra-node latencies
  /// The network's latency, us (graph->latencyInter, the net plugin's props.latency): 0 for
  /// NCCL's Socket and IB transports.
  double netLatencyUs = 0;
  /// The net device is the host (not a device-offload net): PAT is possible.
  bool hostNetDevice = true;
  std::string nccl = "2.27";  ///< "2.27", "2.28", "2.29" or "2.30"
};

/// AWS g5.xlarge: 1 A10G (sm86) per node, AMD EPYC, ENA without RDMA (NCCL's Socket transport),
/// no NIC speed reported (10 Gbps assumed: 1 channel of 1.2 GB/s; 2 at run time), PHB path.
NcclShape g5Shape(int nodes = 2);

/// NCCL's latency (us) and bandwidth (GB/s) of one cell, as ncclTopoTuneModel leaves them;
/// bandwidth 0 = disabled.
struct NcclCellModel {
  double latencyUs = 0, bandwidthGBps = 0;
};
NcclCellModel ncclCellModel(const NcclShape& shape, int collType, int cell);

/// The cost table NCCL passes to the tuner (us per cell = algo * 3 + proto; -1 = NCCL disables
/// the cell) for one collective of `nBytes` (ncclFunc index: Broadcast 0, Reduce 1, AllGather 2,
/// ReduceScatter 3, AllReduce 4; AllGather/ReduceScatter bytes are the total, as NCCL's nBytes).
std::array<float, 21> ncclCostTable(const NcclShape& shape, int collType, uint64_t nBytes,
                                    int numPipeOps = 1);

/// NCCL's minimum search (topoGetAlgoInfo): the first cell with the strictly smallest cost >= 0;
/// -1 when none.
int ncclPick(const std::array<float, 21>& table);

/// "" when `version` is one the model knows, else why not.
std::string checkNcclVersion(const std::string& version);

}  // namespace sim
