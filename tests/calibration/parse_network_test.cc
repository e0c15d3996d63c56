// The network a run crossed, from NCCL's INFO lines in nccl-tests output and from the
// environment of a -J file: what fit writes as the rules' fabric= key.
#include <gtest/gtest.h>

#include "pilot/calibration/dataset_loader.h"
#include "pilot/calibration/nccl_tests_parser.h"
#include "pilot/calibration/series.h"
#include "pilot/tuner/table.h"
#include "sweep_test_support.h"

namespace pilot::calibration {
namespace {

using test::joined;

std::string log(const std::string& ncclLines) {
  return "# nccl-tests version 2.17.9 nccl-headers=22803 nccl-library=22803\n"
         "# Collective test starting: all_reduce_perf\n"
         "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 "
         "agg iters: 1 validation: 1 graph: 0\n#\n"
         "#  Rank  0 Group  0 Pid   1000 on      nodeA device  0 [0000:10:00] NVIDIA H100\n"
         "#  Rank  1 Group  0 Pid   1001 on      nodeB device  0 [0000:10:00] NVIDIA H100\n" +
         ncclLines +
         "#       size         count      type   redop    root     time   algbw   busbw  #wrong "
         "    time   algbw   busbw  #wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)         "
         "    (us)  (GB/s)  (GB/s)\n"
         "           8             2     float     sum      -1    10.00    0.00    0.00       0 "
         "   10.10    0.00    0.00       0\n"
         "          16             4     float     sum      -1    10.50    0.00    0.00       0 "
         "   10.40    0.00    0.00       0\n"
         "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.0\n";
}

calibration::Run parsed(const std::string& ncclLines) {
  const ParsedOutput out = parseNcclTestsText(log(ncclLines), "x.log");
  EXPECT_EQ(out.runs.size(), 1u) << joined(out.problems);
  return out.runs.empty() ? calibration::Run{} : out.runs[0].run;
}

TEST(ParseNetwork, FabricFromNcclsNetworkLines) {
  const calibration::Run ib = parsed(
      "nodeA:1000:1000 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB "
      "eth0:10.0.0.1<0>\n"
      "nodeA:1000:1000 [0] NCCL INFO Using network IB\nNCCL version 2.28.3+cuda12.9\n");
  EXPECT_FALSE(ib.failed) << joined(ib.problems);
  EXPECT_EQ(ib.network, "IB");
  EXPECT_EQ(ib.fabrics, tuner::bit(Fabric::InfiniBand));
  EXPECT_EQ(ib.ncclVersion, "2.28.3");
  const calibration::Run roce = parsed(
      "h:1:1 [0] NCCL INFO NET/IB : Using [0]rocep1s0f0:1/RoCE [1]rocep1s0f1:1/RoCE ; OOB "
      "eth0:10.0.0.1<0>\nh:1:1 [0] NCCL INFO Using network IB\n");
  EXPECT_EQ(roce.fabrics, tuner::bit(Fabric::RoCE));
  // IB without the device list: RDMA, link layer unknown.
  EXPECT_EQ(parsed("h:1:1 [0] NCCL INFO Using network IB\n").fabrics,
            tuner::bit(Fabric::InfiniBand) | tuner::bit(Fabric::RoCE));
  // NCCL's sockets and ours are both TCP: ethernet.
  const calibration::Run socket = parsed(
      "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
      "h:1:1 [0] NCCL INFO Using network Socket\n");
  EXPECT_EQ(socket.network, "Socket");
  EXPECT_EQ(socket.fabrics, tuner::bit(Fabric::Ethernet));
  EXPECT_EQ(parsed("h:1:1 [0] NCCL INFO Using network Pilot\n").fabrics,
            tuner::bit(Fabric::Ethernet));
  // A third-party net plugin says nothing the fabric= key can be sure of.
  const calibration::Run efa = parsed("h:1:1 [0] NCCL INFO Using network AWS Libfabric\n");
  EXPECT_EQ(efa.network, "AWS Libfabric");
  EXPECT_EQ(efa.fabrics, 0);
  // No line at all: unknown.
  EXPECT_EQ(parsed("").fabrics, 0);
  EXPECT_EQ(parsed("").network, "");
}

TEST(ParseNetwork, FabricFromAJsonEnvironment) {
  auto json = [](const std::string& env) {
    return "{\"args\": [\"all_reduce_perf\"], \"env\": [" + env +
           "], \"config\": {\"devices\": [{\"hostname\": \"a\"}, {\"hostname\": \"b\"}]}, "
           "\"results\": [{\"size\": 8, \"count\": 2, \"type\": \"float\", \"redop\": \"sum\", "
           "\"root\": -1, \"out_of_place\": {\"time\": 10.0, \"alg_bw\": 0, \"bus_bw\": 0, "
           "\"nwrong\": 0}}], \"out_of_bounds\": {\"okay\": true}}";
  };
  auto fabrics = [&](const std::string& env) {
    const ParsedOutput out = parseNcclTestsJson(json(env), "x.json");
    EXPECT_EQ(out.runs.size(), 1u) << joined(out.problems);
    return out.runs.empty() ? -1 : out.runs[0].run.fabrics;
  };
  EXPECT_EQ(fabrics("\"NCCL_IB_DISABLE=1\""), tuner::bit(Fabric::Ethernet));
  EXPECT_EQ(fabrics("\"NCCL_NET=Socket\""), tuner::bit(Fabric::Ethernet));
  EXPECT_EQ(fabrics("\"NCCL_IB_DISABLE=0\""), 0);  // the ports decide, unseen here
  EXPECT_EQ(fabrics("\"NCCL_NET=IB\""), 0);
  EXPECT_EQ(fabrics("\"PATH=/bin\""), 0);
}

TEST(ParseNetwork, ShapesAgreeOrStayUnknown) {
  Dataset data;
  for (const std::string& lines :
       {std::string("h:1:1 [0] NCCL INFO Using network Socket\n"), std::string("")}) {
    addOutput(data, log(lines), "x.log", "x.log", LoadOptions{{*parseLabelRule("*=default")}});
  }
  finishDataset(data);
  ASSERT_EQ(data.runs.size(), 2u);
  const Measurements m = summarize(data);
  ASSERT_EQ(m.shapes.size(), 1u);
  EXPECT_EQ(m.shapes[0].fabrics, 0);  // one run does not say: the shape does not know
  EXPECT_NE(datasetJson(data, false).find("\"fabric\": \"ethernet\""), std::string::npos);
}

}  // namespace
}  // namespace pilot::calibration
