// A file's whole text, for tests that check what a program wrote.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace testsupport {

/// Every byte of `path`; empty when it cannot be read.
inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace testsupport
