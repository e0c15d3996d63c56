// NCCL may call one process's tuner from several threads, on several communicators, while
// other communicators are being created. Every concurrent answer must equal the answer the
// same call gets single-threaded.
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "test_support.h"

namespace fake {
namespace {

const char* const kTable =
    "allreduce size=..32K nodes=1 algo=ring proto=ll\n"
    "allreduce size=..32K nodes=2 algo=tree proto=ll128 channels=4\n"
    "allreduce size=32K..4M nodes=2..4 proto=ll128\n"
    "allreduce size=4M.. algo=ring proto=simple channels=8\n"
    "allgather size=..64K per-rank algo=ring proto=ll\n"
    "allgather size=64K.. per-rank proto=simple channels=2\n"
    "reducescatter ranks=32.. algo=ring proto=ll128\n"
    "broadcast size=1M.. channels=6\n"
    "any size=..1K pipeops=2.. algo=ring proto=simple\n";

constexpr int kContexts = 4;
constexpr int kThreads = 8;
constexpr int kPasses = 100;
const Shape kShapes[kContexts] = {{8, 1}, {16, 2}, {32, 4}, {64, 8}};

struct Answer {
  float cells[kMaxAlgo * kNumProto];
  int nChannels;
};

std::vector<Call> makeCalls() {
  std::vector<Call> calls;
  for (int coll = 0; coll <= ncclFuncAllReduce; ++coll) {
    for (size_t bytes = 1; bytes <= 1024 * M; bytes *= 3) {
      for (int pipeOps : {1, 2}) calls.push_back(collCall(coll, bytes, pipeOps));
    }
  }
  return calls;
}

Answer callOnce(const ncclTuner_v5_t* v5, void* ctx, const Shape& shape, const Call& c) {
  Answer a;
  CostTable t = modelCosts(release("2.28"), shape, c.platform, c.coll, c.nBytes);
  std::memcpy(a.cells, t.cells, sizeof(a.cells));
  a.nChannels = 0;
  v5->getCollInfo(ctx, static_cast<ncclFunc_t>(c.coll), c.nBytes, c.numPipeOps,
                  reinterpret_cast<float**>(a.cells), t.numAlgo, kNumProto, c.regBuff,
                  &a.nChannels);
  return a;
}

void* initContext(const ncclTuner_v5_t* v5, const Shape& s, uint64_t commId) {
  ncclNvlDomainInfo_v5_t nvl{static_cast<int>(s.nNodes), static_cast<int>(s.nRanks / s.nNodes),
                             static_cast<int>(s.nRanks / s.nNodes)};
  ncclTunerConstants_v5_t constants{};
  void* ctx = nullptr;
  if (v5->init(&ctx, commId, s.nRanks, s.nNodes, captureLog, &nvl, &constants) != ncclSuccess) {
    return nullptr;
  }
  return ctx;
}

TEST(Concurrency, EightThreadsFourContextsMatchSingleThreadedAnswers) {
  inChild([] {
    TempTable table(kTable);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    const ncclTuner_v5_t* v5 = m.v5;

    // The four communicators come up at once (the first init also loads the table).
    void* ctx[kContexts] = {};
    std::vector<std::thread> starters;
    for (int i = 0; i < kContexts; ++i) {
      starters.emplace_back([&, i] { ctx[i] = initContext(v5, kShapes[i], kCommId + i); });
    }
    for (auto& t : starters) t.join();
    for (void* c : ctx) ASSERT_NE(c, nullptr);

    const std::vector<Call> calls = makeCalls();
    std::vector<std::vector<Answer>> expected(kContexts);
    size_t changed = 0;
    for (int i = 0; i < kContexts; ++i) {
      for (const Call& c : calls) {
        expected[i].push_back(callOnce(v5, ctx[i], kShapes[i], c));
        Answer untouched = {};
        CostTable t = modelCosts(release("2.28"), kShapes[i], c.platform, c.coll, c.nBytes);
        std::memcpy(untouched.cells, t.cells, sizeof(untouched.cells));
        changed += std::memcmp(&expected[i].back(), &untouched, sizeof(Answer)) != 0;
      }
    }
    ASSERT_GT(changed, calls.size()) << "the table must change many answers to mean anything";

    std::atomic<long> mismatches{0}, done{0};
    std::atomic<bool> stop{false};
    // Meanwhile other communicators come and go (createContext takes the runtime's lock).
    std::thread churn([&] {
      for (uint64_t n = 0; !stop.load(); ++n) {
        Shape s{2 + n % 48, 1 + n % 3};
        void* c = initContext(v5, s, 1000 + n);
        if (c == nullptr)
          mismatches.fetch_add(1);
        else
          v5->finalize(c);
      }
    });
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t) {
      workers.emplace_back([&, t] {
        const int i = t % kContexts;
        for (int pass = 0; pass < kPasses; ++pass) {
          for (size_t k = 0; k < calls.size(); ++k) {
            const size_t j = (k + static_cast<size_t>(t) * 7) % calls.size();
            Answer a = callOnce(v5, ctx[i], kShapes[i], calls[j]);
            if (std::memcmp(&a, &expected[i][j], sizeof(Answer)) != 0) mismatches.fetch_add(1);
            done.fetch_add(1, std::memory_order_relaxed);
          }
        }
      });
    }
    for (auto& w : workers) w.join();
    stop = true;
    churn.join();
    EXPECT_EQ(mismatches.load(), 0);
    EXPECT_EQ(done.load(), static_cast<long>(kThreads) * kPasses * static_cast<long>(calls.size()));
    for (void* c : ctx) EXPECT_EQ(v5->finalize(c), ncclSuccess);
  });
}

}  // namespace
}  // namespace fake
