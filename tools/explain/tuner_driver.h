// Drives the dlopen'ed tuner through one exported ABI version exactly as the NCCL release that
// takes that version would: same init arguments, same getCollInfo shape, same cost table.
#pragma once

#include <cstdint>
#include <memory>

#include "cli/plugin_loader.h"
#include "explain/model.h"
#include "pilot/core/result.h"

namespace pilot::cli {

struct TunerSetup {
  int abi = 7;  ///< 2..7
  uint64_t nRanks = 1;
  uint64_t nNodes = 1;
  CostShape shape;
  CellMask usable;  ///< cells NCCL leaves >= 0 (v2: only says whether CollNet/NVLS exist)
};

class TunerDriver {
 public:
  /// Looks up ncclTunerPlugin_v<abi> and calls its init. The library must outlive the driver.
  static Expected<std::unique_ptr<TunerDriver>> create(const PluginLibrary& lib,
                                                       const TunerSetup& setup);
  ~TunerDriver();  // destroy / finalize
  TunerDriver(const TunerDriver&) = delete;
  TunerDriver& operator=(const TunerDriver&) = delete;

  /// One getCollInfo call (v6+: plus getChunkSize for a selected cell), read as a Decision.
  /// regBuff is passed only from v4 on.
  /// Fails only if the plugin returns an error, which NCCL would turn into a failed collective.
  Expected<Decision> decide(Collective coll, uint64_t nBytes, int pipeOps, int regBuff) const;

 private:
  TunerDriver(const void* plugin, const TunerSetup& setup) : plugin_(plugin), setup_(setup) {}
  Expected<Decision> decideV2(Collective coll, uint64_t nBytes, int pipeOps) const;

  const void* plugin_;  // the ncclTuner_v<abi>_t struct inside the library
  TunerSetup setup_;
  void* context_ = nullptr;
};

}  // namespace pilot::cli
