#include "cli/commands.h"

#include <iostream>

namespace pilot::cli {

int reportError(const std::string& message, int status) {
  std::cerr << "nccl-pilot: error: " << message << "\n";
  return status;
}

}  // namespace pilot::cli
