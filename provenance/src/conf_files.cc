#include "pilot/provenance/conf_files.h"

#include <algorithm>

namespace pilot::provenance {

std::vector<std::string> ncclConfFiles(const std::optional<std::string>& confFileSetting,
                                       const std::string& home, const std::string& root) {
  std::vector<std::string> files;
  if (confFileSetting && !confFileSetting->empty()) {
    files.push_back(*confFileSetting);
  } else if (!home.empty()) {
    files.push_back(home + "/.nccl.conf");
  }
  files.push_back(root + "/etc/nccl.conf");
  return files;
}

std::vector<std::pair<std::string, std::string>> parseNcclConf(std::string_view text) {
  constexpr size_t kField = 1023;  // NCCL's envVar and envValue buffers, less the terminator
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    // C strings end at a NUL, as NCCL's strncpy does.
    std::string_view name = line.substr(0, std::min(eq, kField));
    std::string_view value = line.substr(eq + 1, kField);
    name = name.substr(0, name.find('\0'));
    value = value.substr(0, value.find('\0'));
    out.emplace_back(std::string(name), std::string(value));
  }
  return out;
}

}  // namespace pilot::provenance
