// Synthetic sweeps for the fit, evaluate and report tests: runs generated from known
// alpha-beta ground truths with seeded multiplicative noise, so a test knows the right answer.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "pilot/calibration/measurements.h"

namespace pilot::calibration::test {

/// True time in microseconds of one configuration at (size, nodes).
using Truth = std::function<double(double size, int nodes)>;

inline Truth alphaBeta(double alphaUs, double gbps) {
  return [=](double size, int) { return alphaUs + size / (gbps * 1e3); };
}

/// NCCL's default switching from `below` to `above` at `switchAt` bytes.
inline Truth switching(Truth below, Truth above, double switchAt) {
  return [=](double size, int nodes) {
    return size < switchAt ? below(size, nodes) : above(size, nodes);
  };
}

inline Config configOf(const std::string& label, const std::string& algo, const std::string& proto,
                       int channels = 0) {
  Config c;
  c.label = label;
  c.algo = algo;
  c.proto = proto;
  c.minChannels = c.maxChannels = channels;
  return c;
}

/// Uniform multiplicative noise in [1 - amplitude, 1 + amplitude], from mt19937's raw output
/// (the standard distributions differ between standard libraries; this does not).
class Noise {
 public:
  explicit Noise(uint32_t seed) : rng_(seed) {}
  double factor(double amplitude) {
    const double u = static_cast<double>(rng_()) / 4294967296.0;
    return 1.0 + amplitude * (2.0 * u - 1.0);
  }

 private:
  std::mt19937 rng_;
};

struct SweepSpec {
  std::string collective = "allreduce";
  int nodes = 1, ranks = 4;
  uint64_t minSize = 8, maxSize = 128ull << 20;
  std::string ncclVersion = "2.29.2";
  std::string setup;
};

/// Sizes minSize, 2 minSize, ... maxSize.
inline std::vector<uint64_t> sweepSizes(const SweepSpec& spec) {
  std::vector<uint64_t> sizes;
  for (uint64_t s = spec.minSize; s <= spec.maxSize; s *= 2) sizes.push_back(s);
  return sizes;
}

/// One nccl-tests run of `config`: every size of the spec, times = truth x noise(amplitude).
/// `amplitude` may depend on size (real noise is worst for small messages).
inline Run makeRun(const SweepSpec& spec, const Config& config, const Truth& truth, Noise& noise,
                   const std::function<double(double)>& amplitude, int repeat) {
  Run run;
  run.source = "synthetic:" + config.label + "#" + std::to_string(repeat);
  run.collective = spec.collective;
  run.nodes = spec.nodes;
  run.ranks = spec.ranks;
  run.ncclVersion = spec.ncclVersion;
  run.config = config;
  run.repeat = repeat;
  run.setup = spec.setup;
  for (uint64_t size : sweepSizes(spec)) {
    const double t = truth(static_cast<double>(size), spec.nodes) *
                     noise.factor(amplitude(static_cast<double>(size)));
    for (bool inPlace : {false, true}) {
      Sample s;
      s.size = size;
      s.count = size / 4;
      s.timeUs = t;
      s.algbw = static_cast<double>(size) / t / 1e3;
      s.busbw = s.algbw * 2.0 * (spec.ranks - 1) / spec.ranks;
      s.inPlace = inPlace;
      run.samples.push_back(s);
    }
  }
  return run;
}

inline std::function<double(double)> flatNoise(double amplitude) {
  return [=](double) { return amplitude; };
}

}  // namespace pilot::calibration::test
