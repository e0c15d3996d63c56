// The socket Transport: devices are the selected interfaces; comms are the objects of
// socket_comm.h / socket_setup.h; connect() finds its state again through a ticket written
// into NCCL's handle (NCCL passes the same buffer on every retry, research/net.md §2.2).
#include <mutex>
#include <unordered_map>

#include "lingering_close.h"
#include "pilot/core/text.h"
#include "pilot/topology/sources.h"
#include "socket_setup.h"

namespace pilot::net {
namespace {

struct SocketMemory final : MemoryHandle {
  void* data = nullptr;
  size_t size = 0;
};

class SocketTransport final : public Transport {
 public:
  SocketTransport(std::vector<NetInterface> nics, const SocketOptions& options, Logger& log)
      : nics_(std::move(nics)), options_(options), log_(log) {}

  ~SocketTransport() override {
    // Connects NCCL gave up on (an abort mid-setup) still own sockets.
    std::lock_guard<std::mutex> lock(mutex_);
    connects_.clear();
    sweepLingeringSockets();
  }

  int deviceCount() const override { return static_cast<int>(nics_.size()); }

  Expected<DeviceProperties> properties(int dev) const override {
    if (dev < 0 || dev >= deviceCount()) return Error{"no network device " + std::to_string(dev)};
    const topology::SysfsRoot sysfs(options_.sysfsRoot);
    DeviceProperties p;
    p.name = nics_[dev].name;
    const std::string base = "/sys/class/net/" + p.name;
    // A virtual interface (lo, bridges, veth) has no device link: NCCL then attaches the NIC
    // to the first CPU of its topology.
    if (auto device = sysfs.resolve(base + "/device")) p.pciPath = sysfs.path(*device);
    if (auto speed = sysfs.readLine(base + "/speed")) {
      auto mbps = text::parseSigned(*speed);
      if (mbps && *mbps > 0 && *mbps <= (int64_t{1} << 30)) p.speedMbps = static_cast<int>(*mbps);
    }
    p.guid = static_cast<uint64_t>(dev);
    p.maxMessageBytes = wire::kMaxMessage;
    return p;
  }

  Expected<ListenComm*> listen(int dev, void* handle) override {
    if (dev < 0 || dev >= deviceCount()) return Error{"no network device " + std::to_string(dev)};
    sweepLingeringSocketsWhenDue();
    auto comm = SocketListenComm::open(nics_[dev], options_, log_, handle);
    if (!comm) return Error{comm.error()};
    return static_cast<ListenComm*>(comm->release());
  }

  Expected<SendComm*> connect(int dev, void* handle, const ConnectOptions& options) override {
    if (dev < 0 || dev >= deviceCount()) return Error{"no network device " + std::to_string(dev)};
    sweepLingeringSocketsWhenDue();
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t ticket = wire::handleTicket(handle);
    auto it = connects_.find(ticket);
    if (ticket == 0) {
      auto started = PendingConnect::start(handle, options_, options);
      if (!started) return Error{started.error()};
      ticket = ++lastTicket_;
      it = connects_.emplace(ticket, std::move(*started)).first;
      wire::setHandleTicket(handle, ticket);
    } else if (it == connects_.end()) {
      return Error{"connect: the handle names a connection attempt that does not exist"};
    }
    Expected<bool> ready = it->second->progress();
    if (ready.ok() && !*ready) return static_cast<SendComm*>(nullptr);
    std::unique_ptr<PendingConnect> pending = std::move(it->second);
    connects_.erase(it);
    wire::setHandleTicket(handle, 0);  // the same handle may start a new attempt
    if (!ready) return Error{ready.error()};
    return static_cast<SendComm*>(new SocketSendComm(pending->take(), log_));
  }

  Expected<RecvComm*> accept(ListenComm* listen) override {
    sweepLingeringSocketsWhenDue();
    auto comm = static_cast<SocketListenComm*>(listen)->accept();
    if (!comm) return Error{comm.error()};
    return static_cast<RecvComm*>(*comm);
  }

  Expected<MemoryHandle*> registerMemory(void* comm, void* data, size_t size, int type) override {
    if (type != kPtrHost) {
      return Error{"regMr: the socket transport moves host memory only (type " +
                   std::to_string(type) + " is not NCCL_PTR_HOST)"};
    }
    auto* m = new SocketMemory();
    m->data = data;
    m->size = size;
    return static_cast<MemoryHandle*>(m);
  }

  Status deregisterMemory(void* comm, MemoryHandle* handle) override {
    delete static_cast<SocketMemory*>(handle);
    return Status::success();
  }

  Expected<Request*> isend(SendComm* comm, const void* data, size_t size, int tag,
                           MemoryHandle* handle) override {
    return static_cast<SocketSendComm*>(comm)->isend(data, size, tag);
  }

  Expected<Request*> irecv(RecvComm* comm, int n, void* const* data, const size_t* sizes,
                           const int* tags, MemoryHandle* const* handles) override {
    return static_cast<SocketRecvComm*>(comm)->irecv(n, data, sizes, tags);
  }

  Expected<Request*> iflush(RecvComm* comm, int n, void* const* data, const int* sizes,
                            MemoryHandle* const* handles) override {
    return static_cast<Request*>(nullptr);  // host memory: the data is already there
  }

  Status test(Request* request, TestResult* result) override {
    // Sockets of closed send comms go once their receivers closed (or their deadline passed),
    // not at this process's next close, which may never come.
    sweepLingeringSocketsWhenDue();
    auto* r = static_cast<SocketRequest*>(request);
    if (r->state == SocketRequest::State::Free) {
      const char* what = "test: the request is not in flight (already reported done?)";
      PILOT_LOG(log_, Warn, subsys::Net, "%s", what);
      return Error{what};
    }
    if (r->kind == SocketRequest::Kind::Send) {
      return owner<SocketSendComm>(r)->test(r, result);
    }
    return owner<SocketRecvComm>(r)->test(r, result);
  }

  void closeSend(SendComm* comm) override { delete static_cast<SocketSendComm*>(comm); }
  void closeRecv(RecvComm* comm) override {
    delete static_cast<SocketRecvComm*>(comm);
    sweepLingeringSockets();
  }
  void closeListen(ListenComm* comm) override { delete static_cast<SocketListenComm*>(comm); }

 private:
  template <typename Comm>
  static Comm* owner(SocketRequest* r) {
    return static_cast<Comm*>(r->owner);
  }

  const std::vector<NetInterface> nics_;
  const SocketOptions options_;
  Logger& log_;
  std::mutex mutex_;
  std::unordered_map<uint64_t, std::unique_ptr<PendingConnect>> connects_;
  uint64_t lastTicket_ = 0;
};

}  // namespace

std::unique_ptr<Transport> makeSocketTransport(std::vector<NetInterface> interfaces,
                                               const SocketOptions& options, Logger& log) {
  return std::make_unique<SocketTransport>(std::move(interfaces), options, log);
}

Expected<std::unique_ptr<Transport>> makeSocketTransport(const EnvLookup& env, Logger& log) {
  std::vector<std::string> warnings;
  SocketOptions options = socketOptionsFromEnv(env, &warnings);
  for (const std::string& w : warnings)
    PILOT_LOG(log, Warn, subsys::Net | subsys::Env, "%s", w.c_str());
  auto nics = findInterfaces(env);
  if (!nics) return Error{nics.error()};
  return makeSocketTransport(std::move(*nics), options, log);
}

}  // namespace pilot::net
