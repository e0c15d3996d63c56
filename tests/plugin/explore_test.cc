// NCCL_PILOT_TUNER_EXPLORE through the built module, as NCCL calls it: the budget of NCCL's
// predicted time the explorations keep to, the share of calls that run an alternative, the
// cells NCCL ignored, the settings that turn it off, and the same schedule in separate
// processes.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "test_support.h"

namespace fake {
namespace {

const std::vector<size_t> kSizes = {8, 4 * K, 64 * K, 1 * M, 16 * M, 256 * M};
constexpr int kCallsPerSize = 2000;

struct JobFigures {
  std::map<size_t, int> explored;                 ///< calls unlike NCCL's (or the table's) pick
  std::map<size_t, std::set<std::string>> tried;  ///< the alternatives, per size
  std::string decisions;                          ///< every call's choice, in order
  double ncclUs = 0;     ///< NCCL's predicted time of its own picks, every call
  double chargedUs = 0;  ///< each exploration at 3x NCCL's cost of it, less its pick's
};

/// One communicator's job: kCallsPerSize training steps, each running every size once.
/// `baseline` is what the same call runs without exploration.
JobFigures runJob(const FakeComm& comm, const FakeComm* baseline = nullptr) {
  JobFigures f;
  for (int step = 0; step < kCallsPerSize; ++step) {
    for (size_t size : kSizes) {
      const Call call = allReduce(size);
      const Decision d = comm.collInfo(call);
      const Choice normal = baseline ? baseline->collInfo(call).choice : comm.ncclDefault(call);
      f.decisions += toString(d.choice) + ";";
      float cheapest = -1;
      for (int c = 0; c < d.before.size(); ++c) {
        const float v = d.before.cells[c];
        if (v >= 0 && (cheapest < 0 || v < cheapest)) cheapest = v;
      }
      f.ncclUs += cheapest;
      if (d.choice == normal) continue;
      ++f.explored[size];
      f.tried[size].insert(toString(d.choice));
      f.chargedUs += 3.0 * d.before.at(d.choice.algo, d.choice.proto) - cheapest;
    }
  }
  return f;
}

TEST(Exploration, ExplorationsKeepToTheBudgetAndTheCheapCallsExploreMost) {
  inChild([] {
    setEnv("NCCL_PILOT_TUNER_EXPLORE", "0.05");
    FAKE_LOAD(m, kTunerModule);
    FakeComm comm(m, release("2.28"), {16, 2});
    ASSERT_EQ(comm.initResult(), ncclSuccess);
    // collInfo fails the test if a cell NCCL ignored is ever revived or set.
    const JobFigures f = runJob(comm);
    // What the explorations may cost, NCCL's model off by 3x, keeps within 5% of NCCL's time.
    EXPECT_LE(f.chargedUs, 0.05 * f.ncclUs);
    EXPECT_GT(f.chargedUs, 0.0);
    int sizesWithTwo = 0;
    for (size_t size : kSizes) {
      SCOPED_TRACE(size);
      const int n = f.explored.count(size) ? f.explored.at(size) : 0;
      EXPECT_LT(n, kCallsPerSize / 4) << "a quarter of a size's calls explored";
      sizesWithTwo += f.tried.count(size) && f.tried.at(size).size() >= 2 ? 1 : 0;
      std::printf("size %zu: %d explorations, %zu alternatives\n", size, n,
                  f.tried.count(size) ? f.tried.at(size).size() : 0);
    }
    const int cheapest = f.explored.count(kSizes.front()) ? f.explored.at(kSizes.front()) : 0;
    const int dearest = f.explored.count(kSizes.back()) ? f.explored.at(kSizes.back()) : 0;
    EXPECT_GT(cheapest, 2 * dearest) << "the cheap calls explore most";
    EXPECT_GE(sizesWithTwo, 2) << "alternatives take turns";
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"exploring within 5%", "schedule digest"})) << dumpLogs();
  });
}

TEST(Exploration, ExploresAroundTheTablesChoiceAndKeepsNcclsChannels) {
  inChild([] {
    TempTable table("allreduce size=..1M algo=ring proto=ll channels=3\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    setEnv("NCCL_PILOT_TUNER_EXPLORE", "0.25");
    FAKE_LOAD(m, kTunerModule);
    FakeComm comm(m, release("2.30"), {16, 2});
    ASSERT_EQ(comm.initResult(), ncclSuccess);
    int ruled = 0, explored = 0;
    std::set<std::string> tried;
    for (int i = 0; i < 1000; ++i) {
      const Decision d = comm.collInfo(allReduce(4 * K));
      // The rule sets 3 channels; an exploration measures its cell with NCCL's (the rule's own
      // cell among the candidates too: they do not depend on the decision).
      if (d.nChannels == 3) {
        ++ruled;
        EXPECT_EQ(d.choice, pick(NCCL_ALGO_RING, NCCL_PROTO_LL));
      } else {
        ++explored;
        EXPECT_EQ(d.nChannels, 0);
        tried.insert(toString(d.choice));
      }
    }
    std::printf("explored %d of 1000, %zu alternatives\n", explored, tried.size());
    EXPECT_GT(explored, 10);
    EXPECT_LT(explored, 250);
    EXPECT_EQ(ruled + explored, 1000);
    EXPECT_GE(tried.size(), 1u);
  });
}

TEST(Exploration, OffUnlessAskedForAndWhenTheUserForcedTheChoice) {
  for (const char* value : {"", "0"}) {
    inChild([value] {
      if (*value != '\0') setEnv("NCCL_PILOT_TUNER_EXPLORE", value);
      FAKE_LOAD(m, kTunerModule);
      FakeComm comm(m, release("2.28"), {16, 2});
      EXPECT_TRUE(runJob(comm).explored.empty()) << "value '" << value << "'";
    });
  }
  inChild([] {
    setEnv("NCCL_PILOT_TUNER_EXPLORE", "0.05");
    setEnv("NCCL_PROTO", "Simple,LL");
    FAKE_LOAD(m, kTunerModule);
    FakeComm comm(m, release("2.28"), {16, 2});
    EXPECT_TRUE(runJob(comm).explored.empty());
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"NCCL_ALGO or NCCL_PROTO", "no exploration"}));
  });
  inChild([] {  // 2.21: no cost table to bound the alternatives with
    setEnv("NCCL_PILOT_TUNER_EXPLORE", "0.05");
    FAKE_LOAD(m, kTunerModule);
    FakeComm comm(m, release("2.21"), {16, 2});
    for (int i = 0; i < 100; ++i) {
      const Call call = allReduce(64 * K);
      EXPECT_EQ(comm.collInfo(call).choice, comm.ncclDefault(call));
    }
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"tuner ABI v2", "no exploration"}));
  });
}

TEST(Exploration, AMalformedValueWarnsAndStaysOffOrFailsInStrictMode) {
  inChild([] {
    setEnv("NCCL_PILOT_TUNER_EXPLORE", "0.5");
    FAKE_LOAD(m, kTunerModule);
    FakeComm comm(m, release("2.28"), {16, 2});
    ASSERT_EQ(comm.initResult(), ncclSuccess);
    EXPECT_TRUE(runJob(comm).explored.empty());
    EXPECT_TRUE(logged(NCCL_LOG_WARN, {"NCCL_PILOT_TUNER_EXPLORE=0.5", "decides apart"}))
        << dumpLogs();
  });
  inChild([] {
    setEnv("NCCL_PILOT_TUNER_EXPLORE", "five percent");
    setEnv("NCCL_PILOT_TUNER_STRICT", "1");
    FAKE_LOAD(m, kTunerModule);
    FakeComm comm(m, release("2.28"), {16, 2});
    EXPECT_NE(comm.initResult(), ncclSuccess);
  });
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Exploration, SeparateProcessesFedTheSameCallsDecideEveryCallAlike) {
  // One process per rank, as in a job: each loads the module, reads its settings and counts
  // its own calls. The schedule must come out the same, call for call.
  char dir[] = "/tmp/pilot-explore-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  constexpr int kRanks = 4;
  for (int rank = 0; rank < kRanks; ++rank) {
    inChild([&dir, rank] {
      setEnv("NCCL_PILOT_TUNER_EXPLORE", "0.05");
      // Rank-local inputs that must not matter: the host's view of time and the PID differ
      // anyway; the rank differs in what a launcher sets.
      setEnv("RANK", std::to_string(rank));
      FAKE_LOAD(m, kTunerModule);
      FakeComm comm(m, release("2.29"), {16, 2});
      const JobFigures f = runJob(comm);
      std::ofstream(std::string(dir) + "/rank" + std::to_string(rank)) << f.decisions;
    });
  }
  inChild([&dir] {  // the same job without exploration, for contrast
    FAKE_LOAD(m, kTunerModule);
    FakeComm comm(m, release("2.29"), {16, 2});
    std::ofstream(std::string(dir) + "/off") << runJob(comm).decisions;
  });
  const std::string first = readFile(std::string(dir) + "/rank0");
  ASSERT_FALSE(first.empty());
  for (int rank = 1; rank < kRanks; ++rank) {
    EXPECT_EQ(readFile(std::string(dir) + "/rank" + std::to_string(rank)), first)
        << "rank " << rank << " decided apart from rank 0";
  }
  EXPECT_NE(readFile(std::string(dir) + "/off"), first) << "exploration changed nothing";
  for (const char* name : {"rank0", "rank1", "rank2", "rank3", "off"}) {
    std::remove((std::string(dir) + "/" + name).c_str());
  }
  rmdir(dir);
}

}  // namespace
}  // namespace fake
