#include "plugin_host.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdarg>
#include <cstring>
#include <mutex>

#include "plugin_host_abi.h"

namespace plughost {
namespace {

std::mutex gLogMutex;
std::string gLines;
int gWarns = 0;

void captureLog(int level, unsigned long, const char*, int, const char* fmt, ...) {
  char line[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(line, sizeof(line), fmt, args);
  va_end(args);
  std::lock_guard<std::mutex> lock(gLogMutex);
  gLines += std::to_string(level) + " " + line + "\n";
  gWarns += level == 2;
}

void** const kOptionalCompletion = reinterpret_cast<void**>(0x1);

template <typename P>
void widenCommon(const P& p, Props* out) {
  out->name = p.name != nullptr ? p.name : "";
  out->pciPath = p.pciPath;
  out->guid = p.guid;
  out->ptrSupport = p.ptrSupport;
  out->speed = p.speed;
  out->port = p.port;
  out->latency = p.latency;
  out->maxComms = p.maxComms;
  out->maxRecvs = p.maxRecvs;
}
void widen(const PropsV6& p, Props* out) {
  widenCommon(p, out);
}
void widen(const PropsV7& p, Props* out) {
  widenCommon(p, out);
  out->netDeviceType = p.netDeviceType;
  out->netDeviceVersion = p.netDeviceVersion;
}
void widen(const PropsV8& p, Props* out) {
  widenCommon(p, out);
  out->netDeviceType = p.netDeviceType;
  out->netDeviceVersion = p.netDeviceVersion;
  out->regIsGlobal = p.regIsGlobal;
}
template <typename P>
void widenV9Like(const P& p, Props* out) {
  widenCommon(p, out);
  out->netDeviceType = p.netDeviceType;
  out->netDeviceVersion = p.netDeviceVersion;
  out->regIsGlobal = p.regIsGlobal;
  out->forceFlush = p.forceFlush;
  out->vNdevs = p.vProps.ndevs;
  out->vDev0 = p.vProps.devs[0];
  out->maxP2pBytes = p.maxP2pBytes;
  out->maxCollBytes = p.maxCollBytes;
}
void widen(const PropsV9& p, Props* out) {
  widenV9Like(p, out);
}
void widen(const PropsV11& p, Props* out) {
  widenV9Like(p.v9, out);
  out->maxMultiRequestSize = p.maxMultiRequestSize;
}
void widen(const PropsV12& p, Props* out) {
  widenV9Like(p, out);
  out->maxMultiRequestSize = p.maxMultiRequestSize;
  out->railId = p.railId;
  out->planeId = p.planeId;
}

/// getProperties on a struct filled with 0xab first, so an unset field shows.
template <typename T, typename PropsT>
std::function<int(int, Props*)> propsOf(T* net) {
  return [net](int dev, Props* out) {
    PropsT p;
    std::memset(&p, 0xab, sizeof(p));
    int r = net->getProperties(dev, &p);
    if (r == 0) widen(p, out);
    return r;
  };
}

/// What every version shares: closes, test, iflush, deregMr.
template <typename T>
void common(T* net, Net* n) {
  n->devices = net->devices;
  n->deregMr = net->deregMr;
  n->iflush = net->iflush;
  n->test = net->test;
  n->closeSend = net->closeSend;
  n->closeRecv = net->closeRecv;
  n->closeListen = net->closeListen;
  n->finalize = [](void*) { return 0; };
}

/// int sizes (v6 .. v8 data path).
template <typename T>
void intDataPath(T* net, Net* n) {
  n->isend = [net](void* c, void* d, size_t size, int tag, void* mh, void** req) {
    return net->isend(c, d, static_cast<int>(size), tag, mh, req);
  };
  n->irecv = [net](void* c, int count, void** d, const size_t* sizes, int* tags, void** mhs,
                   void** req) {
    int narrow[16] = {};
    for (int i = 0; i < count && i < 16; ++i) narrow[i] = static_cast<int>(sizes[i]);
    return net->irecv(c, count, d, narrow, tags, mhs, req);
  };
}

template <typename T>
void oldSetup(T* net, Net* n) {
  n->init = [net](void** ctx) {
    *ctx = nullptr;
    return net->init(captureLog);
  };
  n->listen = [net](void*, int dev, void* h, void** lc) { return net->listen(dev, h, lc); };
}

}  // namespace

void* openModule() {
  void* module = dlopen(PILOT_NET_MODULE, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(module, nullptr) << dlerror();
  return module;
}

std::string loggedLines() {
  std::lock_guard<std::mutex> lock(gLogMutex);
  return gLines;
}

int warnCount() {
  std::lock_guard<std::mutex> lock(gLogMutex);
  return gWarns;
}

Net loadNet(void* module, int version) {
  Net n;
  void* symbol = dlsym(module, ("ncclNetPlugin_v" + std::to_string(version)).c_str());
  if (symbol == nullptr) return n;
  n.version = version;
  if (version == 6) {
    auto* net = static_cast<NetV6*>(symbol);
    common(net, &n);
    oldSetup(net, &n);
    intDataPath(net, &n);
    n.getProperties = propsOf<NetV6, PropsV6>(net);
    n.connect = [net](void*, int dev, void* h, void** sc, void**) {
      return net->connect(dev, h, sc);
    };
    n.accept = [net](void* lc, void** rc, void**) { return net->accept(lc, rc); };
    n.regMr = [net](void* c, void* d, size_t size, int type, void** mh) {
      return net->regMr(c, d, static_cast<int>(size), type, mh);
    };
  } else if (version == 7 || version == 8) {
    auto setup = [&](auto* net, auto propsFn) {
      common(net, &n);
      oldSetup(net, &n);
      intDataPath(net, &n);
      n.getProperties = propsFn;
      n.connect = [net](void*, int dev, void* h, void** sc, void** dh) {
        return net->connect(dev, h, sc, dh);
      };
      n.accept = [net](void* lc, void** rc, void** dh) { return net->accept(lc, rc, dh); };
      n.regMr = [net](void* c, void* d, size_t size, int type, void** mh) {
        using Size = std::conditional_t<std::is_same_v<decltype(net), NetV7*>, int, size_t>;
        return net->regMr(c, d, static_cast<Size>(size), type, mh);
      };
      n.irecvConsumed = reinterpret_cast<const void*>(net->irecvConsumed);
    };
    if (version == 7) {
      auto* net = static_cast<NetV7*>(symbol);
      setup(net, propsOf<NetV7, PropsV7>(net));
    } else {
      auto* net = static_cast<NetV8*>(symbol);
      setup(net, propsOf<NetV8, PropsV8>(net));
    }
  } else if (version == 9) {
    auto* net = static_cast<NetV9*>(symbol);
    common(net, &n);
    oldSetup(net, &n);
    n.getProperties = propsOf<NetV9, PropsV9>(net);
    n.connect = [net](void*, int dev, void* h, void** sc, void** dh) {
      return net->connect(dev, h, sc, dh);
    };
    n.accept = net->accept;
    n.regMr = net->regMr;
    n.isend = net->isend;
    n.irecv = [net](void* c, int count, void** d, const size_t* sizes, int* tags, void** mhs,
                    void** req) {
      *req = kOptionalCompletion;  // NCCL 2.24+ for LL/LL128: the plugin must overwrite it
      return net->irecv(c, count, d, const_cast<size_t*>(sizes), tags, mhs, req);
    };
    n.irecvConsumed = reinterpret_cast<const void*>(net->irecvConsumed);
    n.makeVDevice = reinterpret_cast<const void*>(net->makeVDevice);
  } else if (version == 10) {
    auto* net = static_cast<NetV10*>(symbol);
    common(net, &n);
    n.init = [net](void** ctx) {
      *ctx = nullptr;
      return net->init(captureLog, nullptr);
    };
    n.listen = [net](void*, int dev, void* h, void** lc) { return net->listen(dev, h, lc); };
    n.getProperties = propsOf<NetV10, PropsV9>(net);
    n.connect = [net](void*, int dev, void* h, void** sc, void** dh) {
      CommConfig config{-1};
      return net->connect(dev, &config, h, sc, dh);
    };
    n.accept = net->accept;
    n.regMr = net->regMr;
    n.isend = [net](void* c, void* d, size_t size, int tag, void* mh, void** req) {
      return net->isend(c, d, size, tag, mh, nullptr, req);
    };
    n.irecv = [net](void* c, int count, void** d, const size_t* sizes, int* tags, void** mhs,
                    void** req) {
      *req = kOptionalCompletion;
      void* phandles[16] = {};
      return net->irecv(c, count, d, const_cast<size_t*>(sizes), tags, mhs, phandles, req);
    };
    n.irecvConsumed = reinterpret_cast<const void*>(net->irecvConsumed);
    n.makeVDevice = reinterpret_cast<const void*>(net->makeVDevice);
  } else if (version == 11 || version == 12) {
    auto setup = [&](auto* net, auto propsFn) {
      common(net, &n);
      n.init = [net](void** ctx) {
        CommConfig config{-1};  // NCCL_NET_TRAFFIC_CLASS_UNDEF
        return net->init(ctx, 0x1234, &config, captureLog, nullptr);
      };
      n.finalize = net->finalize;
      n.listen = net->listen;
      n.getProperties = propsFn;
      n.connect = net->connect;
      n.accept = net->accept;
      n.regMr = net->regMr;
      n.isend = [net](void* c, void* d, size_t size, int tag, void* mh, void** req) {
        return net->isend(c, d, size, tag, mh, nullptr, req);
      };
      n.irecv = [net](void* c, int count, void** d, const size_t* sizes, int* tags, void** mhs,
                      void** req) {
        *req = kOptionalCompletion;
        void* phandles[16] = {};
        return net->irecv(c, count, d, const_cast<size_t*>(sizes), tags, mhs, phandles, req);
      };
      n.irecvConsumed = reinterpret_cast<const void*>(net->irecvConsumed);
      n.makeVDevice = reinterpret_cast<const void*>(net->makeVDevice);
      n.setNetAttr = [net](void* ctx) {
        int32_t attr[11];  // ncclNetAttr_v11_t: 8 peer/flow hints, op, algo, proto
        std::memset(attr, 0xff, sizeof(attr));
        return net->setNetAttr(ctx, attr);
      };
    };
    if (version == 11) {
      auto* net = static_cast<NetV11*>(symbol);
      setup(net, propsOf<NetV11, PropsV11>(net));
    } else {
      auto* net = static_cast<NetV12*>(symbol);
      setup(net, propsOf<NetV12, PropsV12>(net));
    }
  } else {
    n.version = 0;
  }
  return n;
}

}  // namespace plughost
