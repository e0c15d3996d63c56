#include "bench_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>

namespace bench {
namespace {

constexpr uint64_t kAny = std::numeric_limits<uint64_t>::max();
constexpr int kNodeVariants[] = {1, 2, 4, -1};
constexpr int kGroups = kNumColl * 4;
const char* const kColl[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
const char* const kAlgo[] = {"tree", "ring"};
const char* const kProto[] = {"ll", "ll128", "simple"};

/// Lower edge of band `j` of `k` over 0 .. 16 GiB, log-spaced from 2^fromBits bytes.
uint64_t bandEdge(int j, int k, double fromBits = 10.0) {
  if (j == 0) return 0;
  const double exponent = fromBits + (34.0 - fromBits) * static_cast<double>(j) / k;
  return static_cast<uint64_t>(std::pow(2.0, exponent));
}

/// Small bands LL, middle LL128, large Simple; AllReduce alternates Tree and Ring; every third
/// band sets a channel count.
BenchRule band(int coll, int j, int k, int nNodes, double fromBits) {
  BenchRule r;
  r.coll = coll;
  r.lo = bandEdge(j, k, fromBits);
  r.hi = j + 1 == k ? kAny : bandEdge(j + 1, k, fromBits) - 1;
  r.proto = j * 3 / k;
  r.algo = coll == 4 && (j % 2 == 0) ? 0 : 1;
  r.channels = j % 3 == 2 ? 4 << (j % 4) : -1;
  r.nNodes = nNodes;
  return r;
}

}  // namespace

std::vector<BenchRule> generateRules(int count) {
  // Rule i goes to group i % kGroups, so every group has count / kGroups bands (+1).
  std::vector<BenchRule> rules;
  for (int g = 0; g < kGroups && g < count; ++g) {
    const int k = count / kGroups + (g < count % kGroups ? 1 : 0);
    const int nodes = kNodeVariants[g / kNumColl];  // node-specific groups first, "any" last
    const int coll = g % kNumColl;
    for (int j = 0; j < k; ++j) rules.push_back(band(coll, j, k, nodes, 10.0));
  }
  return rules;
}

std::vector<BenchRule> generateDenseRules(int count, int nNodes) {
  std::vector<BenchRule> rules;
  for (int j = 0; j < count; ++j) rules.push_back(band(4, j, count, nNodes, 3.0));
  // Where the log spacing is finer than one byte (the smallest sizes), edges step by one byte.
  for (int j = 1; j < count; ++j) {
    rules[j].lo = std::max(rules[j].lo, rules[j - 1].lo + 1);
    rules[j - 1].hi = rules[j].lo - 1;
  }
  return rules;
}

std::string toCsv(const std::vector<BenchRule>& rules) {
  std::ostringstream os;
  os << "# generated: " << rules.size() << " rules\n";
  for (const BenchRule& r : rules) {
    os << kColl[r.coll] << ',' << r.lo << ',';
    if (r.hi == kAny)
      os << "-1";
    else
      os << r.hi;
    os << ',' << kAlgo[r.algo] << ',' << kProto[r.proto] << ',' << r.channels << ',' << r.nNodes
       << ",-1\n";
  }
  return os.str();
}

std::vector<Request> generateRequests(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Request> out(n);
  for (Request& r : out) {
    r.coll = static_cast<int>(rng() % kNumColl);
    const double exponent = static_cast<double>(rng() % 32000) / 1000.0;  // 2^0 .. 2^32
    r.nBytes = static_cast<uint64_t>(std::pow(2.0, exponent));
  }
  return out;
}

std::vector<Request> generateDenseRequests(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Request> out(n);
  for (Request& r : out) {
    r.coll = 4;
    const unsigned bits = static_cast<unsigned>(rng() % 36);  // 0 .. 2^35 - 1
    r.nBytes =
        bits == 0 ? 0 : (uint64_t{1} << (bits - 1)) | (rng() & ((uint64_t{1} << (bits - 1)) - 1));
  }
  return out;
}

void baseCostTable(int coll, float* cells) {
  for (int a = 0; a < kNumAlgo; ++a) {
    for (int p = 0; p < kNumProto; ++p) {
      const bool usable = a == 1 || (a == 0 && coll == 4);  // Ring always, Tree for AllReduce
      cells[a * kNumProto + p] = usable ? 10.0f + static_cast<float>(a * kNumProto + p) : kIgnore;
    }
  }
}

bool linearScan(const std::vector<BenchRule>& rules, int nNodes, const Request& req, float* cells,
                int* nChannels) {
  for (const BenchRule& r : rules) {
    if (r.coll != req.coll || req.nBytes < r.lo || req.nBytes > r.hi) continue;
    if (r.nNodes != -1 && r.nNodes != nNodes) continue;
    float& cell = cells[r.algo * kNumProto + r.proto];
    if (cell == kIgnore) continue;  // NCCL ruled it out: try the next line
    cell = 0.0f;
    if (r.channels != -1) *nChannels = r.channels;
    return true;
  }
  return false;
}

}  // namespace bench
