#include "pilot/metrics/settings.h"

#include "pilot/core/text.h"

namespace pilot::metrics {
namespace {

constexpr const char* kDefaultDir = "nccl-pilot-metrics";

template <typename T>
void keep(Expected<T> value, T* out, std::vector<std::string>* warnings) {
  if (value.ok()) {
    *out = value.value();
  } else if (warnings != nullptr) {
    warnings->push_back(value.error() + "; the default holds");
  }
}

}  // namespace

MetricsSettings metricsSettingsFromEnv(const EnvLookup& env, std::vector<std::string>* warnings) {
  MetricsSettings s;
  bool requested = false, explicitOff = false;
  if (readText(env, setting::kMetrics)) {
    auto on = readBool(env, setting::kMetrics, false);
    if (on.ok()) {
      requested = on.value();
      explicitOff = !on.value();
    } else if (warnings != nullptr) {
      warnings->push_back(on.error() + "; metrics stay off unless " + setting::kDir + " is set");
    }
  }
  if (auto dir = readText(env, setting::kDir)) s.dir = *dir;

  uint64_t interval = s.intervalSeconds;
  keep(readUnsigned(env, setting::kInterval, MetricsSettings::kMinInterval,
                    MetricsSettings::kMaxInterval, interval),
       &interval, warnings);
  s.intervalSeconds = static_cast<unsigned>(interval);
  keep(readUnsigned(env, setting::kSample, 1, MetricsSettings::kMaxSample, s.sample), &s.sample,
       warnings);
  keep(readUnsigned(env, setting::kMinBytes, 0, uint64_t{1} << 40, s.minBytes, /*bytes=*/true),
       &s.minBytes, warnings);
  uint64_t port = 0;
  keep(readUnsigned(env, setting::kPort, 0, 65535, port), &port, warnings);
  s.port = static_cast<int>(port);
  if (auto bind = readText(env, setting::kBind)) s.bind = *bind;
  if (auto drift = readText(env, setting::kDrift)) {
    auto value = text::parseDecimal(*drift);
    if (value && *value >= 0.01 && *value <= 0.99) {
      s.driftThreshold = *value;
    } else if (warnings != nullptr) {
      warnings->push_back(std::string(setting::kDrift) + "=" + *drift +
                          " is not in [0.01, 0.99]; the default holds");
    }
  }
  keep(readUnsigned(env, setting::kDriftCalls, 1, MetricsSettings::kMaxDriftCalls, s.driftMinCalls),
       &s.driftMinCalls, warnings);
  if (auto job = readText(env, setting::kSlurmJobId)) s.slurmJobId = *job;
  keep(readUnsigned(env, setting::kStall, 1, MetricsSettings::kMaxStallSeconds, s.stallSeconds),
       &s.stallSeconds, warnings);
  if (auto proxy = readText(env, setting::kProxy)) {
    if (*proxy == "off" || *proxy == "0") {
      s.proxy = MetricsSettings::Proxy::Off;
    } else if (*proxy == "ops" || *proxy == "1") {
      s.proxy = MetricsSettings::Proxy::Ops;
    } else if (*proxy == "steps") {
      s.proxy = MetricsSettings::Proxy::Steps;
    } else if (warnings != nullptr) {
      warnings->push_back(std::string(setting::kProxy) + "=" + *proxy +
                          " is not off, ops or steps; the default holds");
    }
  }

  s.enabled = !explicitOff && (requested || !s.dir.empty());
  if (s.enabled && s.dir.empty() && s.port == 0) s.dir = kDefaultDir;
  return s;
}

}  // namespace pilot::metrics
