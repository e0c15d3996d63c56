// NCCL's cost model (nccl_model.h) against a real NCCL's own table: the latencies and
// bandwidths NCCL 2.28.9 printed (NCCL_DEBUG_SUBSYS=TUNING, ncclTopoTuneModel) on the H200 that
// tests/gpu ran (tests/gpu/recorded/h200-nccl2.28.9-4ranks: 4 ranks, each its own node
// (NCCL_HOSTID), NCCL's Socket transport over lo, which reports no speed: one graph channel of
// 1.2 GB/s, the GPU-NIC path PHB). The issue-29 check a lent GPU makes, on its recorded log.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "nccl_model.h"

namespace sim {
namespace {

/// NCCL's printed table: collective name -> 21 cells of (latency, bandwidth), in NCCL's order
/// (the blocks of three algorithms it prints one after the other).
using Printed = std::map<std::string, std::vector<std::pair<double, double>>>;

Printed readTuningTable(const std::string& path) {
  Printed out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t info = line.find("NCCL INFO ");
    if (info == std::string::npos) continue;
    std::string rest = line.substr(info + 10);
    const size_t bar = rest.find('|');
    if (bar == std::string::npos) continue;
    std::string name = rest.substr(0, bar);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (name != "Broadcast" && name != "Reduce" && name != "AllGather" && name != "ReduceScatter" &&
        name != "AllReduce") {
      continue;
    }
    std::istringstream cells(rest.substr(bar + 1));
    std::string cell;
    while (std::getline(cells, cell, '|')) {
      double lat = 0, bw = 0;
      char slash = 0;
      std::istringstream c(cell);
      if (c >> lat >> slash >> bw && slash == '/') out[name].push_back({lat, bw});
    }
  }
  return out;
}

TEST(NcclModelRecorded, ReproducesNccl2289sOwnTableOnTheH200) {
  const std::string log =
      std::string(PILOT_GPU_RECORDED) + "/h200-nccl2.28.9-4ranks/baseline/rank0.nccl.log";
  const Printed printed = readTuningTable(log);
  ASSERT_EQ(printed.size(), 5u) << log;
  NcclShape h200;
  h200.nodes = 4;
  h200.ranks = 4;
  h200.compCap = 90;
  h200.nccl = "2.28";
  const std::map<std::string, int> colls = {
      {"Broadcast", 0}, {"Reduce", 1}, {"AllGather", 2}, {"ReduceScatter", 3}, {"AllReduce", 4}};
  int compared = 0;
  for (const auto& [name, coll] : colls) {
    const auto& cells = printed.at(name);
    ASSERT_EQ(cells.size(), 21u) << name;
    for (int cell = 0; cell < 21; ++cell) {
      const int algo = cell / 3;
      if (algo != 0 && algo != 1 && algo != 6) continue;  // Tree, Ring, PAT: what it models
      SCOPED_TRACE(testing::Message() << name << " cell " << cell);
      const NcclCellModel m = ncclCellModel(h200, coll, cell);
      const auto [lat, bw] = cells[static_cast<size_t>(cell)];
      // NCCL prints "%8.1f/%6.1f"; it prints a latency for cells it then disables too.
      EXPECT_EQ(bw == 0.0, m.bandwidthGBps == 0.0)
          << "bandwidth " << bw << " vs " << m.bandwidthGBps;
      if (bw == 0.0) continue;
      EXPECT_NEAR(m.latencyUs, lat, 0.051);
      EXPECT_NEAR(m.bandwidthGBps, bw, 0.051);
      ++compared;
    }
  }
  // Ring LL/Simple of all five, Tree LL/Simple of AllReduce, PAT Simple of AllGather and
  // ReduceScatter.
  EXPECT_EQ(compared, 14);
}

}  // namespace
}  // namespace sim
