// The exported tuner structs ncclTunerPlugin_v2 .. _v7: thin adapters onto TunerRuntime /
// TunerContext. Each NCCL takes the newest symbol it knows (research/tuner.md §1.1; v7 from
// NCCL 2.32.6).
#include <memory>

#include "abi/tuner_v2.h"
#include "abi/tuner_v3.h"
#include "abi/tuner_v4.h"
#include "abi/tuner_v5.h"
#include "abi/tuner_v6.h"
#include "abi/tuner_v7.h"
#include "entry_guard.h"
#include "logger_bridge.h"
#include "pilot/tuner/tuner_runtime.h"
#include "record/process_record.h"
#include "tuner/process_facts.h"

namespace pilot::plugin {
namespace {

using namespace pilot::nccl;
using tuner::ContextParams;
using tuner::TunerContext;
using tuner::TunerRuntime;

constexpr const char* kTunerName = "Pilot";
constexpr const char* kPrefix = "TUNER/Pilot";

TunerContext* asContext(void* context) {
  return static_cast<TunerContext*>(context);
}

/// `caller`: the return address of the exported init, inside the NCCL that called it.
ncclResult_t initContext(ContextParams params, const void* caller, ncclDebugLogger_t logFn,
                         void** context) {
  if (context == nullptr) return ncclInvalidArgument;
  *context = nullptr;
  NcclLogger log(logFn, kPrefix);
  // An internal failure (even bad_alloc) leaves a null context, which every entry point treats
  // as "NCCL decides": only strict mode may fail a communicator.
  return guard(&log, "init", ncclSuccess, [&]() -> ncclResult_t {
    noteProcessInit("tuner", params.abiVersion, caller, log);
    params.facts = readProcessFacts(params.abiVersion, caller);
    if (std::string warning = takeFabricWarning(); !warning.empty()) {
      PILOT_LOG(log, Warn, subsys::Init | subsys::Tuning | subsys::Env, "%s", warning.c_str());
    }
    auto created =
        TunerRuntime::process().createContext(params, std::make_unique<NcclLogger>(logFn, kPrefix));
    if (!created.ok()) {
      PILOT_LOG(log, Warn, subsys::Init | subsys::Tuning, "%s; communicator init fails",
                created.error().c_str());
      return ncclInvalidUsage;
    }
    *context = created.value().release();
    return ncclSuccess;
  });
}

ncclResult_t finalizeContext(void* context) {
  TunerContext* ctx = asContext(context);
  delete ctx;  // ~TunerContext is noexcept: it only releases memory
  return ncclSuccess;
}

// v2 .. v4 share init(nRanks, nNodes, logger, context).
template <int Version>
ncclResult_t initLegacy(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFn, void** context) {
  ContextParams params;
  params.nRanks = nRanks;
  params.nNodes = nNodes;
  params.abiVersion = Version;
  return initContext(params, __builtin_return_address(0), logFn, context);
}

// v5 .. v7 share init(context, commId, nRanks, nNodes, logger, nvl, constants); v7's constants
// are a larger struct, which the tuner never reads or writes.
template <int Version, typename Constants>
ncclResult_t initV5(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                    ncclDebugLogger_t logFn, ncclNvlDomainInfo_v5_t* nvl,
                    Constants* /*constants*/) {
  ContextParams params;
  params.nRanks = nRanks;
  params.nNodes = nNodes;
  params.abiVersion = Version;
  params.commId = commId;
  if (nvl != nullptr && static_cast<size_t>(nvl->nNvlDomains) == nNodes) {
    // NCCL fills one NVL domain per node with min/max local ranks. Anything else (a domain
    // spanning nodes) is not ranks per node: derive it from nRanks / nNodes instead.
    if (nvl->minRanksPerNvlDomain > 0 && nvl->minRanksPerNvlDomain == nvl->maxRanksPerNvlDomain) {
      params.ranksPerNode = static_cast<uint64_t>(nvl->minRanksPerNvlDomain);
    } else {
      params.unevenNodes = true;
    }
  }
  return initContext(params, __builtin_return_address(0), logFn, context);
}

ncclResult_t getCollInfoV2(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                           int nvlsSupport, int numPipeOps, int* algorithm, int* protocol,
                           int* nChannels) {
  TunerContext* ctx = asContext(context);
  if (ctx == nullptr) return ncclSuccess;
  return guard(&ctx->logger(), "getCollInfo", ncclSuccess, [&] {
    ctx->getCollInfoV2(collType, nBytes, collNetSupport, nvlsSupport, numPipeOps, algorithm,
                       protocol, nChannels);
    return ncclSuccess;
  });
}

ncclResult_t getCollInfoV3(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                           float** collCostTable, int numAlgo, int numProto, int* nChannels) {
  TunerContext* ctx = asContext(context);
  if (ctx == nullptr) return ncclSuccess;
  return guard(&ctx->logger(), "getCollInfo", ncclSuccess, [&] {
    ctx->getCollInfo(collType, nBytes, numPipeOps, reinterpret_cast<float*>(collCostTable), numAlgo,
                     numProto, /*regBuff unknown*/ -1, nChannels);
    return ncclSuccess;
  });
}

ncclResult_t getCollInfoV4(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                           float** collCostTable, int numAlgo, int numProto, int regBuff,
                           int* nChannels) {
  TunerContext* ctx = asContext(context);
  if (ctx == nullptr) return ncclSuccess;
  return guard(&ctx->logger(), "getCollInfo", ncclSuccess, [&] {
    ctx->getCollInfo(collType, nBytes, numPipeOps, reinterpret_cast<float*>(collCostTable), numAlgo,
                     numProto, regBuff, nChannels);
    return ncclSuccess;
  });
}

ncclResult_t getChunkSizeV6(void* context, ncclFunc_t collType, size_t nBytes, int algo, int proto,
                            int /*nChannels*/, size_t* chunkSize) {
  TunerContext* ctx = asContext(context);
  if (ctx == nullptr) return ncclSuccess;
  return guard(&ctx->logger(), "getChunkSize", ncclSuccess, [&] {
    ctx->getChunkSize(collType, nBytes, algo, proto, chunkSize);
    return ncclSuccess;
  });
}

}  // namespace
}  // namespace pilot::plugin

using namespace pilot::nccl;
namespace p = pilot::plugin;

#define PILOT_EXPORT __attribute__((visibility("default")))

extern "C" {
PILOT_EXPORT ncclTuner_v2_t ncclTunerPlugin_v2 = {p::kTunerName, p::initLegacy<2>, p::getCollInfoV2,
                                                  p::finalizeContext};
PILOT_EXPORT ncclTuner_v3_t ncclTunerPlugin_v3 = {p::kTunerName, p::initLegacy<3>, p::getCollInfoV3,
                                                  p::finalizeContext};
PILOT_EXPORT ncclTuner_v4_t ncclTunerPlugin_v4 = {p::kTunerName, p::initLegacy<4>, p::getCollInfoV4,
                                                  p::finalizeContext};
PILOT_EXPORT ncclTuner_v5_t ncclTunerPlugin_v5 = {
    p::kTunerName, p::initV5<5, ncclTunerConstants_v5_t>, p::getCollInfoV4, p::finalizeContext};
PILOT_EXPORT ncclTuner_v6_t ncclTunerPlugin_v6 = {
    p::kTunerName, p::initV5<6, ncclTunerConstants_v6_t>, p::getCollInfoV4, p::finalizeContext,
    p::getChunkSizeV6};
PILOT_EXPORT ncclTuner_v7_t ncclTunerPlugin_v7 = {
    p::kTunerName, p::initV5<7, ncclTunerConstants_v7_t>, p::getCollInfoV4, p::finalizeContext,
    p::getChunkSizeV6};
}
