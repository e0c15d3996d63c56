// Realistic generated tuning tables for the benchmark, the request stream, and a minimal
// first-match linear scan over the same rules in the style of NCCL's example tuner (our own
// code, for reference timings; not NCCL's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

constexpr int kNumColl = 5;  // ncclFunc_t 0..4
constexpr int kNumAlgo = 7;
constexpr int kNumProto = 3;
constexpr float kIgnore = -1.0f;

/// One example-tuner CSV line: collective,lo,hi,algorithm,protocol,channels,nNodes,-1.
struct BenchRule {
  int coll;
  uint64_t lo, hi;  ///< inclusive; hi == UINT64_MAX is written as -1
  int algo, proto;
  int channels;  ///< -1 = keep NCCL's
  int nNodes;    ///< -1 = any
};

/// `count` rules: every collective x node counts {1, 2, 4, any}, each group cutting the size
/// axis into contiguous log-spaced bands with a plausible algorithm/protocol per band.
std::vector<BenchRule> generateRules(int count);
/// `count` rules of the table a fit for one cluster gives: all AllReduce for `nNodes` nodes,
/// cutting 8 B .. 16 GiB into contiguous log-spaced bands (the dense case).
std::vector<BenchRule> generateDenseRules(int count, int nNodes);
std::string toCsv(const std::vector<BenchRule>& rules);

struct Request {
  int coll;
  uint64_t nBytes;
};
/// `n` (a power of two) requests: uniform collectives, log-uniform sizes 1 B .. 4 GiB.
std::vector<Request> generateRequests(size_t n, uint64_t seed);
/// `n` (a power of two) AllReduce requests, sizes log-uniform over the whole range, 1 B .. 32 GiB.
std::vector<Request> generateDenseRequests(size_t n, uint64_t seed);

/// NCCL's cost table for one collective (float[7][3]): IGNORE where the algorithm cannot run.
void baseCostTable(int coll, float* cells);

/// First rule matching (collective, size, nNodes) whose cell is not IGNORE: set it to 0 and
/// the channels if given. Returns whether a rule applied.
bool linearScan(const std::vector<BenchRule>& rules, int nNodes, const Request& r, float* cells,
                int* nChannels);

}  // namespace bench
