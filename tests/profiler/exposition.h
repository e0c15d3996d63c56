// The Prometheus text exposition read back for assertions: samples with their labels, and the
// HELP/TYPE of each family (written independently of metrics/prometheus.cc).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fakeprof {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;  ///< family -> counter|gauge|histogram
  std::map<std::string, std::string> help;
  std::vector<std::string> errors;  ///< lines that did not parse

  /// Samples named `name` whose labels include every pair of `match`.
  std::vector<Sample> find(const std::string& name,
                           const std::map<std::string, std::string>& match = {}) const;
  /// The value of the one sample matching, or nullopt when none or several match.
  std::optional<double> value(const std::string& name,
                              const std::map<std::string, std::string>& match = {}) const;
  /// value(), or NaN (which equals nothing) after failing the test with what was missing.
  double at(const std::string& name, const std::map<std::string, std::string>& match = {}) const;
};

Exposition parseExposition(const std::string& text);

std::string readWholeFile(const std::string& path);

}  // namespace fakeprof
