// applyToCostTable / applyV2: what a matching rule writes into what NCCL hands the tuner.
#include "pilot/tuner/decision.h"

#include <gtest/gtest.h>

#include <vector>

#include "test_support.h"

namespace pilot::tuner {
namespace {

using test::CostTable;
using test::idx;
using test::parseOne;

/// Every cell except the listed ones still holds its original value.
void expectUnchangedExcept(const CostTable& before, const CostTable& after,
                           const std::vector<std::pair<int, int>>& changed) {
  for (int a = 0; a < before.numAlgo(); ++a) {
    for (int p = 0; p < before.numProto(); ++p) {
      bool listed = false;
      for (auto [ca, cp] : changed) listed |= (ca == a && cp == p);
      if (!listed) {
        EXPECT_EQ(after.at(a, p), before.at(a, p)) << "cell " << a << "," << p;
      }
    }
  }
  EXPECT_TRUE(after.guardsIntact());
}

// ---- select ------------------------------------------------------------------------------

TEST(ApplyToCostTable, SelectWritesZeroIntoAUsableCell) {
  CostTable table(7, 3), before = table;
  int nChannels = 0;
  Rule rule = parseOne("allreduce algo=ring proto=simple");
  EXPECT_EQ(applyToCostTable(rule, table.view(), &nChannels), Outcome::Applied);
  EXPECT_EQ(table.at(kRing, kSimple), 0.0f);
  expectUnchangedExcept(before, table, {{kRing, kSimple}});
  EXPECT_EQ(nChannels, 0);
}

TEST(ApplyToCostTable, SelectingACellThatAlreadyCostsZeroIsApplied) {
  CostTable table(7, 3);
  table.at(kTree, kLL) = 0.0f;
  EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=tree proto=ll"), table.view(), nullptr),
            Outcome::Applied);
  EXPECT_EQ(table.at(kTree, kLL), 0.0f);
}

TEST(ApplyToCostTable, SelectingAnIgnoredCellIsNotApplicableAndWritesNothing) {
  CostTable table(7, 3);
  table.at(kRing, kSimple) = kIgnoreCost;
  CostTable before = table;
  int nChannels = 7;
  Rule rule = parseOne("allreduce algo=ring proto=simple channels=4");
  EXPECT_EQ(applyToCostTable(rule, table.view(), &nChannels), Outcome::NotApplicable);
  EXPECT_EQ(table.raw(), before.raw());
  EXPECT_EQ(nChannels, 7);
}

TEST(ApplyToCostTable, AnyNegativeCostIsIgnored) {
  CostTable table(7, 3);
  table.at(kTree, kLL128) = -0.5f;
  CostTable before = table;
  EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=tree proto=ll128"), table.view(), nullptr),
            Outcome::NotApplicable);
  EXPECT_EQ(table.raw(), before.raw());
}

TEST(ApplyToCostTable, PatOnASixAlgorithmTableIsNotApplicable) {
  // NCCL <= 2.22: float[6][3]; cells past it belong to someone else.
  CostTable table(6, 3), before = table;
  int nChannels = 0;
  Rule rule = parseOne("allreduce algo=pat proto=simple channels=2");
  EXPECT_EQ(applyToCostTable(rule, table.view(), &nChannels), Outcome::NotApplicable);
  EXPECT_EQ(table.raw(), before.raw());
  EXPECT_TRUE(table.guardsIntact());
  EXPECT_EQ(nChannels, 0);
}

TEST(ApplyToCostTable, PatOnlyRestrictionOnASixAlgorithmTableIsNotApplicable) {
  CostTable table(6, 3), before = table;
  EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=pat"), table.view(), nullptr),
            Outcome::NotApplicable);
  EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=pat proto=ll|simple"), table.view(), nullptr),
            Outcome::NotApplicable);
  EXPECT_EQ(table.raw(), before.raw());
}

TEST(ApplyToCostTable, RestrictionNamingPatOnASixAlgorithmTableStaysInBounds) {
  CostTable table(6, 3), before = table;
  EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=ring|pat"), table.view(), nullptr),
            Outcome::Applied);
  for (int a = 0; a < 6; ++a) {
    for (int p = 0; p < 3; ++p) {
      const float want = a == kRing ? before.at(a, p) : kIgnoreCost;
      EXPECT_EQ(table.at(a, p), want) << a << "," << p;
    }
  }
  EXPECT_TRUE(table.guardsIntact());
}

TEST(ApplyToCostTable, PatOnASevenAlgorithmTableIsSelected) {
  CostTable table(7, 3), before = table;
  EXPECT_EQ(applyToCostTable(parseOne("allgather algo=pat proto=simple"), table.view(), nullptr),
            Outcome::Applied);
  EXPECT_EQ(table.at(kPat, kSimple), 0.0f);
  expectUnchangedExcept(before, table, {{kPat, kSimple}});
}

TEST(ApplyToCostTable, FewerProtocolsThanThree) {
  CostTable table(7, 2), before = table;
  // Simple (index 2) does not exist in a 2-protocol table.
  EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=ring proto=simple"), table.view(), nullptr),
            Outcome::NotApplicable);
  EXPECT_EQ(applyToCostTable(parseOne("allreduce proto=simple"), table.view(), nullptr),
            Outcome::NotApplicable);
  EXPECT_EQ(table.raw(), before.raw());

  EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=ring proto=ll128"), table.view(), nullptr),
            Outcome::Applied);
  EXPECT_EQ(table.at(kRing, kLL128), 0.0f);
  expectUnchangedExcept(before, table, {{kRing, kLL128}});

  CostTable one(7, 1), oneBefore = one;
  EXPECT_EQ(applyToCostTable(parseOne("allreduce proto=ll|simple"), one.view(), nullptr),
            Outcome::Applied);
  EXPECT_EQ(one.raw(), oneBefore.raw());  // LL is the only column and it is allowed
  EXPECT_EQ(applyToCostTable(parseOne("allreduce proto=ll128|simple"), one.view(), nullptr),
            Outcome::NotApplicable);
  EXPECT_EQ(one.raw(), oneBefore.raw());
  EXPECT_TRUE(one.guardsIntact());
}

TEST(ApplyToCostTable, WiderTablesKeepCellsPastTheKnownOnes) {
  // A future NCCL with more algorithms/protocols: only the 7 x 3 cells we know are touched, and
  // the row stride is NCCL's numProto.
  CostTable table(8, 4), before = table;
  EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=ring proto=simple"), table.view(), nullptr),
            Outcome::Applied);
  EXPECT_EQ(table.at(kRing, kSimple), 0.0f);
  expectUnchangedExcept(before, table, {{kRing, kSimple}});

  CostTable wide(8, 4), wideBefore = wide;
  EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=ring"), wide.view(), nullptr),
            Outcome::Applied);
  for (int a = 0; a < 8; ++a) {
    for (int p = 0; p < 4; ++p) {
      bool known = a < kNumAlgorithms && p < kNumProtocols;
      const float want = known && a != kRing ? kIgnoreCost : wideBefore.at(a, p);
      EXPECT_EQ(wide.at(a, p), want) << a << "," << p;
    }
  }
}

// ---- restrict ----------------------------------------------------------------------------

TEST(ApplyToCostTable, RestrictDisablesOnlyUsableCellsOutsideTheSubset) {
  CostTable table(7, 3);
  table.at(kNvls, kLL) = kIgnoreCost;     // outside, already ignored
  table.at(kTree, kLL128) = kIgnoreCost;  // inside, ignored: must stay ignored
  CostTable before = table;
  int nChannels = 3;
  Rule rule = parseOne("allreduce algo=ring|tree proto=ll128|simple channels=12");
  EXPECT_EQ(applyToCostTable(rule, table.view(), &nChannels), Outcome::Applied);
  for (int a = 0; a < 7; ++a) {
    for (int p = 0; p < 3; ++p) {
      bool inside = (a == kRing || a == kTree) && (p == kLL128 || p == kSimple);
      const float want = inside ? before.at(a, p) : kIgnoreCost;
      EXPECT_EQ(table.at(a, p), want) << a << "," << p;
    }
  }
  EXPECT_EQ(table.at(kTree, kLL128), kIgnoreCost);
  EXPECT_TRUE(table.guardsIntact());
  EXPECT_EQ(nChannels, 12);
}

TEST(ApplyToCostTable, RestrictNeverWritesAUsableCost) {
  CostTable table(7, 3);
  for (int a = 0; a < 7; ++a) table.at(a, kSimple) = kIgnoreCost;
  CostTable before = table;
  EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=ring|nvls"), table.view(), nullptr),
            Outcome::Applied);
  for (int a = 0; a < 7; ++a) {
    for (int p = 0; p < 3; ++p) {
      if (before.at(a, p) < 0) {
        EXPECT_EQ(table.at(a, p), before.at(a, p)) << a << "," << p;
      }
    }
  }
  EXPECT_EQ(table.at(kRing, kLL), before.at(kRing, kLL));
  EXPECT_EQ(table.at(kNvls, kLL128), before.at(kNvls, kLL128));
  EXPECT_EQ(table.at(kTree, kLL), kIgnoreCost);
}

TEST(ApplyToCostTable, RestrictWithOnlyProtocols) {
  CostTable table(7, 3), before = table;
  EXPECT_EQ(applyToCostTable(parseOne("allreduce proto=simple"), table.view(), nullptr),
            Outcome::Applied);
  for (int a = 0; a < 7; ++a) {
    EXPECT_EQ(table.at(a, kLL), kIgnoreCost);
    EXPECT_EQ(table.at(a, kLL128), kIgnoreCost);
    EXPECT_EQ(table.at(a, kSimple), before.at(a, kSimple));
  }
}

TEST(ApplyToCostTable, OneAlgorithmWithoutAProtocolRestricts) {
  CostTable table(7, 3), before = table;
  Rule rule = parseOne("allreduce algo=ring");
  EXPECT_FALSE(rule.selectsOneCell());
  EXPECT_EQ(applyToCostTable(rule, table.view(), nullptr), Outcome::Applied);
  for (int p = 0; p < 3; ++p) EXPECT_EQ(table.at(kRing, p), before.at(kRing, p));
  EXPECT_EQ(table.at(kTree, kSimple), kIgnoreCost);
  EXPECT_EQ(table.at(kPat, kLL), kIgnoreCost);
}

TEST(ApplyToCostTable, RestrictLeavingNoUsableCellIsNotApplicable) {
  CostTable table(7, 3);
  table.at(kRing, kLL) = kIgnoreCost;
  table.at(kRing, kLL128) = kIgnoreCost;
  table.at(kTree, kLL) = kIgnoreCost;
  table.at(kTree, kLL128) = kIgnoreCost;
  CostTable before = table;
  int nChannels = 5;
  Rule rule = parseOne("allreduce algo=ring|tree proto=ll|ll128 channels=9");
  EXPECT_EQ(applyToCostTable(rule, table.view(), &nChannels), Outcome::NotApplicable);
  EXPECT_EQ(table.raw(), before.raw());
  EXPECT_EQ(nChannels, 5);
}

TEST(ApplyToCostTable, RestrictOnAnAllIgnoredTableIsNotApplicable) {
  CostTable table(7, 3);
  for (int a = 0; a < 7; ++a) {
    for (int p = 0; p < 3; ++p) table.at(a, p) = kIgnoreCost;
  }
  CostTable before = table;
  EXPECT_EQ(applyToCostTable(parseOne("allreduce proto=ll|ll128|simple"), table.view(), nullptr),
            Outcome::NotApplicable);
  EXPECT_EQ(table.raw(), before.raw());
}

// ---- channels ----------------------------------------------------------------------------

TEST(ApplyToCostTable, ChannelsWrittenOnlyWhenTheRuleSetsThem) {
  for (int start : {0, 16}) {
    SCOPED_TRACE(start);
    CostTable table(7, 3), before = table;
    int nChannels = start;
    EXPECT_EQ(applyToCostTable(parseOne("allreduce channels=8"), table.view(), &nChannels),
              Outcome::Applied);
    EXPECT_EQ(nChannels, 8);
    EXPECT_EQ(table.raw(), before.raw());  // no choice named: cells untouched

    nChannels = start;
    EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=ring proto=ll"), table.view(), &nChannels),
              Outcome::Applied);
    EXPECT_EQ(nChannels, start);

    nChannels = start;
    EXPECT_EQ(applyToCostTable(parseOne("allreduce channels=-1"), table.view(), &nChannels),
              Outcome::Applied);
    EXPECT_EQ(nChannels, start);

    nChannels = start;
    EXPECT_EQ(applyToCostTable(parseOne("allreduce algo=tree proto=ll channels=2"), table.view(),
                               &nChannels),
              Outcome::Applied);
    EXPECT_EQ(nChannels, 2);
  }
}

TEST(ApplyToCostTable, NullChannelPointerIsAccepted) {
  CostTable table(7, 3);
  EXPECT_EQ(
      applyToCostTable(parseOne("allreduce algo=ring proto=ll channels=4"), table.view(), nullptr),
      Outcome::Applied);
  EXPECT_EQ(table.at(kRing, kLL), 0.0f);
}

// ---- v2 ----------------------------------------------------------------------------------

V2Support support(Collective c, bool collNet = false, bool nvls = false, int nNodes = 1) {
  return V2Support{c, collNet, nvls, nNodes};
}

TEST(ApplyV2, RestrictionKeepsNcclsChoiceButSetsChannels) {
  for (const char* line : {"allreduce algo=ring|tree proto=simple channels=4",
                           "allreduce algo=ring channels=4", "allreduce proto=ll channels=4"}) {
    SCOPED_TRACE(line);
    int algorithm = -1, protocol = -1, nChannels = 0;
    EXPECT_EQ(
        applyV2(parseOne(line), support(Collective::AllReduce), &algorithm, &protocol, &nChannels),
        V2Outcome::KeepNccl);
    EXPECT_EQ(algorithm, -1);
    EXPECT_EQ(protocol, -1);
    EXPECT_EQ(nChannels, 4);
  }
}

TEST(ApplyV2, UnsupportedAlgorithmsAreNotApplicable) {
  struct Case {
    const char* rule;
    V2Support support;
  };
  const Case cases[] = {
      {"allgather algo=tree proto=simple", support(Collective::AllGather)},
      {"reducescatter algo=tree proto=ll", support(Collective::ReduceScatter)},
      {"broadcast algo=tree proto=simple", support(Collective::Broadcast)},
      {"allreduce algo=nvls proto=simple", support(Collective::AllReduce, false, false)},
      {"allreduce algo=nvls proto=simple", support(Collective::AllReduce, false, true, 2)},
      {"allgather algo=nvls proto=simple", support(Collective::AllGather, true, true, 2)},
      {"broadcast algo=nvls proto=simple", support(Collective::Broadcast, true, true, 1)},
      {"allreduce algo=nvls_tree proto=simple", support(Collective::AllReduce, false, true, 1)},
      {"allreduce algo=nvls_tree proto=simple", support(Collective::AllReduce, false, false, 2)},
      {"allreduce algo=collnet_direct proto=simple", support(Collective::AllReduce, false)},
      {"allreduce algo=collnet_chain proto=simple", support(Collective::AllReduce, false)},
      {"allgather algo=collnet_direct proto=simple", support(Collective::AllGather, true)},
      {"allreduce algo=pat proto=simple", support(Collective::AllReduce, true, true, 2)},
      {"allgather algo=pat proto=simple", support(Collective::AllGather, true, true, 1)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule);
    int algorithm = -1, protocol = -1, nChannels = 0;
    Rule rule = parseOne(std::string(c.rule) + " channels=4");
    EXPECT_FALSE(v2Supports(static_cast<Algorithm>(__builtin_ctz(rule.algorithms)), c.support));
    EXPECT_EQ(applyV2(rule, c.support, &algorithm, &protocol, &nChannels),
              V2Outcome::NotApplicable);
    EXPECT_EQ(algorithm, -1);
    EXPECT_EQ(protocol, -1);
    EXPECT_EQ(nChannels, 0);
  }
}

// NCCL builds NVLS, NVLSTree, CollNetDirect and CollNetChain kernels for Simple only and marks
// their LL/LL128 cells unsupported (tuning.cc). NCCL 2.21 takes a v2 tuner's pair without
// checking it, so such a rule must not be passed on.
TEST(ApplyV2, NonSimpleProtocolsOfNvlsAndCollNetAreNotApplicable) {
  const V2Support all = support(Collective::AllReduce, true, true, 1);
  const V2Support allMulti = support(Collective::AllReduce, true, true, 2);
  struct Case {
    const char* rule;
    V2Support support;
  };
  const Case cases[] = {
      {"allreduce algo=nvls proto=ll", all},
      {"allreduce algo=nvls proto=ll128", all},
      {"allgather algo=nvls proto=ll128", support(Collective::AllGather, false, true, 1)},
      {"allreduce algo=nvls_tree proto=ll", allMulti},
      {"allreduce algo=collnet_direct proto=ll", all},
      {"allreduce algo=collnet_chain proto=ll128", all},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule);
    int algorithm = -1, protocol = -1, nChannels = 0;
    EXPECT_EQ(applyV2(parseOne(c.rule), c.support, &algorithm, &protocol, &nChannels),
              V2Outcome::NotApplicable);
    EXPECT_EQ(algorithm, -1);
    EXPECT_EQ(protocol, -1);
  }
}

TEST(ApplyV2, SupportedCellsAreWritten) {
  struct Case {
    const char* rule;
    V2Support support;
    int algorithm, protocol;
  };
  const Case cases[] = {
      {"allgather algo=ring proto=simple", support(Collective::AllGather), kRing, kSimple},
      {"broadcast algo=ring proto=ll", support(Collective::Broadcast), kRing, kLL},
      {"allreduce algo=tree proto=ll128", support(Collective::AllReduce), kTree, kLL128},
      {"allreduce algo=nvls proto=simple", support(Collective::AllReduce, false, true, 1), kNvls,
       kSimple},
      {"allreduce algo=nvls proto=simple", support(Collective::AllReduce, true, true, 2), kNvls,
       kSimple},
      {"allgather algo=nvls proto=simple", support(Collective::AllGather, false, true, 1), kNvls,
       kSimple},
      {"reducescatter algo=nvls proto=simple", support(Collective::ReduceScatter, false, true, 1),
       kNvls, kSimple},
      {"allreduce algo=nvls_tree proto=simple", support(Collective::AllReduce, false, true, 2), 5,
       kSimple},
      {"allreduce algo=collnet_direct proto=simple", support(Collective::AllReduce, true),
       kCollNetDirect, kSimple},
      {"allreduce algo=collnet_chain proto=simple", support(Collective::AllReduce, true), 3,
       kSimple},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule);
    int algorithm = -1, protocol = -1, nChannels = 0;
    EXPECT_EQ(applyV2(parseOne(c.rule), c.support, &algorithm, &protocol, &nChannels),
              V2Outcome::Applied);
    EXPECT_EQ(algorithm, c.algorithm);
    EXPECT_EQ(protocol, c.protocol);
    EXPECT_EQ(nChannels, 0);
  }
}

TEST(ApplyV2, ChannelsOnlyRuleLeavesAlgorithmAndProtocol) {
  int algorithm = -1, protocol = -1, nChannels = 0;
  EXPECT_EQ(applyV2(parseOne("allreduce channels=6"), support(Collective::AllReduce), &algorithm,
                    &protocol, &nChannels),
            V2Outcome::Applied);
  EXPECT_EQ(algorithm, -1);
  EXPECT_EQ(protocol, -1);
  EXPECT_EQ(nChannels, 6);

  nChannels = 0;
  EXPECT_EQ(applyV2(parseOne("allgather algo=ring proto=ll128 channels=2"),
                    support(Collective::AllGather), &algorithm, &protocol, &nChannels),
            V2Outcome::Applied);
  EXPECT_EQ(algorithm, kRing);
  EXPECT_EQ(protocol, kLL128);
  EXPECT_EQ(nChannels, 2);
}

TEST(V2Supports, RingIsAlwaysSupported) {
  for (int c = 0; c < kNumCollectives; ++c) {
    EXPECT_TRUE(v2Supports(Algorithm::Ring, support(static_cast<Collective>(c))));
  }
  EXPECT_TRUE(v2Supports(Algorithm::Tree, support(Collective::AllReduce)));
  EXPECT_FALSE(v2Supports(Algorithm::Tree, support(Collective::Reduce)));
  EXPECT_FALSE(v2Supports(Algorithm::Pat, support(Collective::AllGather, true, true, 1)));
  EXPECT_EQ(idx(Algorithm::Pat), kPat);
}

}  // namespace
}  // namespace pilot::tuner
