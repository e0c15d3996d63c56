// The nccl.conf files NCCL merges into the environment at its init, and their lines. NCCL
// (src/misc/param.cc, initEnv) reads the file NCCL_CONF_FILE names when it is set and not empty,
// else ~/.nccl.conf (the passwd entry's home), and then /etc/nccl.conf in any case: one
// NAME=VALUE per line, a line starting with '#' skipped, nothing trimmed, and sets each name
// with setenv(..., 0): the environment wins over a file, and an earlier file over a later one. So
// after NCCL's init the environment holds the effective values; these say where a value came
// from, and which names a file sets that the environment did not hold yet.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pilot::provenance {

/// The files in the order NCCL reads them: NCCL_CONF_FILE's value if set and not empty, else
/// `home`/.nccl.conf (when `home` is not empty); then /etc/nccl.conf (under `root`, "" = /).
std::vector<std::string> ncclConfFiles(const std::optional<std::string>& confFileSetting,
                                       const std::string& home, const std::string& root = "");

/// NAME=VALUE lines as NCCL reads them: lines starting with '#' and lines without '=' are
/// skipped; the name is everything before the first '=', the value everything after it (a
/// trailing CR dropped), each cut at 1023 bytes (NCCL's buffers).
std::vector<std::pair<std::string, std::string>> parseNcclConf(std::string_view text);

}  // namespace pilot::provenance
