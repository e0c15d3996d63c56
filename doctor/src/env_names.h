// Names of environment variables other software reads with the NCCL_ prefix, for the env
// check: NCCL's own (nccl_env_names.cc), and what plugins, PyTorch and nccl-tests read.
#pragma once

#include <string_view>
#include <vector>

namespace pilot::doctor::detail {

/// Every NCCL_* name NCCL 2.18 .. 2.30 reads, sorted.
const std::vector<std::string_view>& ncclVariableNames();

}  // namespace pilot::doctor::detail
