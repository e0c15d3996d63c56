// Every /sys and /proc read goes through here, so tests can replay a recorded tree.
//
// Symlinks are followed by hand, one component at a time, relative to the root: a recorded tree
// keeps the kernel's links (relative ones like ../../../devices/..., sometimes absolute ones),
// and letting the OS follow an absolute link would read the real /sys instead of the tree.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>

#include "pilot/core/text.h"
#include "pilot/topology/sources.h"

namespace pilot::topology {
namespace {

constexpr int kMaxSymlinks = 40;  // what the kernel allows before ELOOP
constexpr size_t kMaxDirEntries = 1 << 16;

std::string joinAbsolute(const std::vector<std::string>& parts) {
  if (parts.empty()) return "/";
  std::string out;
  for (const std::string& p : parts) out += "/" + p;
  return out;
}

void prependComponents(const std::string& path, std::deque<std::string>& todo) {
  std::vector<std::string_view> parts = text::split(path, '/');
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!it->empty()) todo.emplace_front(*it);
  }
}

}  // namespace

std::string SysfsRoot::path(const std::string& absolute) const {
  std::string base = root_;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (!absolute.empty() && absolute.front() != '/') return base + "/" + absolute;
  return base + absolute;
}

std::optional<std::string> SysfsRoot::resolve(const std::string& absolute) const {
  std::vector<std::string> done;
  std::deque<std::string> todo;
  prependComponents(absolute, todo);
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      if (!done.empty()) done.pop_back();  // ".." at the root stays at the root
      continue;
    }
    done.push_back(std::move(part));
    std::string onDisk = path(joinAbsolute(done));
    struct stat st;
    if (lstat(onDisk.c_str(), &st) != 0) return std::nullopt;
    if (!S_ISLNK(st.st_mode)) continue;
    if (++links > kMaxSymlinks) return std::nullopt;
    char target[4096];
    ssize_t n = readlink(onDisk.c_str(), target, sizeof target);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof target) return std::nullopt;
    done.pop_back();
    if (target[0] == '/') done.clear();
    prependComponents(std::string(target, static_cast<size_t>(n)), todo);
  }
  return joinAbsolute(done);
}

std::optional<std::string> SysfsRoot::readAll(const std::string& absolute, size_t limit) const {
  std::optional<std::string> resolved = resolve(absolute);
  if (!resolved) return std::nullopt;
  // O_NONBLOCK and the S_ISREG check keep a FIFO or device node in a recorded tree from
  // blocking us; sysfs attributes and /proc/cpuinfo are regular files.
  int fd = open(path(*resolved).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return std::nullopt;
  }
  std::string content;
  char buffer[4096];
  while (content.size() < limit) {
    size_t want = std::min(sizeof buffer, limit - content.size());
    ssize_t n = read(fd, buffer, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return content;
}

std::optional<std::string> SysfsRoot::readLine(const std::string& absolute) const {
  std::optional<std::string> content = readAll(absolute, 64 * 1024);
  if (!content) return std::nullopt;
  std::string_view first(*content);
  size_t eol = first.find('\n');
  if (eol != std::string_view::npos) first = first.substr(0, eol);
  return std::string(text::trim(first));
}

std::vector<std::string> SysfsRoot::list(const std::string& absolute) const {
  std::vector<std::string> names;
  std::optional<std::string> resolved = resolve(absolute);
  if (!resolved) return names;
  DIR* dir = opendir(path(*resolved).c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(std::move(name));
    if (names.size() >= kMaxDirEntries) break;
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace pilot::topology
