#include "pilot/core/file.h"

#include <cerrno>
#include <fstream>
#include <limits>

namespace pilot {

ReadOutcome readFileUpTo(const std::string& path, size_t maxBytes, std::string* content,
                         int* openErrno) {
  content->clear();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (openErrno != nullptr) *openErrno = errno;
    return ReadOutcome::CannotOpen;
  }
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    content->append(buffer, static_cast<size_t>(in.gcount()));
    if (content->size() > maxBytes) return ReadOutcome::TooLarge;
  }
  return in.bad() ? ReadOutcome::ReadError : ReadOutcome::Ok;
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

}  // namespace pilot
