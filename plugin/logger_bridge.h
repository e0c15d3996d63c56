// Bridges pilot::Logger onto the ncclDebugLogger_t NCCL passes to init, with our prefix
// ("TUNER/Pilot", "NET/Pilot"). A null NCCL logger discards (NCCL may pass none in tests).
#pragma once

#include "abi/nccl_common.h"
#include "pilot/core/log.h"

namespace pilot::plugin {

class NcclLogger final : public Logger {
 public:
  NcclLogger(nccl::ncclDebugLogger_t fn, const char* prefix) : fn_(fn), prefix_(prefix) {}
  void write(LogLevel level, unsigned long flags, const char* file, int line,
             const std::string& message) override;

 private:
  nccl::ncclDebugLogger_t fn_;
  const char* prefix_;
};

}  // namespace pilot::plugin
