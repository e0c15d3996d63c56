#include "netbench/session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <future>
#include <iostream>
#include <memory>

#include "netbench/connections.h"
#include "netbench/driver.h"
#include "netbench/log.h"
#include "netbench/progress.h"
#include "netbench/report.h"
#include "netbench/worker.h"
#include "pilot/core/text.h"

namespace pilot::cli {
namespace {

using nlohmann::json;

constexpr const char* kMagic = "nccl-pilot-netbench";
constexpr int kWireVersion = 1;
// Between sizes the sender only reports; a dead sender shows as a closed socket anyway.
constexpr double kIdleWaitS = 3600;

std::string toHex(const NetHandle& h) {
  static const char* const kDigits = "0123456789abcdef";
  std::string s;
  s.reserve(h.size() * 2);
  for (unsigned char b : h) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

Expected<NetHandle> fromHex(const std::string& s) {
  NetHandle h{};
  if (s.size() != h.size() * 2) return Error{"malformed handle from the peer"};
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < h.size(); ++i) {
    const int hi = digit(s[2 * i]), lo = digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return Error{"malformed handle from the peer"};
    h[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return h;
}

/// One side's threads, plugin endpoint and bootstrap conversation.
class Session {
 public:
  Session(NetDriver& driver, int dev, int channels, const ProtoBufferSizes& buffers,
          WireSocket& wire, double timeoutS)
      : endpoint(driver, dev, channels, buffers), wire_(wire), timeoutS_(timeoutS) {}

  /// Tears down on the service thread if nobody did (an early return).
  ~Session() { teardown(); }

  SetupLimits limits() const { return {&abort, timeoutS_}; }

  /// The task's result once it ended. While it runs, the wire is watched: an abort or a closed
  /// connection sets `abort` (the task then gives up) and becomes this call's error; other
  /// messages are kept for next().
  template <typename T>
  Expected<T> await(std::future<Expected<T>>& future) {
    watch(future);
    Expected<T> result = future.get();
    if (!peerFailure_.empty()) return Error{peerFailure_};
    return result;
  }
  Status await(std::future<Status>& future) {
    watch(future);
    Status result = future.get();
    if (!peerFailure_.empty()) return Error{peerFailure_};
    return result;
  }

  /// The next message, which must have type `type` (or be an abort, which becomes the error).
  Expected<json> next(const std::string& type, double timeoutS) {
    if (!peerFailure_.empty()) return Error{peerFailure_};
    json message;
    if (!pending_.empty()) {
      message = std::move(pending_.front());
      pending_.pop_front();
    } else {
      auto received = wire_.receive(timeoutS);
      if (!received.ok()) return Error{"bootstrap: " + received.error()};
      message = std::move(*received);
    }
    const std::string got = message["type"].get<std::string>();
    if (got == "abort") return Error{"peer: " + message.value("message", std::string("failed"))};
    if (!type.empty() && got != type) {
      return Error{"bootstrap: expected '" + type + "' from the peer, got '" + got + "'"};
    }
    return message;
  }

  Status send(const json& message) {
    if (Status s = wire_.send(message); !s.ok()) return Error{"bootstrap: " + s.error()};
    return Status::success();
  }

  /// Tells the peer why this side stops (best effort: it may be gone already).
  void sendAbort(const std::string& message) {
    (void)wire_.send({{"type", "abort"}, {"message", message}});
  }

  /// The service thread's teardown (NCCL's order), once.
  void teardown() {
    if (tornDown_) return;
    tornDown_ = true;
    service.submit([this] { endpoint.close(); }).wait();
  }

  Endpoint endpoint;
  // Declared after endpoint: joined (destroyed) first, so no task outlives what it uses.
  Worker service{"netbench-svc"};
  Worker progress{"netbench-prog"};
  std::atomic<bool> abort{false};

 private:
  template <typename Future>
  void watch(Future& future) {
    while (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      if (abort.load()) {  // the task is giving up; nothing more to read
        future.wait_for(std::chrono::milliseconds(10));
        continue;
      }
      if (!wire_.readable(2)) continue;
      auto message = wire_.receive(5);
      if (!message.ok()) {
        peerFailure_ = "the peer went away (" + message.error() + ")";
        abort = true;
      } else if ((*message)["type"] == "abort") {
        peerFailure_ = "peer: " + message->value("message", std::string("failed"));
        abort = true;
      } else {
        pending_.push_back(std::move(*message));
      }
    }
  }

  WireSocket& wire_;
  double timeoutS_;
  std::deque<json> pending_;
  std::string peerFailure_;
  bool tornDown_ = false;
};

json deviceJson(const NetDeviceInfo& d) {
  return {{"name", d.name},
          {"speed_mbps", d.speedMbps},
          {"ptr_support", d.ptrSupport},
          {"max_comms", d.maxComms},
          {"max_recvs", d.maxRecvs},
          {"pci_path", d.pciPath},
          {"max_p2p_bytes", d.maxP2pBytes}};
}

}  // namespace

Expected<int> chooseAbi(const NetPluginLibrary& lib, int requested) {
  if (requested == 0) return lib.newestAbi();
  if (std::find(lib.abis.begin(), lib.abis.end(), requested) == lib.abis.end()) {
    std::string list;
    for (int v : lib.abis) list += (list.empty() ? "v" : ", v") + std::to_string(v);
    return Error{"--abi " + std::to_string(requested) + ": " + lib.path + " exports only " + list};
  }
  return requested;
}

Status runSenderSide(const NetbenchOptions& opts, const NetPluginLibrary& lib, WireSocket wire,
                     const std::string& peer) {
  auto abi = chooseAbi(lib, opts.abi);
  if (!abi.ok()) return Error{abi.error()};
  auto driver = createNetDriver(*abi, lib.symbol(*abi));
  if (!driver.ok()) return Error{driver.error()};
  auto buffers = bufferSizesFromEnvironment();
  if (!buffers.ok()) return Error{buffers.error()};
  const StepShape shape = stepShape(*buffers, opts.proto, opts.sliceSteps, opts.channels);

  Session session(**driver, opts.dev, opts.channels, *buffers, wire, opts.timeoutS);
  auto fail = [&](const std::string& message) -> Status {
    session.sendAbort(message);
    session.teardown();
    return Error{message};
  };

  const json hello = {{"type", "hello"},
                      {"magic", kMagic},
                      {"version", kWireVersion},
                      {"channels", opts.channels},
                      {"proto", protoName(opts.proto)},
                      {"slice_steps", opts.sliceSteps},
                      {"buffers", *buffers},
                      {"timeout_s", opts.timeoutS}};
  if (Status s = session.send(hello); !s.ok()) return fail(s.error());

  // Both sides open their plugin at once, as ranks initialise communicators together.
  auto opening = session.service.submit([&] { return session.endpoint.open(); });
  auto device = session.await(opening);
  if (!device.ok()) return fail(device.error());
  auto peerHello = session.next("hello", opts.timeoutS);
  if (!peerHello.ok()) return fail(peerHello.error());
  auto handlesMessage = session.next("handles", opts.timeoutS);
  if (!handlesMessage.ok()) return fail(handlesMessage.error());
  std::vector<NetHandle> handles;
  for (const json& h : (*handlesMessage)["handles"]) {
    auto handle = fromHex(h.is_string() ? h.get<std::string>() : "");
    if (!handle.ok()) return fail(handle.error());
    handles.push_back(*handle);
  }

  auto connecting = session.service.submit([&]() -> Status {
    if (Status s = session.endpoint.connect(handles, session.limits()); !s.ok()) return s;
    return session.endpoint.registerBuffers();
  });
  if (Status s = session.await(connecting); !s.ok()) return fail(s.error());
  if (auto ready = session.next("ready", opts.timeoutS); !ready.ok()) return fail(ready.error());

  NetbenchRun run;
  run.pluginPath = lib.path;
  run.pluginName = (*driver)->pluginName();
  run.abi = *abi;
  run.abis = lib.abis;
  run.dev = opts.dev;
  run.device = *device;
  run.peer = peer;
  run.peerPluginPath = peerHello->value("plugin", std::string());
  run.peerAbi = peerHello->value("abi", 0);
  run.channels = opts.channels;
  run.proto = opts.proto;
  run.shape = shape;
  run.warmup = opts.warmup;
  if (!opts.json) printHeader(std::cout, run);

  std::vector<SizeResult> rows;
  for (size_t i = 0; i < opts.sizes.size(); ++i) {
    const uint64_t size = opts.sizes[i];
    const SizePlan plan(size, opts.channels, shape.messageBytes(), opts.warmup,
                        iterationsFor(size, opts.iters, opts.minBytes));
    const json start = {{"type", "run"},
                        {"index", i},
                        {"size", size},
                        {"warmup", plan.warmup()},
                        {"iterations", plan.iterations()}};
    if (Status s = session.send(start); !s.ok()) return fail(s.error());
    if (auto posted = session.next("posted", opts.timeoutS); !posted.ok()) {
      return fail(posted.error());
    }
    ProgressSetup setup;
    setup.endpoint = &session.endpoint;
    setup.proto = opts.proto;
    setup.shape = shape;
    setup.plan = &plan;
    setup.sizeIndex = static_cast<uint32_t>(i);
    setup.tag = 0;  // the sender's rank
    setup.timeoutS = opts.timeoutS;
    setup.abort = &session.abort;
    auto sending = session.progress.submit([&] { return runSendProgress(setup); });
    auto sent = session.await(sending);
    if (!sent.ok()) return fail("size " + text::formatBytes(size) + ": " + sent.error());
    auto result = session.next("result", opts.timeoutS + 10);
    if (!result.ok()) return fail("size " + text::formatBytes(size) + ": " + result.error());

    const std::string corruption = result->value("corruption", std::string());
    SizeResult row = makeSizeResult(
        size, plan.iterations(), result->value("messages", uint64_t{0}),
        result->value("bytes", uint64_t{0}), result->value("elapsed_ns", int64_t{0}),
        sent->latency.quantileNs(0.50), sent->latency.quantileNs(0.99), corruption.empty());
    row.cpuSenderMs = static_cast<double>(sent->cpuNs) / 1e6;
    row.cpuReceiverMs = static_cast<double>(result->value("cpu_ns", int64_t{0})) / 1e6;
    // ms per byte * 1e9 / 1e3 = s per GB.
    if (row.bytes > 0) {
      row.cpuSPerGB = (row.cpuSenderMs + row.cpuReceiverMs) * 1e6 / static_cast<double>(row.bytes);
    }
    rows.push_back(row);
    if (!opts.json) printRow(std::cout, row);
    if (!corruption.empty()) {
      const uint64_t bad = result->value("corrupt_messages", uint64_t{0});
      return fail("payload corrupted at size " + text::formatBytes(size) + ", " + corruption +
                  (bad > 1 ? " (" + std::to_string(bad) + " messages bad)" : ""));
    }
  }

  if (Status s = session.send({{"type", "quit"}}); !s.ok()) return fail(s.error());
  session.teardown();
  if (auto bye = session.next("bye", opts.timeoutS); !bye.ok()) return Error{bye.error()};
  if (opts.json) std::cout << resultsJson(run, rows).dump(2) << "\n";
  return Status::success();
}

Expected<SenderHello> readSenderHello(WireSocket& wire, double timeoutS) {
  auto message = wire.receive(timeoutS);
  if (!message.ok()) return Error{message.error()};
  const json& m = *message;
  if (m.value("type", std::string()) != "hello" || m.value("magic", std::string()) != kMagic) {
    return Error{"not a netbench sender"};
  }
  if (m.value("version", 0) != kWireVersion) {
    return Error{"the sender speaks netbench protocol version " +
                 std::to_string(m.value("version", 0)) + ", this side " +
                 std::to_string(kWireVersion)};
  }
  SenderHello hello;
  hello.channels = m.value("channels", 0);
  auto proto = parseProto(m.value("proto", std::string()));
  hello.sliceSteps = m.value("slice_steps", 0);
  hello.timeoutS = m.value("timeout_s", 60.0);
  const json& buffers = m.contains("buffers") ? m["buffers"] : json();
  // Everything that sizes an allocation or a loop is bounded before use.
  if (hello.channels < 1 || hello.channels > kMaxChannels || !proto ||
      (hello.sliceSteps != 1 && hello.sliceSteps != 2) || !buffers.is_array() ||
      buffers.size() != kNumProtos || !(hello.timeoutS > 0 && hello.timeoutS <= 86400)) {
    return Error{"malformed hello from the sender"};
  }
  hello.proto = *proto;
  for (int p = 0; p < kNumProtos; ++p) {
    const uint64_t bytes = buffers[p].is_number_unsigned() ? buffers[p].get<uint64_t>() : 0;
    if (bytes == 0 || bytes % (kNcclSteps * 8) != 0 || bytes > (uint64_t{1} << 30)) {
      return Error{"malformed hello from the sender (buffer sizes)"};
    }
    hello.buffers[p] = static_cast<size_t>(bytes);
  }
  return hello;
}

Status runReceiverSide(const NetbenchOptions& local, const SenderHello& hello,
                       const NetPluginLibrary& lib, WireSocket wire, bool quiet) {
  auto abi = chooseAbi(lib, local.abi);
  auto driver = abi.ok() ? createNetDriver(*abi, lib.symbol(*abi))
                         : Expected<std::unique_ptr<NetDriver>>(Error{abi.error()});
  if (!driver.ok()) {
    (void)wire.send({{"type", "abort"}, {"message", driver.error()}});
    return Error{driver.error()};
  }
  // The sender's buffer sizes: receives are posted with its slot size, as when NCCL_BUFFSIZE
  // is the same on every rank.
  const StepShape shape = stepShape(hello.buffers, hello.proto, hello.sliceSteps, hello.channels);
  Session session(**driver, local.dev, hello.channels, hello.buffers, wire, hello.timeoutS);
  auto fail = [&](const std::string& message) -> Status {
    session.sendAbort(message);
    session.teardown();
    return Error{message};
  };

  NetDeviceInfo deviceInfo;
  auto opening = session.service.submit([&]() -> Expected<std::vector<NetHandle>> {
    auto device = session.endpoint.open();
    if (!device.ok()) return Error{device.error()};
    deviceInfo = *device;
    return session.endpoint.listen();
  });
  auto handles = session.await(opening);
  if (!handles.ok()) return fail(handles.error());
  json handleList = json::array();
  for (const NetHandle& h : *handles) handleList.push_back(toHex(h));
  const json reply = {{"type", "hello"},
                      {"plugin", lib.path},
                      {"name", (*driver)->pluginName()},
                      {"abi", *abi},
                      {"device", deviceJson(deviceInfo)}};
  if (Status s = session.send(reply); !s.ok()) return fail(s.error());
  if (Status s = session.send({{"type", "handles"}, {"handles", handleList}}); !s.ok()) {
    return fail(s.error());
  }

  auto accepting = session.service.submit([&]() -> Status {
    if (Status s = session.endpoint.accept(session.limits()); !s.ok()) return s;
    return session.endpoint.registerBuffers();
  });
  if (Status s = session.await(accepting); !s.ok()) return fail(s.error());
  if (Status s = session.send({{"type", "ready"}}); !s.ok()) return fail(s.error());
  if (!quiet) {
    std::cerr << "netbench: " << hello.channels << " channel(s) connected from " << wire.peer()
              << " (ncclNetPlugin_v" << *abi << ", " << protoName(hello.proto) << ")\n";
  }

  bool corrupted = false;
  for (;;) {
    auto message = session.next("", kIdleWaitS);
    if (!message.ok()) return fail(message.error());
    const std::string type = (*message)["type"].get<std::string>();
    if (type == "quit") break;
    if (type != "run") return fail("bootstrap: unexpected '" + type + "' from the sender");
    const uint64_t index = message->value("index", uint64_t{0});
    const uint64_t size = message->value("size", uint64_t{0});
    const uint64_t warmup = message->value("warmup", uint64_t{0});
    const uint64_t iterations = message->value("iterations", uint64_t{0});
    if (index > UINT32_MAX || iterations == 0 || warmup > (uint64_t{1} << 40) ||
        iterations > (uint64_t{1} << 40) || size > (uint64_t{1} << 40)) {
      return fail("bootstrap: malformed 'run' from the sender");
    }
    const SizePlan plan(size, hello.channels, shape.messageBytes(), warmup, iterations);
    ProgressSetup setup;
    setup.endpoint = &session.endpoint;
    setup.proto = hello.proto;
    setup.shape = shape;
    setup.plan = &plan;
    setup.sizeIndex = static_cast<uint32_t>(index);
    setup.tag = 0;  // the remote sender's rank
    setup.timeoutS = hello.timeoutS;
    setup.abort = &session.abort;
    // The progress thread says "posted" itself, the moment its first receives are up.
    auto receiving = session.progress.submit([&] {
      return runRecvProgress(setup, [&] { (void)wire.send({{"type", "posted"}}); });
    });
    auto received = session.await(receiving);
    if (!received.ok()) return fail("size " + text::formatBytes(size) + ": " + received.error());
    const json result = {{"type", "result"},
                         {"bytes", received->bytes},
                         {"messages", received->messages},
                         {"elapsed_ns", received->elapsedNs},
                         {"cpu_ns", received->cpuNs},
                         {"corrupt_messages", received->corruptMessages},
                         {"corruption", received->firstCorruption}};
    if (Status s = session.send(result); !s.ok()) return fail(s.error());
    corrupted = corrupted || !received->firstCorruption.empty();
    if (!quiet) {
      const double gbps = received->elapsedNs > 0 ? static_cast<double>(received->bytes) /
                                                        static_cast<double>(received->elapsedNs)
                                                  : 0;
      std::cerr << "netbench: size " << text::formatBytes(size) << ": " << received->messages
                << " messages, " << gbps << " GB/s, "
                << (received->firstCorruption.empty() ? "verified"
                                                      : "CORRUPTED: " + received->firstCorruption)
                << "\n";
    }
  }
  session.teardown();
  (void)session.send({{"type", "bye"}});
  if (corrupted) return Error{"payload corrupted (reported to the sender)"};
  return Status::success();
}

}  // namespace pilot::cli
