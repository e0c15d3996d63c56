#include "published_fixture.h"

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace testsupport {

std::string sharedFixture(const std::string& relative) {
  std::string root = PILOT_SHARED_FIXTURES;
  return relative.empty() ? root : root + "/" + relative;
}

std::string missingFixture(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return "";
  return std::string(kMissingFixture) + ": " + path +
         " (clone ../shared beside the repository to run this test; under CI=true it fails)";
}

bool fixturesRequired() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0);
}

}  // namespace testsupport
