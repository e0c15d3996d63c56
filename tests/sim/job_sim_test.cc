// The job simulator (job_sim.h) on the published sweeps: its truth model, the job with
// exploration off (every rank decides as NCCL does), the scorer, and the in-job calibration
// loop of issue 20 (job 1 explores with the profiler on, `nccl-pilot fit` reads its metrics,
// the fitted table is scored against the truth). The figures go into docs/calibration.md.
#include <dirent.h>
#include <ftw.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <string>

#include "job_sim.h"
#include "published_fixture.h"

namespace sim {
namespace {

const std::string kDir = testsupport::sharedFixture("nccl-tests");
const std::string kG5 = kDir + "/cs244c-g5-a10g-2n1gpu-allreduce-overlap.txt";
const std::string kL40s = kDir + "/l40s-1n4gpu-allreduce-forced.txt";
/// Bundled (tests/sim/data/make_truth.py): the loop also runs without ../shared.
const std::string kSynthetic = PILOT_SIM_DATA "/synthetic-2n-allreduce-truth.txt";

/// A scratch directory, removed at the end of a test that passed (kept for a look otherwise).
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/pilot-sim-" + tag + "-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    if (mkdtemp(name.data()) != nullptr) path_ = name.data();
    EXPECT_FALSE(path_.empty()) << "mkdtemp " << pattern;
  }
  ~ScratchDir() {
    if (path_.empty()) return;
    if (::testing::Test::HasFailure()) {
      std::printf("kept %s\n", path_.c_str());
      return;
    }
    nftw(
        path_.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

JobOptions options(const std::string& out) {
  JobOptions o;
  o.tunerModule = PILOT_TUNER_MODULE;
  o.profilerModule = PILOT_PROFILER_MODULE;
  o.outDir = out;
  o.calls = 400;
  o.seed = 20;
  return o;
}

Truth load(const std::string& path) {
  Truth t;
  const std::string error = loadTruth(path, "allreduce", t);
  EXPECT_EQ(error, "");
  return t;
}

int countFiles(const std::string& dir, const std::string& suffix) {
  int n = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      ++n;
    }
  }
  closedir(d);
  return n;
}

/// A table selecting, per size, the fastest cell of the truth (what a perfect fit writes).
std::string fastestTable(const Truth& t, const std::string& path) {
  std::ofstream out(path);
  out << "#@ table: nccl-pilot 1\n";
  static const char* const kAlgo[] = {"tree", "ring"};
  static const char* const kProto[] = {"ll", "ll128", "simple"};
  for (const SizeTruth& s : t.sizes) {
    const int c = s.fastestCell();
    if (c < 0 || c / kNumProto > 1) continue;
    out << t.collective << " size=" << s.bytes << ".." << s.bytes + 1
        << " algo=" << kAlgo[c / kNumProto] << " proto=" << kProto[c % kNumProto] << "\n";
  }
  return path;
}

// ---- the truth model ---------------------------------------------------------------------

TEST(JobSimTruth, G5OverlapSweep) {
  PILOT_REQUIRE_FIXTURE(kG5);
  const Truth t = load(kG5);
  EXPECT_EQ(t.nodes, 2);
  EXPECT_EQ(t.ranks, 2);
  ASSERT_EQ(t.sizes.size(), 25u);  // 8 B .. 128 MB
  for (const SizeTruth& s : t.sizes) {
    int cells = 0;
    for (int c = 0; c < kNumCells; ++c) cells += s.forcedUs[c] >= 0;
    EXPECT_EQ(cells, 6) << s.bytes;  // Ring and Tree x LL, LL128, Simple
    ASSERT_GE(s.ncclCell, 0);
    // NCCL's minimum search picks its own choice from the table the simulator passes.
    const std::vector<float> costs = s.costs();
    int min = -1;
    for (int c = 0; c < kNumCells; ++c) {
      if (costs[c] >= 0 && (min < 0 || costs[c] < costs[min])) min = c;
    }
    EXPECT_EQ(min, s.ncclCell) << s.bytes;
    EXPECT_EQ(s.runUs(s.ncclCell), s.defaultUs);
  }
  // At 8 B the default (518 us) is nearest Ring/LL128 (543 us); Tree/LL runs it in 342 us.
  EXPECT_EQ(cellName(t.sizes[0].ncclCell), "Ring/LL128");
  EXPECT_EQ(cellName(t.sizes[0].fastestCell()), "Tree/LL");
  EXPECT_DOUBLE_EQ(t.sizes[0].fastestUs(), 341.72);
}

TEST(JobSimTruth, L40sPartialForcingsBecomeCells) {
  PILOT_REQUIRE_FIXTURE(kL40s);
  const Truth t = load(kL40s);
  EXPECT_EQ(t.nodes, 1);
  EXPECT_EQ(t.ranks, 4);
  ASSERT_EQ(t.sizes.size(), 25u);
  for (const SizeTruth& s : t.sizes) {
    int cells = 0;
    for (int c = 0; c < kNumCells; ++c) cells += s.forcedUs[c] >= 0;
    EXPECT_GE(cells, 2) << s.bytes;
    EXPECT_GE(s.ncclCell, 0) << s.bytes;
  }
}

// ---- the job with exploration off --------------------------------------------------------

void expectNcclAlone(const Truth& t, const std::string& tag) {
  const ScratchDir scratch(tag);
  const std::string& out = scratch.path();
  JobOptions o = options(out);
  o.explore = "0";
  o.metricsDir = out + "/metrics";
  ASSERT_EQ(mkdir(o.metricsDir.c_str(), 0755), 0);
  const JobResult job = runJob(t, o);
  ASSERT_EQ(job.error, "");
  ASSERT_EQ(job.ranks.size(), static_cast<size_t>(t.ranks));
  EXPECT_EQ(job.divergence, "");
  const auto& calls = job.ranks[0].calls;
  ASSERT_EQ(calls.size(), t.sizes.size() * 400);
  for (const CallRecord& c : calls) {
    ASSERT_EQ(c.cell, t.sizes[static_cast<size_t>(c.size)].ncclCell)
        << "iteration " << c.iteration << " size " << t.sizes[static_cast<size_t>(c.size)].bytes;
  }
  EXPECT_DOUBLE_EQ(job.jobUs, job.ncclUs);
  // The noise is rank-local: the ranks' measured times differ, their decisions do not.
  EXPECT_NE(job.ranks[0].calls[0].noisyUs, job.ranks[1].calls[0].noisyUs);
  EXPECT_GT(job.jobNoisyUs, job.jobUs);  // stragglers and a median-1 lognormal push it up
  // Every rank's profiler wrote its summary and its textfile at finalize.
  EXPECT_EQ(countFiles(o.metricsDir, ".jsonl"), t.ranks);
  EXPECT_EQ(countFiles(o.metricsDir, ".prom"), t.ranks);
  const ExplorationStats s = compareRuns(t, job, job);
  EXPECT_EQ(s.explorations, 0);
  std::printf("[%s] exploration off: %zu calls per rank, job = NCCL alone = %.1f ms\n", tag.c_str(),
              calls.size(), job.jobUs / 1000.0);
}

TEST(JobSim, G5ExplorationOffIsNcclAlone) {
  PILOT_REQUIRE_FIXTURE(kG5);
  expectNcclAlone(load(kG5), "g5-off");
}

TEST(JobSim, L40sExplorationOffIsNcclAlone) {
  PILOT_REQUIRE_FIXTURE(kL40s);
  expectNcclAlone(load(kL40s), "l40s-off");
}

// The same with NCCL's own cost model (issue 29): every call runs the model's pick, PAT
// included where the sweep never forced it (5-node allgather), in the default's time.
TEST(JobSim, G5ExplorationOffIsNcclAloneWithNcclModel) {
  PILOT_REQUIRE_FIXTURE(kG5);
  Truth t = load(kG5);
  ASSERT_EQ(applyNcclModel(t, g5Shape(t.nodes)), "");
  expectNcclAlone(t, "g5-model-off");
  const std::string ag5 = kDir + "/cs244c-g5-a10g-5n1gpu-allgather-overlap.txt";
  PILOT_REQUIRE_FIXTURE(ag5);
  Truth a;
  ASSERT_EQ(loadTruth(ag5, "allgather", a), "");
  ASSERT_EQ(applyNcclModel(a, g5Shape(a.nodes)), "");
  expectNcclAlone(a, "g5-ag5-model-off");
}

// ---- the scorer --------------------------------------------------------------------------

TEST(JobSimScore, NoTableIsNcclAndThePerfectTableCapturesAll) {
  PILOT_REQUIRE_FIXTURE(kG5);
  const Truth t = load(kG5);
  const ScratchDir scratch("score");
  const std::string& out = scratch.path();
  const Score none = scoreTable(t, options(out + "/none"), "");
  ASSERT_EQ(none.error, "");
  EXPECT_DOUBLE_EQ(none.effTable, none.effNccl);
  EXPECT_DOUBLE_EQ(none.worst, 1.0);
  EXPECT_LT(none.effNccl, 0.9);  // the g5 overlap sweep: NCCL's default is measurably off
  const Score best = scoreTable(t, options(out + "/best"), fastestTable(t, out + "/best.table"));
  ASSERT_EQ(best.error, "");
  EXPECT_NEAR(best.effTable, 1.0, 1e-12);
  EXPECT_NEAR(best.captured, 1.0, 1e-12);
  EXPECT_LE(best.worst, 1.0);
  std::printf("[g5] NCCL's pick alone: efficiency %.4f\n", none.effNccl);
}

// The noise is rank-local and seeded: another seed changes every measured time and no
// decision, exploration on.
TEST(JobSim, DecisionsNeverDependOnTheNoise) {
  PILOT_REQUIRE_FIXTURE(kG5);
  const Truth t = load(kG5);
  const ScratchDir scratch("seed");
  JobOptions a = options(scratch.path() + "/a");
  a.explore = "0.05";
  a.calls = 100;
  JobOptions b = a;
  b.outDir = scratch.path() + "/b";
  b.seed = a.seed + 1;
  const JobResult ja = runJob(t, a), jb = runJob(t, b);
  ASSERT_EQ(ja.error, "");
  ASSERT_EQ(jb.error, "");
  EXPECT_EQ(ja.divergence, "");
  EXPECT_EQ(jb.divergence, "");
  ASSERT_EQ(ja.ranks[0].calls.size(), jb.ranks[0].calls.size());
  int sameTime = 0;
  for (size_t k = 0; k < ja.ranks[0].calls.size(); ++k) {
    ASSERT_EQ(ja.ranks[0].calls[k].cell, jb.ranks[0].calls[k].cell) << "call " << k;
    sameTime += ja.ranks[0].calls[k].noisyUs == jb.ranks[0].calls[k].noisyUs;
  }
  EXPECT_EQ(sameTime, 0);
  EXPECT_DOUBLE_EQ(ja.jobUs, jb.jobUs);
}

// ---- the loop (issues 20 and 29, "Done when") ---------------------------------------------

/// What one job of the loop must show, and its figures printed for docs/calibration.md.
void expectJob(const LoopJob& j, int number, const std::string& tag, uint64_t seed,
               double minCaptured) {
  SCOPED_TRACE(testing::Message() << tag << " seed " << seed << " job " << number);
  ASSERT_EQ(j.error, "");
  std::printf("[%s seed %llu] %s\n", tag.c_str(), static_cast<unsigned long long>(seed),
              describe(j, number).c_str());
  EXPECT_EQ(j.job.divergence, "") << "ranks decided apart";
  if (number == 1) {
    EXPECT_TRUE(j.job.ranks[0].exploreLogged) << "no exploration line at init";
  }
  // NCCL_PILOT_TUNER_EXPLORE=0.05 is a budget of 5% of NCCL's time.
  EXPECT_LE(j.job.jobUs / j.job.ncclUs, 1.05);
  EXPECT_LE(j.stats.maxSizeShare(), 0.25);
  if (j.score.effNccl < 0.99) {  // a gap worth closing
    EXPECT_GE(j.score.captured, minCaptured) << describe(j.score);
  }
  EXPECT_LE(j.score.worst, 1.05) << describe(j.score);
}

/// Job 1 explores around NCCL; fit; jobs 2 and 3 run the last table, explore what it marks
/// unknown, and fit on every job so far.
void loop(const Truth& t, const std::string& tag, uint64_t seed, double minCaptured, int jobs = 3) {
  const ScratchDir scratch(tag);
  JobOptions o = options(scratch.path());
  o.seed = seed;
  LoopOptions l;
  l.jobs = jobs;
  l.fitCommand = PILOT_NCCL_PILOT_BIN;
  const std::vector<LoopJob> run = runLoop(t, o, l);
  ASSERT_EQ(run.size(), static_cast<size_t>(jobs));
  for (size_t n = 0; n < run.size(); ++n) {
    expectJob(run[n], static_cast<int>(n) + 1, tag, seed, minCaptured);
  }
  if (::testing::Test::HasFailure()) return;
  // Learning across jobs: a later job explores less than the first (what measured slower or
  // enough is marked and left alone; a mark may flip with the noise, so not job by job), costs
  // no more, and its table keeps the gains; three jobs at least halve the explorations.
  for (size_t n = 1; n < run.size(); ++n) {
    SCOPED_TRACE(testing::Message() << tag << " seed " << seed << " job " << n + 1);
    EXPECT_LT(run[n].stats.explorations, run[0].stats.explorations);
    EXPECT_LE(run[n].job.jobUs / run[n].job.ncclUs, run[0].job.jobUs / run[0].job.ncclUs);
    EXPECT_GE(run[n].score.captured, run[0].score.captured - 0.05);
  }
  if (run.size() >= 3) {
    EXPECT_LT(run.back().stats.explorations, run[0].stats.explorations / 2)
        << "the chain does not converge";
  }
}

Truth withModel(const std::string& sweep, const std::string& collective) {
  Truth t;
  EXPECT_EQ(loadTruth(sweep, collective, t), "");
  EXPECT_EQ(applyNcclModel(t, g5Shape(t.nodes)), "");
  return t;
}

// NCCL's own cost model (issue 29): every shared g5 sweep, three jobs of their own each (one
// lucky job is not a result). Job 1's table captures 80% of the gap where the gaps are large;
// on the 2-node all-reduce sequential sweep they are 2-5% at most sizes, below what 400 calls
// per size tell apart at 12% noise, and its first table captures about 78% (the chain more).
struct G5Sweep {
  const char* file;
  const char* collective;
  double minCaptured;
};
const G5Sweep kG5Sweeps[] = {
    {"cs244c-g5-a10g-2n1gpu-allreduce-overlap.txt", "allreduce", 0.80},
    {"cs244c-g5-a10g-2n1gpu-allreduce-sequential.txt", "allreduce", 0.70},
    {"cs244c-g5-a10g-2n1gpu-allgather-overlap.txt", "allgather", 0.75},
    {"cs244c-g5-a10g-2n1gpu-allgather-sequential.txt", "allgather", 0.80},
    {"cs244c-g5-a10g-5n1gpu-allgather-overlap.txt", "allgather", 0.80},
    {"cs244c-g5-a10g-5n1gpu-allgather-sequential.txt", "allgather", 0.80},
};

void PrintTo(const G5Sweep& s, std::ostream* os) {
  *os << s.file << " " << s.collective;
}

class JobSimLoopNcclModel : public ::testing::TestWithParam<G5Sweep> {};

TEST_P(JobSimLoopNcclModel, BudgetedExplorationThenTheTable) {
  const std::string sweep = kDir + "/" + GetParam().file;
  PILOT_REQUIRE_FIXTURE(sweep);
  const Truth t = withModel(sweep, GetParam().collective);
  const std::string tag = std::string("model-") + GetParam().file;
  for (uint64_t seed = 1; seed <= 3; ++seed)
    loop(t, tag.substr(0, 40), seed, GetParam().minCaptured);
}

/// "2n1gpu_allreduce_overlap" for a test name.
std::string sweepName(const testing::TestParamInfo<G5Sweep>& info) {
  std::string name = info.param.file;
  name = name.substr(std::string("cs244c-g5-a10g-").size());
  name = name.substr(0, name.size() - std::string(".txt").size());
  for (char& c : name) c = c == '-' ? '_' : c;
  return name;
}

INSTANTIATE_TEST_SUITE_P(G5, JobSimLoopNcclModel, ::testing::ValuesIn(kG5Sweeps), sweepName);

// The cost table as "truth times a small error" (the second case): NCCL's model is right but
// for its own pick.
TEST(JobSimLoop, G5OverlapTruthCosts) {
  PILOT_REQUIRE_FIXTURE(kG5);
  for (uint64_t seed = 1; seed <= 3; ++seed) loop(load(kG5), "g5", seed, 0.80, 2);
}

TEST(JobSimLoop, BundledSyntheticTruth) {
  Truth t;
  ASSERT_EQ(loadTruth(kSynthetic, "allreduce", t), "");
  for (uint64_t seed = 1; seed <= 3; ++seed) loop(t, "synthetic", seed, 0.80, 2);
}

TEST(JobSimLoop, L40s) {
  PILOT_REQUIRE_FIXTURE(kL40s);
  for (uint64_t seed = 1; seed <= 3; ++seed) loop(load(kL40s), "l40s", seed, 0.80, 2);
}

}  // namespace
}  // namespace sim
