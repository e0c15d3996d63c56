// The state file's JSON written back from the reader's records, in the shape metrics/ writes:
// an operation and an open proxy entry (which the --json report shows as the files hold them),
// and a whole file (the tests' directories, the fuzz target's round trip).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "hang/state_file.h"

namespace pilot::cli::hang {

nlohmann::ordered_json opJson(const OpRef& op);
nlohmann::ordered_json proxyJson(const std::vector<ProxyEntry>& proxy);

/// One line of JSON holding every field of `s` (but path and input); parseStateFile reads it
/// back as `s`.
std::string renderStateFile(const StateFile& s);

}  // namespace pilot::cli::hang
