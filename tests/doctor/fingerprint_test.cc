// The majority comparison of node fingerprints: one outlier among many, facts a node lacks,
// splits without a majority, and two nodes (no majority can be told).
#include "pilot/doctor/fingerprint.h"

#include <gtest/gtest.h>

#include "test_support.h"

namespace pilot::doctor {
namespace {

Fingerprint node(const std::string& name, std::map<std::string, std::string> facts) {
  return Fingerprint{name, std::move(facts), {}};
}

std::map<std::string, std::string> healthyFacts() {
  return {{"nccl.version", "2.28.9"},
          {"driver.nvidia", "550.54.15"},
          {"rdma.mlx5_0:1", "ACTIVE 400 Gb/sec (4X NDR) InfiniBand"},
          {"status.pcie-acs", "PASS"}};
}

TEST(Fingerprint, OneOutlierIsNamedWithEveryFactItDiffersIn) {
  std::vector<Fingerprint> nodes;
  for (const char* n : {"node-a", "node-b", "node-c", "node-d"})
    nodes.push_back(node(n, healthyFacts()));
  auto odd = healthyFacts();
  odd["nccl.version"] = "2.27.3";
  odd["status.pcie-acs"] = "FAIL";
  odd.erase("rdma.mlx5_0:1");
  nodes.push_back(node("node-e", odd));
  const Comparison c = compareFingerprints(nodes);
  EXPECT_EQ(c.nodes, 5);
  EXPECT_TRUE(c.splits.empty());
  ASSERT_EQ(c.differences.size(), 3u);
  EXPECT_EQ(c.oddNodes(), std::vector<std::string>{"node-e"});
  EXPECT_EQ(c.differences[0].key, "nccl.version");
  EXPECT_EQ(c.differences[0].value, "2.27.3");
  EXPECT_EQ(c.differences[0].majority, "2.28.9");
  EXPECT_EQ(c.differences[0].majorityNodes, 4);
  EXPECT_EQ(c.differences[1].key, "rdma.mlx5_0:1");
  EXPECT_EQ(c.differences[1].value, "(absent)");
  EXPECT_EQ(c.differences[2].key, "status.pcie-acs");
  EXPECT_EQ(c.differences[2].value, "FAIL");
}

TEST(Fingerprint, AgreeingNodesGiveNothing) {
  const Comparison c = compareFingerprints(
      {node("a", healthyFacts()), node("b", healthyFacts()), node("c", healthyFacts())});
  EXPECT_TRUE(c.differences.empty());
  EXPECT_TRUE(c.splits.empty());
  EXPECT_TRUE(c.oddNodes().empty());
}

TEST(Fingerprint, AnEvenSplitHasNoMajority) {
  auto other = healthyFacts();
  other["driver.nvidia"] = "535.161.08";
  const Comparison c = compareFingerprints(
      {node("a", healthyFacts()), node("b", healthyFacts()), node("c", other), node("d", other)});
  EXPECT_TRUE(c.differences.empty());
  ASSERT_EQ(c.splits.size(), 1u);
  EXPECT_EQ(c.splits[0].key, "driver.nvidia");
  ASSERT_EQ(c.splits[0].groups.size(), 2u);
  EXPECT_EQ(c.splits[0].groups[0].first, "535.161.08");
  EXPECT_EQ(c.splits[0].groups[0].second, (std::vector<std::string>{"c", "d"}));
}

TEST(Fingerprint, TwoNodesCannotOutvoteEachOther) {
  auto other = healthyFacts();
  other["nccl.version"] = "2.27.3";
  const Comparison c = compareFingerprints({node("a", healthyFacts()), node("b", other)});
  EXPECT_TRUE(c.differences.empty());
  ASSERT_EQ(c.splits.size(), 1u);
  EXPECT_EQ(c.splits[0].key, "nccl.version");
}

TEST(Fingerprint, DigestIsStable) {
  EXPECT_EQ(contentDigest(""), "fnv1a64:cbf29ce484222325");
  EXPECT_EQ(contentDigest("a"), "fnv1a64:af63dc4c8601ec8c");
  EXPECT_NE(contentDigest("ab"), contentDigest("ba"));
}

TEST(Fingerprint, RunDoctorGathersTheFactsNodesAreComparedOn) {
  const DoctorReport r = testing::runOn("baremetal-faulty", {{"NCCL_IB_HCA", "mlx5"}});
  EXPECT_EQ(r.facts.at("kernel"), "6.1.0-18-amd64");
  EXPECT_EQ(r.facts.at("driver.nvidia"), "550.54.15");
  EXPECT_EQ(r.facts.at("env.NCCL_IB_HCA"), "mlx5");
  EXPECT_EQ(r.facts.at("topology.gpus"), "2");
  EXPECT_EQ(r.facts.at("topology.pairs"), "GPU0->mlx5_0 PIX, GPU1->mlx5_2 PIX");
  EXPECT_EQ(r.facts.at("status.pcie-acs"), "FAIL");
  EXPECT_EQ(r.facts.at("status.roce"), "SKIP");
  const DoctorReport repaired = testing::runOn("baremetal-repaired", {{"NCCL_IB_HCA", "mlx5"}});
  EXPECT_EQ(repaired.facts.at("topology.pairs"), "GPU0->mlx5_0 PIX, GPU1->mlx5_1+mlx5_2 PIX");
  EXPECT_NE(repaired.facts.at("topology.digest"), r.facts.at("topology.digest"));
  EXPECT_EQ(repaired.facts.at("status.pcie-acs"), "PASS");
}

}  // namespace
}  // namespace pilot::doctor
