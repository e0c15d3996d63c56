#include "pilot/core/file.h"

#include <fstream>
#include <sstream>

namespace pilot {

Expected<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot open " + path};
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Error{"cannot read " + path};
  return buffer.str();
}

Status writeFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) return Error{"cannot write " + path};
  return Status::success();
}

}  // namespace pilot
