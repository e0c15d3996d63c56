// NCCL_PILOT_SOCKET_* from the environment (or nccl.conf, which NCCL copies into it).
#include "pilot/core/text.h"
#include "pilot/net/socket.h"

namespace pilot::net {
namespace {

/// Sets *out from `name` when the value parses and lies in [low, high]; else a warning.
template <typename T, typename Parse>
void readRange(const EnvLookup& env, const char* name, T low, T high, Parse parse, T* out,
               std::vector<std::string>* warnings) {
  auto text = readText(env, name);
  if (!text) return;
  std::optional<uint64_t> value = parse(*text);
  if (!value || *value < static_cast<uint64_t>(low) || *value > static_cast<uint64_t>(high)) {
    if (warnings != nullptr) {
      warnings->push_back(std::string(name) + "=" + *text + " is not in [" + std::to_string(low) +
                          ", " + std::to_string(high) + "]; using the default " +
                          std::to_string(*out));
    }
    return;
  }
  *out = static_cast<T>(*value);
}

}  // namespace

SocketOptions socketOptionsFromEnv(const EnvLookup& env, std::vector<std::string>* warnings) {
  SocketOptions o;
  auto number = [](const std::string& s) { return text::parseUnsigned(s); };
  auto bytes = [](const std::string& s) { return text::parseBytes(s); };
  readRange(env, socket_env::kSocketStreams, SocketOptions::kMinStreams, SocketOptions::kMaxStreams,
            number, &o.streams, warnings);
  readRange(env, socket_env::kSocketChunk, SocketOptions::kMinChunk, SocketOptions::kMaxChunk,
            bytes, &o.chunkBytes, warnings);
  readRange(env, socket_env::kSocketEager, size_t{0}, SocketOptions::kMaxEager, bytes,
            &o.eagerBytes, warnings);
  readRange(env, socket_env::kSocketThreads, 0, SocketOptions::kMaxThreads, number, &o.threads,
            warnings);
  readRange(env, socket_env::kSocketTimeoutMs, SocketOptions::kMinTimeoutMs,
            SocketOptions::kMaxTimeoutMs, number, &o.timeoutMs, warnings);
  if (auto root = readText(env, socket_env::kSysfsRoot)) o.sysfsRoot = *root;
  return o;
}

}  // namespace pilot::net
