#include "fuzz_support.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "pilot/core/file.h"

namespace fuzz {

void die(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, what.c_str());
  std::abort();
}

namespace {

void removeFiles(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  for (const std::string& name : names) ::unlink((dir + "/" + name).c_str());
}

void removeScratch() {
  const std::string& dir = scratchDir();
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> subs;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") subs.push_back(dir + "/" + name);
  }
  ::closedir(d);
  for (const std::string& sub : subs) {
    removeFiles(sub);
    if (::rmdir(sub.c_str()) != 0) ::unlink(sub.c_str());
  }
  ::rmdir(dir.c_str());
}

}  // namespace

const std::string& scratchDir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/pilot-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) die("cannot make a scratch folder: " + pattern);
    return pattern;
  }();
  static const bool registered = std::atexit(removeScratch) == 0;
  (void)registered;
  return dir;
}

std::string writeScratch(const std::string& name, std::string_view bytes) {
  const std::string path = scratchDir() + "/" + name;
  if (pilot::Status s = pilot::writeFile(path, std::string(bytes)); !s.ok()) die(s.error());
  return path;
}

std::string emptyScratch(const std::string& sub) {
  const std::string dir = scratchDir() + "/" + sub;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) die("cannot make " + dir);
  removeFiles(dir);
  return dir;
}

void checkError(const std::string& error, const std::string& what) {
  if (error.empty()) die("an error without a reason");
  if (!what.empty() && error.find(what) == std::string::npos)
    die("an error that does not name " + what + ": " + error);
}

}  // namespace fuzz
