#include "netbench/report.h"

#include <cstdio>

#include "abi/net_common.h"
#include "pilot/core/text.h"

namespace pilot::cli {
namespace {

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

std::string abiRange(const std::vector<int>& abis) {
  std::string s;
  for (int v : abis) s += (s.empty() ? "v" : " v") + std::to_string(v);
  return s;
}

nlohmann::ordered_json deviceJson(int dev, const NetDeviceInfo& d) {
  return {{"index", dev},
          {"name", d.name},
          {"pci_path", d.pciPath},
          {"speed_mbps", d.speedMbps},
          {"ptr_support", d.ptrSupport},
          {"max_comms", d.maxComms},
          {"max_recvs", d.maxRecvs},
          {"max_p2p_bytes", d.maxP2pBytes}};
}

}  // namespace

std::string ptrSupportText(int bits) {
  std::string names;
  if (bits & nccl::NCCL_PTR_HOST) names += "HOST";
  if (bits & nccl::NCCL_PTR_CUDA) names += names.empty() ? "CUDA" : "|CUDA";
  if (bits & nccl::NCCL_PTR_DMABUF) names += names.empty() ? "DMABUF" : "|DMABUF";
  char hex[16];
  std::snprintf(hex, sizeof(hex), "0x%x", bits);
  return std::string(hex) + " (" + (names.empty() ? "none" : names) + ")";
}

SizeResult makeSizeResult(uint64_t size, uint64_t iterations, uint64_t messages, uint64_t bytes,
                          int64_t elapsedNs, double p50Ns, double p99Ns, bool verified) {
  SizeResult r;
  r.size = size;
  r.iterations = iterations;
  r.messages = messages;
  r.bytes = bytes;
  r.timeMs = static_cast<double>(elapsedNs) / 1e6;
  r.gbps = elapsedNs > 0 ? static_cast<double>(bytes) / static_cast<double>(elapsedNs) : 0;
  r.latP50Us = p50Ns / 1e3;
  r.latP99Us = p99Ns / 1e3;
  r.verified = verified;
  return r;
}

void printHeader(std::ostream& out, const NetbenchRun& run) {
  const NetDeviceInfo& d = run.device;
  out << "# nccl-pilot netbench\n"
      << "# plugin:   " << run.pluginPath << " (name \"" << run.pluginName << "\", exports "
      << abiRange(run.abis) << "; driving ncclNetPlugin_v" << run.abi << ")\n"
      << "# device:   " << run.dev << " " << d.name << ", " << d.speedMbps << " Mbps, ptrSupport "
      << ptrSupportText(d.ptrSupport) << ", maxComms " << d.maxComms << ", maxRecvs " << d.maxRecvs
      << "\n"
      << "# peer:     " << run.peer << ", receiving through ncclNetPlugin_v" << run.peerAbi << "\n"
      << "# channels: " << run.channels << " connections, " << protoName(run.proto)
      << " protocol: messages of up to " << run.shape.messageBytes() << " bytes, "
      << run.shape.messagesInFlight() << " in flight per connection; " << run.warmup
      << " warmup iterations\n"
      << "# GB/s: verified bytes / receiver time (1 GB = 1e9 B); p50/p99: per message, first "
         "isend -> test() done on the sender\n"
      << "# cpu s/GB: CPU time of both processes (all threads, getrusage) per GB received\n"
      << "#\n"
      << "#       size   iters     messages     time(ms)       GB/s    p50(us)    p99(us) "
         "cpu s/GB  verified\n";
}

void printRow(std::ostream& out, const SizeResult& r) {
  char line[256];
  std::snprintf(line, sizeof(line), "%12s %7llu %12llu %12s %10s %10s %10s %8s  %s\n",
                text::formatBytes(r.size).c_str(), static_cast<unsigned long long>(r.iterations),
                static_cast<unsigned long long>(r.messages), fixed(r.timeMs, 2).c_str(),
                fixed(r.gbps, 3).c_str(), fixed(r.latP50Us, 1).c_str(),
                fixed(r.latP99Us, 1).c_str(), fixed(r.cpuSPerGB, 3).c_str(),
                r.verified ? "yes" : "NO");
  out << line << std::flush;
}

nlohmann::ordered_json resultsJson(const NetbenchRun& run, const std::vector<SizeResult>& rows) {
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const SizeResult& r : rows) {
    results.push_back({{"size", r.size},
                       {"iterations", r.iterations},
                       {"messages", r.messages},
                       {"bytes", r.bytes},
                       {"time_ms", r.timeMs},
                       {"bw_gbps", r.gbps},
                       {"lat_us_p50", r.latP50Us},
                       {"lat_us_p99", r.latP99Us},
                       {"cpu_ms_sender", r.cpuSenderMs},
                       {"cpu_ms_receiver", r.cpuReceiverMs},
                       {"cpu_s_per_gb", r.cpuSPerGB},
                       {"verified", r.verified}});
  }
  // In the order a reader wants them, not sorted.
  return {{"plugin", run.pluginPath},
          {"plugin_name", run.pluginName},
          {"abi_version", run.abi},
          {"abi_versions_exported", run.abis},
          {"device", deviceJson(run.dev, run.device)},
          {"peer",
           {{"address", run.peer}, {"plugin", run.peerPluginPath}, {"abi_version", run.peerAbi}}},
          {"channels", run.channels},
          {"proto", protoName(run.proto)},
          {"message_bytes", run.shape.messageBytes()},
          {"in_flight", run.shape.messagesInFlight()},
          {"warmup", run.warmup},
          {"results", results}};
}

}  // namespace pilot::cli
