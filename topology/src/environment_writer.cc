// processEnvironmentWriter: sets NCCL_TOPO_FILE for the whole process without setenv().
//
// Why not setenv: glibc's setenv may realloc() the environ array and rewrites it in place,
// while getenv() in another thread walks that same array without a lock. NCCL's init runs
// while application threads (Python, MPI progress, profilers) may be calling getenv, and the
// plugin cannot know. So we never touch an array someone may be reading: we build a complete
// new array (old entry pointers copied, ours replaced or appended as a strdup'ed "NAME=VALUE")
// and publish it with one pointer store. A reader holding the old array keeps walking valid,
// unchanged memory; the next getenv sees the new one.
//
// Old arrays are never freed (a reader may still hold one). They stay referenced from a static
// list so leak checkers see them as kept, not lost. The cost is bounded: the plugin sets one
// variable once per process. The mutex serialises our own callers only; a concurrent setenv
// elsewhere in the process is outside our control (glibc then copies our array into its own).
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "pilot/topology/topo_file.h"

namespace pilot::topology {
namespace {

class ProcessEnvironmentWriter final : public EnvironmentWriter {
 public:
  bool set(const char* name, const std::string& value) override {
    const size_t nameLength = name == nullptr ? 0 : std::strlen(name);
    if (nameLength == 0 || std::strchr(name, '=') != nullptr) return false;
    const std::string entry = std::string(name) + "=" + value;

    std::lock_guard<std::mutex> lock(mutex_);
    char** const current = __atomic_load_n(&environ, __ATOMIC_ACQUIRE);
    size_t count = 0;
    while (current != nullptr && current[count] != nullptr) ++count;

    char* copy = ::strdup(entry.c_str());
    if (copy == nullptr) return false;
    // calloc: every slot starts NULL, so the array is terminated however many entries we drop.
    auto** next = static_cast<char**>(std::calloc(count + 2, sizeof(char*)));
    if (next == nullptr) {
      std::free(copy);
      return false;
    }
    size_t out = 0;
    bool placed = false;
    for (size_t i = 0; i < count; ++i) {
      const bool same =
          std::strncmp(current[i], name, nameLength) == 0 && current[i][nameLength] == '=';
      if (!same) {
        next[out++] = current[i];
      } else if (!placed) {
        next[out++] = copy;  // keep the variable where it was
        placed = true;
      }  // later duplicates are dropped: getenv would have returned the first anyway
    }
    if (!placed) next[out++] = copy;

    try {
      kept_.reserve(kept_.size() + 2);
    } catch (...) {
      std::free(next);
      std::free(copy);
      return false;
    }
    kept_.push_back(next);
    kept_.push_back(copy);
    // Release: a thread that loads the new pointer also sees the array's contents.
    __atomic_store_n(&environ, next, __ATOMIC_RELEASE);
    return true;
  }

 private:
  std::mutex mutex_;
  std::vector<void*> kept_;  // every array and string we published, never freed
};

}  // namespace

EnvironmentWriter& processEnvironmentWriter() {
  // Deliberately never destroyed: published arrays must outlive every reader, static
  // destructors included.
  static auto* writer = new ProcessEnvironmentWriter();
  return *writer;
}

}  // namespace pilot::topology
