// Golden files: tests/topology/golden/<name>. A test compares byte for byte; with
// PILOT_UPDATE_GOLDENS=1 in the environment it rewrites the file instead (and says so).
#pragma once

#include <string>

#include "pilot/topology/model.h"

namespace pilot::topology::test {

/// Reads a whole file; nullopt if it cannot be opened.
std::optional<std::string> readFile(const std::string& path);

/// EXPECTs `actual` to equal the golden file `name`, or rewrites it when updating.
void expectGolden(const std::string& name, const std::string& actual);

struct GoldenOutput {
  std::string pairs;  ///< pairs, repair actions, pairs after the repair
  std::string xml;    ///< writeNcclXml of the repaired machine, or "error: ..."
};
/// What the plugin does with a machine: pair, repair, write.
GoldenOutput pipeline(const Machine& machine);

}  // namespace pilot::topology::test
