#include "explain/tuner_driver.h"

#include "abi/tuner_v2.h"
#include "abi/tuner_v3.h"
#include "abi/tuner_v4.h"
#include "abi/tuner_v5.h"
#include "abi/tuner_v6.h"
#include "abi/tuner_v7.h"
#include "explain/tuner_log.h"

namespace pilot::cli {
namespace {

using namespace pilot::nccl;

// Any id works: the tuner does not key anything on it.
constexpr uint64_t kCommId = 0x9117c0ffee;

template <typename T>
const T* as(const void* p) {
  return static_cast<const T*>(p);
}

Error callFailed(const char* what, ncclResult_t rc) {
  return Error{std::string(what) + " returned ncclResult_t " + std::to_string(rc) +
               " (NCCL would fail the collective)"};
}

ncclFunc_t func(Collective c) {
  return static_cast<ncclFunc_t>(static_cast<int>(c));
}

// NCCL passes the flat float[numAlgo][numProto] array cast to float**.
float** costArg(CostTable& t) {
  return reinterpret_cast<float**>(t.cells.data());
}

}  // namespace

Expected<std::unique_ptr<TunerDriver>> TunerDriver::create(const PluginLibrary& lib,
                                                           const TunerSetup& setup) {
  const std::string name = "ncclTunerPlugin_v" + std::to_string(setup.abi);
  const void* plugin = lib.symbol(name);
  if (plugin == nullptr) {
    return Error{lib.path() + " does not export " + name + " (tuner ABI v" +
                 std::to_string(setup.abi) + ")"};
  }
  std::unique_ptr<TunerDriver> d(new TunerDriver(plugin, setup));
  const size_t nRanks = setup.nRanks, nNodes = setup.nNodes;
  ncclResult_t rc = ncclInternalError;
  switch (setup.abi) {
    case 2:
      rc = as<ncclTuner_v2_t>(plugin)->init(nRanks, nNodes, tunerLog, &d->context_);
      break;
    case 3:
      rc = as<ncclTuner_v3_t>(plugin)->init(nRanks, nNodes, tunerLog, &d->context_);
      break;
    case 4:
      rc = as<ncclTuner_v4_t>(plugin)->init(nRanks, nNodes, tunerLog, &d->context_);
      break;
    case 5:
    case 6:
    case 7: {
      // NCCL reports one NVL domain per node with the fewest and most ranks any node holds.
      ncclNvlDomainInfo_v5_t nvl{static_cast<int>(nNodes), static_cast<int>(nRanks / nNodes),
                                 static_cast<int>((nRanks + nNodes - 1) / nNodes)};
      ncclTunerConstants_v5_t constants{};
      ncclTunerConstants_v7_t constants7{};
      if (setup.abi == 5) {
        rc = as<ncclTuner_v5_t>(plugin)->init(&d->context_, kCommId, nRanks, nNodes, tunerLog, &nvl,
                                              &constants);
      } else if (setup.abi == 6) {
        rc = as<ncclTuner_v6_t>(plugin)->init(&d->context_, kCommId, nRanks, nNodes, tunerLog, &nvl,
                                              &constants);
      } else {
        rc = as<ncclTuner_v7_t>(plugin)->init(&d->context_, kCommId, nRanks, nNodes, tunerLog, &nvl,
                                              &constants7);
      }
      break;
    }
    default:
      return Error{"tuner ABI v" + std::to_string(setup.abi) + " is not one nccl-pilot drives"};
  }
  if (rc != ncclSuccess) {
    d->context_ = nullptr;  // nothing to finalize
    return Error{name + ".init failed with ncclResult_t " + std::to_string(rc) +
                 " (NCCL would fail communicator creation)"};
  }
  return d;
}

TunerDriver::~TunerDriver() {
  if (context_ == nullptr) return;
  switch (setup_.abi) {
    case 2:
      as<ncclTuner_v2_t>(plugin_)->destroy(context_);
      break;
    case 3:
      as<ncclTuner_v3_t>(plugin_)->destroy(context_);
      break;
    case 4:
      as<ncclTuner_v4_t>(plugin_)->destroy(context_);
      break;
    case 5:
      as<ncclTuner_v5_t>(plugin_)->finalize(context_);
      break;
    case 6:
      as<ncclTuner_v6_t>(plugin_)->finalize(context_);
      break;
    case 7:
      as<ncclTuner_v7_t>(plugin_)->finalize(context_);
      break;
  }
}

Expected<Decision> TunerDriver::decideV2(Collective coll, uint64_t nBytes, int pipeOps) const {
  const CellMask& usable = setup_.usable;
  const int collNet =
      usable.anyOf(Algorithm::CollNetDirect) || usable.anyOf(Algorithm::CollNetChain);
  const int nvls = usable.anyOf(Algorithm::Nvls) || usable.anyOf(Algorithm::NvlsTree);
  int algorithm = -1, protocol = -1, nChannels = 0;  // NCCL_ALGO_UNDEF / NCCL_PROTO_UNDEF
  ncclResult_t rc = as<ncclTuner_v2_t>(plugin_)->getCollInfo(
      context_, func(coll), nBytes, collNet, nvls, pipeOps, &algorithm, &protocol, &nChannels);
  if (rc != ncclSuccess) return callFailed("getCollInfo", rc);
  return classifyV2(algorithm, protocol, nChannels, usable);
}

Expected<Decision> TunerDriver::decide(Collective coll, uint64_t nBytes, int pipeOps,
                                       int regBuff) const {
  if (setup_.abi == 2) return decideV2(coll, nBytes, pipeOps);
  const CostShape& shape = setup_.shape;
  const CostTable before = CostTable::filled(setup_.usable, shape);
  CostTable after = before;
  int nChannels = 0;
  const int na = shape.numAlgo, np = shape.numProto;
  ncclResult_t rc = ncclInternalError;
  switch (setup_.abi) {
    case 3:
      rc = as<ncclTuner_v3_t>(plugin_)->getCollInfo(context_, func(coll), nBytes, pipeOps,
                                                    costArg(after), na, np, &nChannels);
      break;
    case 4:
      rc = as<ncclTuner_v4_t>(plugin_)->getCollInfo(context_, func(coll), nBytes, pipeOps,
                                                    costArg(after), na, np, regBuff, &nChannels);
      break;
    case 5:
      rc = as<ncclTuner_v5_t>(plugin_)->getCollInfo(context_, func(coll), nBytes, pipeOps,
                                                    costArg(after), na, np, regBuff, &nChannels);
      break;
    case 6:
      rc = as<ncclTuner_v6_t>(plugin_)->getCollInfo(context_, func(coll), nBytes, pipeOps,
                                                    costArg(after), na, np, regBuff, &nChannels);
      break;
    case 7:
      rc = as<ncclTuner_v7_t>(plugin_)->getCollInfo(context_, func(coll), nBytes, pipeOps,
                                                    costArg(after), na, np, regBuff, &nChannels);
      break;
  }
  if (rc != ncclSuccess) return callFailed("getCollInfo", rc);
  Decision d = classifyCostTable(before, after, nChannels);
  // NCCL asks for a chunk size once it has settled on one cell; explain only knows that cell
  // when the tuner selected it.
  if (setup_.abi >= 6 && d.cell) {
    const auto getChunkSize = setup_.abi == 6 ? as<ncclTuner_v6_t>(plugin_)->getChunkSize
                                              : as<ncclTuner_v7_t>(plugin_)->getChunkSize;
    if (getChunkSize != nullptr) {
      size_t chunk = 0;
      rc = getChunkSize(context_, func(coll), nBytes, static_cast<int>(d.cell->algo),
                        static_cast<int>(d.cell->proto), nChannels, &chunk);
      if (rc != ncclSuccess) return callFailed("getChunkSize", rc);
      d.chunk = chunk;
    }
  }
  return d;
}

}  // namespace pilot::cli
