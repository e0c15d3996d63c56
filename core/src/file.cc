#include "pilot/core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

namespace pilot {

ReadOutcome readFileUpTo(const std::string& path, size_t maxBytes, std::string* content,
                         int* openErrno) {
  content->clear();
  // open/read, not ifstream: the tool reads a file or three per rank of a job (100,000 on the
  // largest), and a stream's construction cost as much as reading a small file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (openErrno != nullptr) *openErrno = errno;
    return ReadOutcome::CannotOpen;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    content->reserve(std::min<size_t>(static_cast<size_t>(st.st_size), maxBytes) + 1);
  }
  ReadOutcome outcome = ReadOutcome::Ok;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      outcome = ReadOutcome::ReadError;
      break;
    }
    if (n == 0) break;
    content->append(buffer, static_cast<size_t>(n));
    if (content->size() > maxBytes) {
      outcome = ReadOutcome::TooLarge;
      break;
    }
  }
  ::close(fd);
  return outcome;
}

Expected<std::string> readFile(const std::string& path) {
  std::string content;
  switch (readFileUpTo(path, std::numeric_limits<size_t>::max(), &content)) {
    case ReadOutcome::Ok:
      return content;
    case ReadOutcome::CannotOpen:
      return Error{"cannot open " + path};
    default:
      return Error{"cannot read " + path};
  }
}

Status writeFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) return Error{"cannot write " + path};
  return Status::success();
}

Status writeFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error{"cannot write " + path + ": " + std::strerror(errno)};
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Error{"cannot write " + path + ": " + std::strerror(n < 0 ? saved : EIO)};
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    return Error{"cannot write " + path + ": " + std::strerror(saved)};
  }
  return Status::success();
}

Status makeDirectories(const std::string& dir) {
  struct stat st {};
  if (dir.empty()) return Error{"cannot create an empty directory name"};
  for (size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
    const std::string prefix = at == std::string::npos ? dir : dir.substr(0, at);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return Error{"cannot create " + prefix + ": " + std::strerror(errno)};
    }
    if (at == std::string::npos) break;
  }
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Error{"cannot create " + dir + ": not a directory"};
  }
  return Status::success();
}

}  // namespace pilot
