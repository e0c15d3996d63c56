// An independent check of a topology text against NCCL's XML parser (src/graph/xml.cc, as
// described in research/topology.md §1.1-1.3) and, for files we write, against the promises of
// our writer (§6). Written apart from the reader on purpose: the writer is tested against this.
#pragma once

#include <string>
#include <vector>

namespace pilot::topology::test {

enum class RulesMode {
  Nccl,     ///< only what makes NCCL fail or ignore the file (vendor files must pass this)
  OurFile,  ///< plus what our writer promises: attributes NCCL requires, no keep/rank/...
};

/// One line per violation, "line N: ..."; empty when the text passes.
std::vector<std::string> checkNcclRules(const std::string& text, RulesMode mode);

/// The PCIe generation NCCL's prefix match reads from a link_speed (0 = falls back to Gen3).
int ncclSpeedGeneration(const std::string& linkSpeed);

}  // namespace pilot::topology::test
