#include "golden.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "pilot/topology/affinity.h"
#include "pilot/topology/nccl_xml.h"

namespace pilot::topology::test {

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void expectGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(PILOT_GOLDEN_DIR) + "/" + name;
  const char* update = std::getenv("PILOT_UPDATE_GOLDENS");
  if (update && std::string(update) == "1") {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << actual;
    ASSERT_TRUE(out.good()) << "cannot write " << path;
    std::cout << "[ golden  ] rewrote " << path << "\n";
    return;
  }
  std::optional<std::string> expected = readFile(path);
  ASSERT_TRUE(expected.has_value())
      << path << " is missing; run with PILOT_UPDATE_GOLDENS=1 to create it, then review it";
  EXPECT_EQ(*expected, actual) << "golden " << path
                               << " differs; if the change is intended, rerun with "
                                  "PILOT_UPDATE_GOLDENS=1 and review the diff";
}

GoldenOutput pipeline(const Machine& machine) {
  GoldenOutput out;
  const std::vector<GpuNicPair> pairs = pairGpusWithNics(machine);
  out.pairs = "# " + machine.source + "\n# pairs\n" + describePairs(machine, pairs);
  const RepairResult repair = repairFlatTopology(machine, pairs);
  out.pairs += "# repair\n";
  if (repair.actions.empty()) out.pairs += "none\n";
  for (const std::string& a : repair.actions) out.pairs += a + "\n";
  if (repair.repaired) {
    out.pairs +=
        "# pairs after repair\n" + describePairs(repair.machine, pairGpusWithNics(repair.machine));
  }
  Expected<std::string> xml = writeNcclXml(repair.machine);
  out.xml = xml ? *xml : "error: " + xml.error() + "\n";
  return out;
}

}  // namespace pilot::topology::test
