// NCCL's device-list syntax, shared by NCCL_SOCKET_IFNAME and NCCL_IB_HCA: an optional '^'
// (exclude the listed names), an optional '=' (exact names instead of prefixes), then
// comma-separated entries NAME[:PORT]. An empty list matches everything (NCCL's rule).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pilot {

struct NcclNameList {
  struct Entry {
    std::string name;
    int port = -1;  ///< -1: any port (the entry named no port, or an unreadable one)
  };
  bool exclude = false;
  bool exact = false;
  std::vector<Entry> entries;

  static NcclNameList parse(std::string_view spec);
  /// Whether NCCL would use device `name` (port `port`, or -1 where ports mean nothing, as for
  /// IP interfaces) under this list.
  bool matches(const std::string& name, int port = -1) const;
};

}  // namespace pilot
