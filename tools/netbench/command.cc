// `nccl-pilot netbench`: loads any NCCL net plugin and drives it the way NCCL's proxy does,
// between two processes, with every payload verified: by default against a peer it spawns on
// loopback; with --listen / --peer across hosts. Host memory only, no GPU.
#include <cstdlib>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "netbench/driver.h"
#include "netbench/log.h"
#include "netbench/session.h"
#include "netbench/spawn.h"
#include "netbench/wire.h"
#include "pilot/core/text.h"

namespace pilot::cli {
namespace {

/// netbench measures a transport, and nccl-pilot's library carries data only when asked: under
/// its default NCCL_PILOT_TRANSPORT=auto it leaves Ethernet to NCCL's own Socket transport and
/// reports 0 devices. Handed our library with the setting unset, netbench asks for ours (the
/// spawned peer inherits it) and says so.
void askForPilotTransport(const NetPluginLibrary& lib, int abi) {
  // Every ncclNet_vN starts with its name.
  const auto* name = static_cast<const char* const*>(lib.symbol(abi));
  if (name == nullptr || *name == nullptr || std::string(*name) != kPilotNetName) return;
  if (std::getenv("NCCL_PILOT_TRANSPORT") != nullptr) return;
  ::setenv("NCCL_PILOT_TRANSPORT", "socket", 1);
  std::cerr << "netbench: " << lib.path
            << " is nccl-pilot's library: benchmarking its TCP transport "
               "(NCCL_PILOT_TRANSPORT=socket; its default, auto, leaves Ethernet to NCCL's "
               "own Socket transport)\n";
}

struct NetbenchArgs {
  NetbenchOptions opts;
  std::string sizes = "4K,64K,1M,4M";
  std::string minBytes = "0";
  std::string proto = "simple";
  std::string peer;
  int listenPort = -1;
  int listenFd = -1;  // hidden: the spawned peer's inherited bootstrap socket
};

// A peer that never connects, between the two processes of the default mode.
constexpr double kSpawnConnectS = 30;
// How long a --listen side waits for its sender; a port scan's connection gets this long to
// say hello before it is dropped.
constexpr double kListenWaitS = 86400;
constexpr double kHelloWaitS = 10;

Expected<std::vector<uint64_t>> parseSizes(const std::string& list) {
  std::vector<uint64_t> sizes;
  for (std::string_view token : text::split(list, ',')) {
    const std::string_view item = text::trim(token);
    auto bytes = text::parseBytes(item);
    if (!bytes || *bytes > (uint64_t{1} << 40)) {
      return Error{"--sizes: '" + std::string(item) + "' is not a size up to 1T (e.g. 4K, 1M)"};
    }
    sizes.push_back(*bytes);
  }
  if (sizes.empty()) return Error{"--sizes: no size given"};
  return sizes;
}

int runSpawnedPeer(const NetbenchArgs& args, const NetPluginLibrary& lib) {
  WireListener listener = WireListener::adopt(args.listenFd);
  auto wire = listener.accept(kSpawnConnectS);
  if (!wire.ok()) return reportError(wire.error());
  listener = WireListener();
  auto hello = readSenderHello(*wire, kSpawnConnectS);
  if (!hello.ok()) return reportError("bootstrap: " + hello.error());
  Status s = runReceiverSide(args.opts, *hello, lib, std::move(*wire), /*quiet=*/true);
  // The sender reports the error; a verbose peer says it too.
  if (!s.ok() && args.opts.verbose) netbenchInfo("receiver failed: " + s.error());
  return s.ok() ? 0 : kExitFailure;
}

int runListener(const NetbenchArgs& args, const NetPluginLibrary& lib) {
  auto listener = WireListener::listenOn(args.listenPort);
  if (!listener.ok()) return reportError(listener.error());
  std::cerr << "netbench: " << lib.path << " (ncclNetPlugin_v"
            << (args.opts.abi ? args.opts.abi : lib.newestAbi()) << "), listening on port "
            << listener->port() << std::endl;
  for (;;) {
    auto wire = listener->accept(kListenWaitS);
    if (!wire.ok()) return reportError(wire.error());
    auto hello = readSenderHello(*wire, kHelloWaitS);
    if (!hello.ok()) {  // a port scan or a stale peer: keep serving
      netbenchWarn("dropped a connection from " + wire->peer() + ": " + hello.error());
      continue;
    }
    Status s = runReceiverSide(args.opts, *hello, lib, std::move(*wire), /*quiet=*/false);
    return s.ok() ? 0 : reportError(s.error());
  }
}

int runAgainstPeer(const NetbenchArgs& args, const NetPluginLibrary& lib) {
  auto address = parseHostPort(args.peer);
  if (!address.ok()) return reportError("--peer: " + address.error(), kExitUsage);
  auto wire = WireSocket::connectTo(address->first, address->second, args.opts.timeoutS);
  if (!wire.ok()) return reportError(wire.error());
  Status s = runSenderSide(args.opts, lib, std::move(*wire), args.peer);
  return s.ok() ? 0 : reportError(s.error());
}

int runWithSpawnedPeer(const NetbenchArgs& args, const NetPluginLibrary& lib, int abi) {
  auto listener = WireListener::listenLoopback();
  if (!listener.ok()) return reportError(listener.error());
  const NetbenchOptions& o = args.opts;
  std::vector<std::string> argv = {"nccl-pilot",  "netbench",
                                   "--plugin",    lib.path,
                                   "--listen-fd", std::to_string(listener->fd()),
                                   "--dev",       std::to_string(o.dev),
                                   "--abi",       std::to_string(abi),
                                   "--timeout",   std::to_string(o.timeoutS)};
  if (o.verbose) argv.push_back("--verbose");
  auto pid = spawnPeer(argv, listener->fd());
  if (!pid.ok()) return reportError("cannot start the peer: " + pid.error());
  const std::string who = "the peer (pid " + std::to_string(*pid) + ")";
  auto wire = WireSocket::connectTo("127.0.0.1", listener->port(), kSpawnConnectS);
  *listener = WireListener();  // the child holds its own copy
  if (!wire.ok()) {
    const std::string end = reapPeer(*pid, 1);
    return reportError("cannot reach " + who + ": " + wire.error());
  }
  Status s = runSenderSide(o, lib, std::move(*wire),
                           "127.0.0.1 (spawned peer, pid " + std::to_string(*pid) + ")");
  // After a failure the peer has been told to stop; a crash says more than "went away".
  const std::string end = reapPeer(*pid, s.ok() ? o.timeoutS : 5);
  if (!s.ok()) {
    if (end.find("signal") != std::string::npos) {
      return reportError(who + " " + end + ": " + s.error());
    }
    return reportError(s.error());
  }
  if (!end.empty()) return reportError(who + " " + end);
  return 0;
}

int runNetbench(NetbenchArgs& args) {
  NetbenchOptions& o = args.opts;
  configureNetbenchLog({o.verbose, args.listenFd >= 0 ? "peer" : ""});
  auto proto = parseProto(args.proto);
  if (!proto)
    return reportError("--proto: '" + args.proto + "' is not simple, ll or ll128", kExitUsage);
  o.proto = *proto;
  auto sizes = parseSizes(args.sizes);
  if (!sizes.ok()) return reportError(sizes.error(), kExitUsage);
  o.sizes = *sizes;
  auto minBytes = text::parseBytes(args.minBytes);
  if (!minBytes)
    return reportError("--min-bytes: '" + args.minBytes + "' is not a size", kExitUsage);
  o.minBytes = *minBytes;
  if (o.sliceSteps == 2 && o.proto != Proto::Simple) {
    return reportError("--slice-steps 2 applies to the simple protocol only", kExitUsage);
  }
  if (auto buffers = bufferSizesFromEnvironment(); !buffers.ok()) {
    return reportError(buffers.error(), kExitUsage);
  }

  auto lib = loadNetPlugin(o.plugin);
  if (!lib.ok()) return reportError(lib.error());
  auto abi = chooseAbi(*lib, o.abi);
  if (!abi.ok()) return reportError(abi.error(), kExitUsage);
  askForPilotTransport(*lib, *abi);

  if (args.listenFd >= 0) return runSpawnedPeer(args, *lib);
  if (args.listenPort >= 0) return runListener(args, *lib);
  if (!args.peer.empty()) return runAgainstPeer(args, *lib);
  return runWithSpawnedPeer(args, *lib, *abi);
}

}  // namespace

Command addNetbenchCommand(CLI::App& app) {
  auto args = std::make_shared<NetbenchArgs>();
  NetbenchOptions& o = args->opts;
  CLI::App* sub = app.add_subcommand(
      "netbench",
      "Drive any NCCL net plugin as NCCL's proxy does, between two processes, with verified "
      "payloads (host memory, no GPU)");
  sub->add_option("--plugin", o.plugin,
                  "Net plugin: a path, a soname, or NAME for libnccl-net-NAME.so; a comma list "
                  "is tried in order (default: $NCCL_NET_PLUGIN, else libnccl-net.so)");
  sub->add_option("--sizes", args->sizes,
                  "Comma list of operation sizes, split over the channels and cut into messages "
                  "of the protocol's slot size")
      ->capture_default_str();
  sub->add_option("--channels", o.channels, "Connections, progressed round-robin by one thread")
      ->check(CLI::Range(1, kMaxChannels))
      ->capture_default_str();
  sub->add_option("--iters", o.iters, "Timed iterations per size (at least)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  sub->add_option("--warmup", o.warmup, "Untimed iterations before them")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 30))
      ->capture_default_str();
  sub->add_option("--min-bytes", args->minBytes,
                  "Run each size until at least this many bytes moved (e.g. 1G)")
      ->capture_default_str();
  sub->add_option("--proto", args->proto,
                  "simple (512K slots), ll (64K) or ll128 (600K), as NCCL_*BUFFSIZE set them")
      ->capture_default_str();
  sub->add_option("--slice-steps", o.sliceSteps,
                  "Slots per simple message: 1, or 2 as ring allreduce (1M messages)")
      ->check(CLI::IsMember({1, 2}))
      ->capture_default_str();
  sub->add_option("--dev", o.dev, "Plugin device index")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--abi", o.abi, "Drive this ncclNetPlugin_vN (default: the newest exported)")
      ->check(CLI::Range(6, 12));
  auto* peer = sub->add_option("--peer", args->peer,
                               "Send to a `netbench --listen` at HOST:PORT (prints the results)");
  auto* listen = sub->add_option("--listen", args->listenPort,
                                 "Receive for one --peer run on PORT (0: any; printed on stderr)")
                     ->check(CLI::Range(0, 65535));
  peer->excludes(listen);
  sub->add_option("--listen-fd", args->listenFd)->group("");  // the spawned peer
  sub->add_option("--timeout", o.timeoutS, "Seconds without progress (or a peer) before giving up")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  sub->add_flag("--json", o.json, "Print one JSON object instead of the table");
  sub->add_flag("-v,--verbose", o.verbose, "Also show the plugin's INFO lines");
  return {sub, [args] { return runNetbench(*args); }};
}

}  // namespace pilot::cli
