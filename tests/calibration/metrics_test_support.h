// The profiler's "calibration" summary lines, written by hand for the metrics reader and the
// per-call fit: per-call times binned at 2% as metrics/ bins them, and a small job model
// (per-call lognormal noise, stragglers, exploration) so a test knows the right answer.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pilot::calibration::test {

/// Bin k holds 1.02^k <= t_ns < 1.02^(k+1).
inline std::map<int, uint64_t> binsOf(const std::vector<double>& timesUs) {
  std::map<int, uint64_t> bins;
  for (double t : timesUs)
    ++bins[static_cast<int>(std::floor(std::log(t * 1000.0) / std::log(1.02)))];
  return bins;
}

struct LineSpec {
  std::string comm = "0x5eed1234abcd0001";
  int rank = 0, nranks = 2, nNodes = 2;
  std::string node = "host1";
  long pid = 1234;
  std::string nccl = "2.28.9", fabric = "ethernet", table;
  std::string collective = "AllReduce";
  uint64_t bytes = 1048576;
  std::string algo = "RING", proto = "SIMPLE";
  int channels = 2;
  std::string decision = "NCCL";  ///< "rule 1 (line 1)": a rule of the job's table chose it
};

/// One "calibration" line (no newline) holding `timesUs` as its per-call samples.
inline std::string calibrationLine(const LineSpec& s, const std::vector<double>& timesUs) {
  nlohmann::ordered_json j;
  j["kind"] = "calibration";
  j["comm"] = s.comm;
  j["comm_name"] = "";
  j["rank"] = s.rank;
  j["nranks"] = s.nranks;
  j["n_nodes"] = s.nNodes;
  j["node"] = s.node;
  j["pid"] = s.pid;
  j["nccl"] = s.nccl;
  j["fabric"] = s.fabric;
  j["table_sha256"] = s.table;
  j["collective"] = s.collective;
  j["bytes"] = s.bytes;
  j["message_bytes"] = s.bytes;
  j["algo"] = s.algo;
  j["proto"] = s.proto;
  j["channels"] = s.channels;
  j["decision"] = s.decision;
  j["calls"] = timesUs.size();
  double sum = 0;
  for (double t : timesUs) sum += t;
  j["time_us"] = {{"sum", sum}, {"mean", timesUs.empty() ? 0 : sum / timesUs.size()}};
  j["bin_ratio"] = 1.02;
  j["bins"] = nlohmann::json::array();
  for (const auto& [k, n] : binsOf(timesUs)) j["bins"].push_back({k, n});
  return j.dump();
}

/// Per-call GPU times: lognormal noise `sigma` around `trueUs`, and a share `stragglers` of
/// calls `slowdown` times slower. Box-Muller over mt19937's raw output, so every standard
/// library draws the same numbers.
class CallNoise {
 public:
  explicit CallNoise(uint32_t seed) : rng_(seed) {}
  double uniform() { return (static_cast<double>(rng_()) + 0.5) / 4294967296.0; }
  double normal() {
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
  }
  std::vector<double> calls(double trueUs, size_t n, double sigma, double stragglers = 0.0,
                            double slowdown = 3.0) {
    std::vector<double> out;
    for (size_t i = 0; i < n; ++i) {
      double t = trueUs * std::exp(sigma * normal());
      if (uniform() < stragglers) t *= slowdown;
      out.push_back(t);
    }
    return out;
  }

 private:
  std::mt19937 rng_;
};

}  // namespace pilot::calibration::test
