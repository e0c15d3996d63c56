#include "pilot/core/nccl_list.h"

#include "pilot/core/text.h"

namespace pilot {

NcclNameList NcclNameList::parse(std::string_view spec) {
  NcclNameList list;
  std::string_view rest = spec;
  if (!rest.empty() && rest.front() == '^') {
    list.exclude = true;
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest.front() == '=') {
    list.exact = true;
    rest.remove_prefix(1);
  }
  for (std::string_view item : text::split(rest, ',')) {
    const size_t colon = item.find(':');
    Entry entry;
    entry.name = std::string(text::trim(item.substr(0, colon)));
    if (colon != std::string_view::npos) {
      std::optional<uint64_t> port = text::parseUnsigned(text::trim(item.substr(colon + 1)));
      if (port && *port < 256) entry.port = static_cast<int>(*port);
    }
    if (!entry.name.empty()) list.entries.push_back(std::move(entry));
  }
  return list;
}

bool NcclNameList::matches(const std::string& name, int port) const {
  bool listed = entries.empty();
  for (const Entry& e : entries) {
    const bool nameMatches = exact ? name == e.name : name.compare(0, e.name.size(), e.name) == 0;
    const bool portMatches = e.port < 0 || port < 0 || e.port == port;
    if (nameMatches && portMatches) listed = true;
  }
  return listed != exclude;
}

}  // namespace pilot
