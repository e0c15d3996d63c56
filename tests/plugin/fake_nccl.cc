#include "fake_nccl.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>

namespace fake {
namespace {

constexpr float kGuard = 7777.0f;  // usable-looking, so a stray write of 0 or -1 shows
constexpr int kGuardCells = 3;

template <typename T>
const T* symbol(void* handle, const char* name) {
  return static_cast<const T*>(dlsym(handle, name));
}

void fillPattern(void* p, size_t n) {
  auto* bytes = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(0xA5 ^ (i * 31));
}

std::atomic<int> gNcclVersion{0};
std::atomic<bool> gVersionPinned{false};

}  // namespace

void pinNcclVersion(int code) {
  gNcclVersion = code;
  gVersionPinned = true;
}

Module::Module(const char* path) {
  handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* e = dlerror();
    error_ = e ? e : "dlopen failed";
    return;
  }
  v2 = symbol<ncclTuner_v2_t>(handle_, "ncclTunerPlugin_v2");
  v3 = symbol<ncclTuner_v3_t>(handle_, "ncclTunerPlugin_v3");
  v4 = symbol<ncclTuner_v4_t>(handle_, "ncclTunerPlugin_v4");
  v5 = symbol<ncclTuner_v5_t>(handle_, "ncclTunerPlugin_v5");
  v6 = symbol<ncclTuner_v6_t>(handle_, "ncclTunerPlugin_v6");
  v7 = symbol<ncclTuner_v7_t>(handle_, "ncclTunerPlugin_v7");
}

void Module::unload() {
  if (handle_ != nullptr) {
    EXPECT_EQ(dlclose(handle_), 0) << dlerror();
  }
  handle_ = nullptr;
  v2 = nullptr;
  v3 = nullptr;
  v4 = nullptr;
  v5 = nullptr;
  v6 = nullptr;
  v7 = nullptr;
}

FakeComm::FakeComm(const Module& module, const Release& rel, Shape shape, ncclDebugLogger_t logger)
    : module_(module), rel_(rel), shape_(shape) {
  const int rpn = static_cast<int>(shape.nNodes ? shape.nRanks / shape.nNodes : 0);
  ncclNvlDomainInfo_v5_t nvl{shape.nvlDomains ? shape.nvlDomains : static_cast<int>(shape.nNodes),
                             shape.minLocalRanks ? shape.minLocalRanks : rpn,
                             shape.maxLocalRanks ? shape.maxLocalRanks : rpn};
  const ncclNvlDomainInfo_v5_t nvlCopy = nvl;
  ncclTunerConstants_v5_t constants, pattern;
  fillPattern(&constants, sizeof(constants));
  std::memcpy(&pattern, &constants, sizeof(constants));
  ncclTunerConstants_v7_t constants7, pattern7;
  fillPattern(&constants7, sizeof(constants7));
  std::memcpy(&pattern7, &constants7, sizeof(constants7));
  if (!gVersionPinned) gNcclVersion = rel.version;
  switch (rel.abi) {
    case 2:
      initResult_ = module.v2->init(shape.nRanks, shape.nNodes, logger, &context_);
      break;
    case 3:
      initResult_ = module.v3->init(shape.nRanks, shape.nNodes, logger, &context_);
      break;
    case 4:
      initResult_ = module.v4->init(shape.nRanks, shape.nNodes, logger, &context_);
      break;
    case 5:
      initResult_ =
          module.v5->init(&context_, kCommId, shape.nRanks, shape.nNodes, logger, &nvl, &constants);
      break;
    case 6:
      initResult_ =
          module.v6->init(&context_, kCommId, shape.nRanks, shape.nNodes, logger, &nvl, &constants);
      break;
    case 7:
      initResult_ = module.v7->init(&context_, kCommId, shape.nRanks, shape.nNodes, logger, &nvl,
                                    &constants7);
      break;
    default:
      ADD_FAILURE() << "no tuner ABI v" << rel.abi;
  }
  // The constants are NCCL's model inputs: a tuner that only reads a table must leave them be.
  EXPECT_EQ(std::memcmp(&constants, &pattern, sizeof(constants)), 0)
      << rel.name << ": init wrote to ncclTunerConstants_v5_t";
  EXPECT_EQ(std::memcmp(&constants7, &pattern7, sizeof(constants7)), 0)
      << rel.name << ": init wrote to ncclTunerConstants_v7_t";
  EXPECT_EQ(std::memcmp(&nvl, &nvlCopy, sizeof(nvl)), 0)
      << rel.name << ": init wrote nvlDomainInfo";
  if (initResult_ != ncclSuccess) {
    EXPECT_EQ(context_, nullptr) << "a failed init must leave no context";
  }
}

FakeComm::~FakeComm() {
  if (initResult_ != ncclSuccess) return;
  ncclResult_t r = ncclSuccess;
  switch (rel_.abi) {
    case 2:
      r = module_.v2->destroy(context_);
      break;
    case 3:
      r = module_.v3->destroy(context_);
      break;
    case 4:
      r = module_.v4->destroy(context_);
      break;
    case 5:
      r = module_.v5->finalize(context_);
      break;
    case 6:
      r = module_.v6->finalize(context_);
      break;
    case 7:
      r = module_.v7->finalize(context_);
      break;
  }
  EXPECT_EQ(r, ncclSuccess) << rel_.name << ": destroy/finalize";
}

CostTable FakeComm::model(const Call& call) const {
  return modelCosts(rel_, shape_, call.platform, call.coll, call.nBytes);
}

Choice FakeComm::ncclDefault(const Call& call) const {
  return selectMin(model(call), rel_.startMin);
}

Decision FakeComm::collInfoV2(const Call& call) const {
  Decision d;
  d.before = d.after = model(call);
  int algo = -1, proto = -1, nChannels = 0;
  const ncclResult_t r = module_.v2->getCollInfo(
      context_, static_cast<ncclFunc_t>(call.coll), call.nBytes, call.platform.collNet ? 1 : 0,
      call.platform.nvls ? 1 : 0, call.numPipeOps, &algo, &proto, &nChannels);
  EXPECT_EQ(r, ncclSuccess) << "v2 getCollInfo";
  EXPECT_EQ(algo == -1, proto == -1) << "v2 wrote only one of algorithm/protocol";
  EXPECT_GE(nChannels, 0);
  EXPECT_LE(nChannels, 64);
  d.nChannels = nChannels;
  d.changed = algo != -1 || proto != -1 || nChannels != 0;
  // NCCL 2.21 runs a pair the tuner set as is; otherwise it searches its own table.
  d.choice = algo != -1 && proto != -1 ? Choice{algo, proto} : selectMin(d.before, rel_.startMin);
  return d;
}

Decision FakeComm::collInfo(const Call& call) const {
  if (rel_.abi == 2) return collInfoV2(call);
  return collInfo(call, model(call));
}

Decision FakeComm::collInfo(const Call& call, const CostTable& costs) const {
  Decision d;
  d.before = costs;
  d.before.numAlgo = rel_.numAlgo;
  // The table sits between guard cells; with 6 algorithms the 7th row is guard too.
  float buffer[kGuardCells + kMaxAlgo * kNumProto + kGuardCells];
  for (float& c : buffer) c = kGuard;
  float* cells = buffer + kGuardCells;
  std::memcpy(cells, d.before.cells, sizeof(float) * d.before.size());
  // NCCL declares float table[numAlgo][numProto] and passes it cast to float**.
  float** table = reinterpret_cast<float**>(cells);
  int nChannels = 0;
  const auto coll = static_cast<ncclFunc_t>(call.coll);
  ncclResult_t r = ncclInternalError;
  switch (rel_.abi) {
    case 3:
      r = module_.v3->getCollInfo(context_, coll, call.nBytes, call.numPipeOps, table, rel_.numAlgo,
                                  kNumProto, &nChannels);
      break;
    case 4:
      r = module_.v4->getCollInfo(context_, coll, call.nBytes, call.numPipeOps, table, rel_.numAlgo,
                                  kNumProto, call.regBuff, &nChannels);
      break;
    case 5:
      r = module_.v5->getCollInfo(context_, coll, call.nBytes, call.numPipeOps, table, rel_.numAlgo,
                                  kNumProto, call.regBuff, &nChannels);
      break;
    case 6:
      r = module_.v6->getCollInfo(context_, coll, call.nBytes, call.numPipeOps, table, rel_.numAlgo,
                                  kNumProto, call.regBuff, &nChannels);
      break;
    case 7:
      r = module_.v7->getCollInfo(context_, coll, call.nBytes, call.numPipeOps, table, rel_.numAlgo,
                                  kNumProto, call.regBuff, &nChannels);
      break;
  }
  EXPECT_EQ(r, ncclSuccess) << rel_.name << " getCollInfo";
  for (int i = 0; i < kGuardCells; ++i) EXPECT_EQ(buffer[i], kGuard) << "wrote before the table";
  for (size_t i = kGuardCells + d.before.size(); i < sizeof(buffer) / sizeof(float); ++i) {
    EXPECT_EQ(buffer[i], kGuard) << rel_.name << ": wrote past numAlgo=" << rel_.numAlgo;
  }
  d.after = d.before;
  std::memcpy(d.after.cells, cells, sizeof(float) * d.before.size());
  for (int i = 0; i < d.before.size(); ++i) {
    const float was = d.before.cells[i], now = d.after.cells[i];
    if (was < 0.0f) {
      EXPECT_EQ(now, was) << "cell " << i << " was IGNORE; NCCL would now select it";
    } else {
      EXPECT_TRUE(now == was || now == 0.0f || now == NCCL_ALGO_PROTO_IGNORE)
          << "cell " << i << ": " << was << " -> " << now;
    }
    d.changed = d.changed || std::memcmp(&was, &now, sizeof(float)) != 0;
  }
  EXPECT_GE(nChannels, 0);
  EXPECT_LE(nChannels, 64);
  d.nChannels = nChannels;
  d.changed = d.changed || nChannels != 0;
  d.choice = selectMin(d.after, rel_.startMin);
  return d;
}

size_t FakeComm::chunkSize(int coll, size_t nBytes, int algo, int proto, int nChannels,
                           size_t ncclChunk) const {
  if (rel_.abi < 6) return ncclChunk;
  const auto getChunkSize = rel_.abi == 6 ? module_.v6->getChunkSize : module_.v7->getChunkSize;
  if (getChunkSize == nullptr) return ncclChunk;
  size_t chunk = ncclChunk;
  const ncclResult_t r =
      getChunkSize(context_, static_cast<ncclFunc_t>(coll), nBytes, algo, proto, nChannels, &chunk);
  EXPECT_EQ(r, ncclSuccess) << "getChunkSize";
  return chunk;
}

}  // namespace fake

// NCCL's ncclResult_t ncclGetVersion(int* version), exported from the test binary (CMake:
// --export-dynamic-symbol) the way libnccl exports it, so the plugin finds "the running NCCL".
extern "C" __attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  const int code = fake::gNcclVersion;
  if (version == nullptr || code == 0) return ncclInternalError;
  *version = code;
  return ncclSuccess;
}
