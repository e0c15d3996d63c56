#include "netbench/driver.h"

#include <climits>

#include "abi/net_v10.h"
#include "abi/net_v12.h"
#include "abi/net_v6.h"
#include "abi/net_v7.h"
#include "abi/net_v8.h"
#include "abi/net_v9.h"
#include "netbench/log.h"

namespace pilot::cli {
namespace {

using namespace pilot::nccl;

// Each ABI version's types; Config is void before v10 and Attr before v11, where it has none.
template <class N, class P, class C = void, class A = void>
struct AbiTypes {
  using Net = N;
  using Props = P;
  using Config = C;
  using Attr = A;
};
template <int V>
struct Abi;
template <>
struct Abi<6> : AbiTypes<ncclNet_v6_t, ncclNetProperties_v6_t> {};
template <>
struct Abi<7> : AbiTypes<ncclNet_v7_t, ncclNetProperties_v7_t> {};
template <>
struct Abi<8> : AbiTypes<ncclNet_v8_t, ncclNetProperties_v8_t> {};
template <>
struct Abi<9> : AbiTypes<ncclNet_v9_t, ncclNetProperties_v9_t> {};
template <>
struct Abi<10> : AbiTypes<ncclNet_v10_t, ncclNetProperties_v10_t, ncclNetCommConfig_v10_t> {};
template <>
struct Abi<11>
    : AbiTypes<ncclNet_v11_t, ncclNetProperties_v11_t, ncclNetCommConfig_v11_t, ncclNetAttr_v11_t> {
};
template <>
struct Abi<12>
    : AbiTypes<ncclNet_v12_t, ncclNetProperties_v12_t, ncclNetCommConfig_v12_t, ncclNetAttr_v12_t> {
};

static_assert(sizeof(ncclNetAttr_v12_t) == sizeof(NetAttr), "v12 attributes are v11's");

std::string failed(const char* call, ncclResult_t rc) {
  return std::string(call) + " returned " + resultName(rc);
}

template <int V>
class Adapter final : public NetDriver {
  using Net = typename Abi<V>::Net;
  using Props = typename Abi<V>::Props;

 public:
  // Function pointers are read at every call, never cached: some plugins (SHARP's) export a
  // struct holding only name and init, and fill in the rest during init, as NCCL tolerates.
  explicit Adapter(Net* net) : NetDriver(V, net->name ? net->name : "(null)"), net_(net) {}

  Status init() override {
    if (net_->init == nullptr) return Error{"init is NULL"};
    ncclResult_t rc;
    if constexpr (V >= 11) {
      // One communicator, no traffic class set; the profiler callback is NULL as without an
      // NCCL profiler plugin.
      typename Abi<V>::Config config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
      rc = net_->init(&ctx_, kCommId, &config, netbenchLog, nullptr);
    } else if constexpr (V == 10) {
      rc = net_->init(netbenchLog, nullptr);
    } else {
      rc = net_->init(netbenchLog);
    }
    if (rc != ncclSuccess) return Error{failed("init", rc)};
    initialized_ = true;
    return Status::success();
  }

  void finalize() override {
    if constexpr (V >= 11) {
      if (initialized_ && net_->finalize != nullptr) {
        if (ncclResult_t rc = net_->finalize(ctx_); rc != ncclSuccess) {
          netbenchWarn("finalize returned " + resultName(rc));
        }
      }
    }
    initialized_ = false;
  }

  Expected<int> devices() override {
    int n = -1;
    if (ncclResult_t rc = net_->devices(&n); rc != ncclSuccess) return Error{failed("devices", rc)};
    return n;
  }

  Expected<NetDeviceInfo> properties(int dev) override {
    Props p{};
    if (ncclResult_t rc = net_->getProperties(dev, &p); rc != ncclSuccess) {
      return Error{failed("getProperties", rc)};
    }
    NetDeviceInfo d;
    d.name = p.name ? p.name : "";
    d.pciPath = p.pciPath ? p.pciPath : "";
    d.guid = p.guid;
    d.ptrSupport = p.ptrSupport;
    d.speedMbps = p.speed;
    d.port = p.port;
    d.latencyUs = p.latency;
    d.maxComms = p.maxComms;
    d.maxRecvs = p.maxRecvs;
    if constexpr (V >= 7) {
      d.netDeviceType = p.netDeviceType;
      d.netDeviceVersion = p.netDeviceVersion;
    }
    if constexpr (V >= 8) d.regIsGlobal = p.regIsGlobal;
    if constexpr (V >= 9) {
      d.forceFlush = p.forceFlush;
      d.vNics = p.vProps.ndevs;
      d.maxP2pBytes = p.maxP2pBytes;
      d.maxCollBytes = p.maxCollBytes;
    }
    if constexpr (V >= 11) d.maxMultiRequestSize = p.maxMultiRequestSize;
    if constexpr (V >= 12) {
      d.railId = p.railId;
      d.planeId = p.planeId;
    }
    return d;
  }

  ncclResult_t listen(int dev, void* handle, void** listenComm) override {
    if constexpr (V >= 11)
      return net_->listen(ctx_, dev, handle, listenComm);
    else
      return net_->listen(dev, handle, listenComm);
  }

  ncclResult_t connect(int dev, void* handle, void** sendComm) override {
    // A host transport gets the address of a NULL device handle, as from NCCL's proxy.
    ncclNetDeviceHandle_v7_t* devHandle = nullptr;
    if constexpr (V >= 11) {
      return net_->connect(ctx_, dev, handle, sendComm, &devHandle);
    } else if constexpr (V == 10) {
      ncclNetCommConfig_v10_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
      return net_->connect(dev, &config, handle, sendComm, &devHandle);
    } else if constexpr (V >= 7) {
      return net_->connect(dev, handle, sendComm, &devHandle);
    } else {
      return net_->connect(dev, handle, sendComm);
    }
  }

  ncclResult_t accept(void* listenComm, void** recvComm) override {
    if constexpr (V >= 7) {
      ncclNetDeviceHandle_v7_t* devHandle = nullptr;
      return net_->accept(listenComm, recvComm, &devHandle);
    } else {
      return net_->accept(listenComm, recvComm);
    }
  }

  ncclResult_t closeListen(void* c) override { return net_->closeListen(c); }
  ncclResult_t closeSend(void* c) override { return net_->closeSend(c); }
  ncclResult_t closeRecv(void* c) override { return net_->closeRecv(c); }

  ncclResult_t regMr(void* comm, void* data, size_t size, void** mhandle) override {
    if constexpr (V <= 7) {
      if (size > static_cast<size_t>(INT_MAX)) return ncclInternalError;  // as NCCL's shims
      return net_->regMr(comm, data, static_cast<int>(size), NCCL_PTR_HOST, mhandle);
    } else {
      return net_->regMr(comm, data, size, NCCL_PTR_HOST, mhandle);
    }
  }

  ncclResult_t deregMr(void* comm, void* mhandle) override { return net_->deregMr(comm, mhandle); }

  ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                     void** request) override {
    if constexpr (V <= 8) {
      if (size > MAX_NET_SIZE) return ncclInternalError;
      return net_->isend(sendComm, data, static_cast<int>(size), tag, mhandle, request);
    } else if constexpr (V == 9) {
      return net_->isend(sendComm, data, size, tag, mhandle, request);
    } else {
      return net_->isend(sendComm, data, size, tag, mhandle, phandle, request);
    }
  }

  ncclResult_t irecv(void* recvComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                     bool optionalCompletion, void** request) override {
    void* datas[1] = {data};
    int tags[1] = {tag};
    void* mhandles[1] = {mhandle};
    if constexpr (V <= 8) {
      *request = nullptr;  // the v6..v8 shims turn the 0x1 preset back into NULL
      if (size > MAX_NET_SIZE) return ncclInternalError;
      int sizes[1] = {static_cast<int>(size)};
      return net_->irecv(recvComm, 1, datas, sizes, tags, mhandles, request);
    } else {
      *request = optionalCompletion ? kOptionalCompletion : nullptr;
      size_t sizes[1] = {size};
      if constexpr (V == 9) {
        return net_->irecv(recvComm, 1, datas, sizes, tags, mhandles, request);
      } else {
        void* phandles[1] = {phandle};
        return net_->irecv(recvComm, 1, datas, sizes, tags, mhandles, phandles, request);
      }
    }
  }

  ncclResult_t test(void* request, int* done, int* sizes) override {
    return net_->test(request, done, sizes);
  }

  bool hasIrecvConsumed() const override {
    if constexpr (V >= 7)
      return net_->irecvConsumed != nullptr;
    else
      return false;
  }

  ncclResult_t irecvConsumed(void* recvComm, int n, void* request) override {
    if constexpr (V >= 7)
      return net_->irecvConsumed(recvComm, n, request);
    else
      return ncclInternalError;
  }

  bool hasSetNetAttr() const override {
    if constexpr (V >= 11)
      return net_->setNetAttr != nullptr;
    else
      return false;
  }

  ncclResult_t setNetAttr(NetAttr* attr) override {
    if constexpr (V >= 11) {
      return net_->setNetAttr(ctx_, reinterpret_cast<typename Abi<V>::Attr*>(attr));
    } else {
      return ncclInternalError;
    }
  }

 private:
  // Any id: one communicator per process.
  static constexpr uint64_t kCommId = 0x6e6574626e6368;  // "netbnch"

  Net* net_;
  void* ctx_ = nullptr;
  bool initialized_ = false;
};

template <int V>
std::unique_ptr<NetDriver> adapter(void* symbol) {
  return std::make_unique<Adapter<V>>(static_cast<typename Abi<V>::Net*>(symbol));
}

}  // namespace

Expected<std::unique_ptr<NetDriver>> createNetDriver(int abi, void* symbol) {
  if (symbol == nullptr) return Error{"no ncclNetPlugin_v" + std::to_string(abi) + " symbol"};
  switch (abi) {
    case 6:
      return adapter<6>(symbol);
    case 7:
      return adapter<7>(symbol);
    case 8:
      return adapter<8>(symbol);
    case 9:
      return adapter<9>(symbol);
    case 10:
      return adapter<10>(symbol);
    case 11:
      return adapter<11>(symbol);
    case 12:
      return adapter<12>(symbol);
    default:
      return Error{"net ABI v" + std::to_string(abi) + " is not one netbench drives (v6..v12)"};
  }
}

std::string resultName(ncclResult_t rc) {
  static const char* const kNames[] = {
      "ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
      "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress"};
  const int i = static_cast<int>(rc);
  if (i >= 0 && i < static_cast<int>(sizeof(kNames) / sizeof(kNames[0]))) return kNames[i];
  return "ncclResult_t " + std::to_string(i);
}

}  // namespace pilot::cli
