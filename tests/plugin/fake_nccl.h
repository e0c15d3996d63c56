// A fake NCCL host: loads the built plugin module as NCCL does and drives the tuner struct each
// release would pick, with that release's arguments, then runs NCCL's own selection on the
// result. Every call also checks the invariants NCCL relies on (see FakeComm::collInfo).
#pragma once

#include <cstdint>
#include <string>

#include "cost_model.h"
#include "isolation.h"
#include "nccl_host_abi.h"

namespace fake {

/// dlopen(path, RTLD_NOW | RTLD_LOCAL) and dlsym of every ncclTunerPlugin_vN. The module stays
/// loaded until unload() (NCCL's dlclose when its plugin refcount drops to zero) or the end of
/// the child process.
class Module {
 public:
  explicit Module(const char* path);
  void unload();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  bool ok() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }

  const ncclTuner_v2_t* v2 = nullptr;
  const ncclTuner_v3_t* v3 = nullptr;
  const ncclTuner_v4_t* v4 = nullptr;
  const ncclTuner_v5_t* v5 = nullptr;
  const ncclTuner_v6_t* v6 = nullptr;
  const ncclTuner_v7_t* v7 = nullptr;

 private:
  void* handle_ = nullptr;
  std::string error_;
};

/// One collective as NCCL hands it to getCollInfo.
struct Call {
  int coll = ncclFuncAllReduce;
  size_t nBytes = 0;
  int numPipeOps = 1;
  int regBuff = 0;  ///< passed from v4 on
  Platform platform;
};

struct Decision {
  Choice choice;         ///< what NCCL runs
  int nChannels = 0;     ///< the plugin's channel count; 0 = NCCL keeps its own
  bool changed = false;  ///< the plugin wrote anything at all
  CostTable before;      ///< the model table NCCL passed (v3+)
  CostTable after;       ///< the table after the plugin (v3+)
};

/// One communicator: init on construction, destroy/finalize on destruction.
class FakeComm {
 public:
  FakeComm(const Module& module, const Release& rel, Shape shape,
           ncclDebugLogger_t logger = captureLog);
  ~FakeComm();
  FakeComm(const FakeComm&) = delete;
  FakeComm& operator=(const FakeComm&) = delete;

  ncclResult_t initResult() const { return initResult_; }
  void* context() const { return context_; }
  const Release& release() const { return rel_; }

  /// Calls getCollInfo as rel_ does and returns what NCCL would run. Fails the current test if
  /// the plugin returned an error, wrote outside the table, revived an IGNORE cell, wrote a
  /// value other than 0 or -1, set only one of v2's algorithm/protocol, or set a bad channel
  /// count.
  Decision collInfo(const Call& call) const;
  /// The same with `costs` as the table NCCL passes instead of the synthetic model (v3+; the
  /// job simulator, tests/sim, passes a sweep's times).
  Decision collInfo(const Call& call, const CostTable& costs) const;
  /// NCCL's choice for `call` with no plugin loaded.
  Choice ncclDefault(const Call& call) const;
  /// The model table rel_ would pass for `call`.
  CostTable model(const Call& call) const;

  /// v6+: NCCL's chunk size after the plugin's getChunkSize (unchanged below v6).
  size_t chunkSize(int coll, size_t nBytes, int algo, int proto, int nChannels,
                   size_t ncclChunk) const;

 private:
  Decision collInfoV2(const Call& call) const;

  const Module& module_;
  Release rel_;
  Shape shape_;
  void* context_ = nullptr;
  ncclResult_t initResult_ = ncclInternalError;
};

/// The comm ID NCCL passes to v5+ init (its commHash).
constexpr uint64_t kCommId = 0x5eed1234abcd0001ull;

/// This host exports ncclGetVersion (from the test binary, as libnccl exports it), reporting
/// the version of the release each FakeComm acts as (set before its init). Pinned, it reports
/// `code` whatever the release; 0 = it fails, as if there were none. For the current process
/// (scenarios run in children).
void pinNcclVersion(int code);

}  // namespace fake
