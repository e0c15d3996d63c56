// The calibrated-time curve (log-log interpolation, conservative ends), key packing, the
// settings' defaults and bounds, and the exporters' escaping.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "http_endpoint.h"
#include "pilot/metrics/comm_monitor.h"
#include "pilot/metrics/expectation.h"
#include "pilot/metrics/prometheus.h"
#include "pilot/metrics/settings.h"
#include "pilot/metrics/summary.h"

namespace pilot::metrics {
namespace {

EnvLookup mapEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ExpectationCurve, InterpolatesInLogLogBetweenPoints) {
  ExpectationCurve c({{4096, 20}, {65536, 80}, {1 << 20, 200}});
  EXPECT_NEAR(c.expectedNs(4096), 20000, 1e-6);
  EXPECT_NEAR(c.expectedNs(16384), 40000, 1e-6);  // halfway in log size: geometric mean
  EXPECT_NEAR(c.expectedNs(65536), 80000, 1e-6);
  // Between 64K and 1M: t = 80 * (size / 64K)^(log(200/80) / log(16)).
  EXPECT_NEAR(c.expectedNs(262144), 80000 * std::pow(4.0, std::log(2.5) / std::log(16.0)), 1e-6);
}

TEST(ExpectationCurve, HoldsTheTimeBelowAndTheBandwidthAbove) {
  ExpectationCurve c({{4096, 20}, {65536, 80}});
  EXPECT_DOUBLE_EQ(c.expectedNs(1), 20000);
  EXPECT_DOUBLE_EQ(c.expectedNs(131072), 160000);
  ExpectationCurve one({{1 << 20, 100}});
  EXPECT_DOUBLE_EQ(one.expectedNs(1 << 21), 200000);
  EXPECT_DOUBLE_EQ(one.expectedNs(1 << 10), 100000);
  EXPECT_TRUE(ExpectationCurve(std::vector<tuner::ExpectedTime>{}).empty());
  EXPECT_EQ(ExpectationCurve(std::vector<tuner::ExpectedTime>{}).expectedNs(100), 0.0);
  // Points out of order, zero or negative are dropped rather than trusted.
  ExpectationCurve odd({{0, 5}, {4096, 20}, {1024, 10}, {8192, -1}, {65536, 80}});
  EXPECT_NEAR(odd.expectedNs(16384), 40000, 1e-6);
}

TEST(KeyFields, PackAndUnpackEveryField) {
  KeyFields k;
  k.op = Operation::Scatter;
  k.bucket = 63;
  k.algorithm = kUnknownAlgorithm;
  k.protocol = 2;
  k.channels = 64;
  k.decision = 1234;
  const KeyFields back = KeyFields::unpack(k.pack());
  EXPECT_EQ(back.op, k.op);
  EXPECT_EQ(back.bucket, k.bucket);
  EXPECT_EQ(back.algorithm, k.algorithm);
  EXPECT_EQ(back.protocol, k.protocol);
  EXPECT_EQ(back.channels, k.channels);
  EXPECT_EQ(back.decision, k.decision);
  EXPECT_LT(k.pack(), uint64_t{1} << 56);  // room for the index byte
}

TEST(MetricsSettings, OffUnlessAskedFor) {
  EXPECT_FALSE(metricsSettingsFromEnv(mapEnv({}), nullptr).enabled);
  EXPECT_FALSE(
      metricsSettingsFromEnv(mapEnv({{"NCCL_PILOT_METRICS_PORT", "9400"}}), nullptr).enabled);
  MetricsSettings dir = metricsSettingsFromEnv(mapEnv({{"NCCL_PILOT_METRICS_DIR", "/d"}}), nullptr);
  EXPECT_TRUE(dir.enabled);
  EXPECT_EQ(dir.dir, "/d");
  EXPECT_FALSE(metricsSettingsFromEnv(
                   mapEnv({{"NCCL_PILOT_METRICS", "0"}, {"NCCL_PILOT_METRICS_DIR", "/d"}}), nullptr)
                   .enabled);
  MetricsSettings on = metricsSettingsFromEnv(mapEnv({{"NCCL_PILOT_METRICS", "1"}}), nullptr);
  EXPECT_TRUE(on.enabled);
  EXPECT_EQ(on.dir, "nccl-pilot-metrics");
  MetricsSettings http = metricsSettingsFromEnv(
      mapEnv({{"NCCL_PILOT_METRICS", "1"}, {"NCCL_PILOT_METRICS_PORT", "9400"}}), nullptr);
  EXPECT_EQ(http.dir, "");
  EXPECT_EQ(http.port, 9400);
  EXPECT_EQ(http.bind, "127.0.0.1");
}

TEST(MetricsSettings, DefaultsAndBadValues) {
  std::vector<std::string> warnings;
  MetricsSettings s = metricsSettingsFromEnv(mapEnv({{"NCCL_PILOT_METRICS_DIR", "/d"},
                                                     {"NCCL_PILOT_METRICS_INTERVAL_S", "0"},
                                                     {"NCCL_PILOT_METRICS_SAMPLE", "ten"},
                                                     {"NCCL_PILOT_METRICS_MIN_BYTES", "8K"},
                                                     {"NCCL_PILOT_METRICS_PORT", "70000"},
                                                     {"NCCL_PILOT_METRICS_DRIFT", "1.5"},
                                                     {"NCCL_PILOT_METRICS", "maybe"}}),
                                             &warnings);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.intervalSeconds, 30u);
  EXPECT_EQ(s.sample, 1u);
  EXPECT_EQ(s.minBytes, 8192u);
  EXPECT_EQ(s.port, 0);
  EXPECT_DOUBLE_EQ(s.driftThreshold, 0.2);
  EXPECT_EQ(s.driftMinCalls, 100u);
  ASSERT_EQ(warnings.size(), 5u);
  EXPECT_EQ(warnings[0],
            "NCCL_PILOT_METRICS=maybe is not a boolean (use 0 or 1); metrics stay off unless "
            "NCCL_PILOT_METRICS_DIR is set");
  EXPECT_EQ(warnings[1], "NCCL_PILOT_METRICS_INTERVAL_S=0 is not in [1, 3600]; the default holds");
}

TEST(Exporters, EscapeWhatTheFormatsCannotHoldRaw) {
  EXPECT_EQ(escapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(jsonString("q\"\\\n\x01\xff"), "\"q\\\"\\\\\\u000a\\u0001\\u00ff\"");
}

TEST(HttpEndpoint, AnswersOnlyGetMetrics) {
  auto body = [] { return std::string("x 1\n"); };
  const std::string ok = detail::httpResponse("GET /metrics HTTP/1.1\r\nHost: h\r\n\r\n", body);
  EXPECT_EQ(ok,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: 4\r\nConnection: close\r\n\r\nx 1\n");
  EXPECT_EQ(detail::httpResponse("GET /metrics?x=1 HTTP/1.0\r\n\r\n", body).substr(0, 15),
            "HTTP/1.1 200 OK");
  EXPECT_EQ(detail::httpResponse("HEAD /metrics HTTP/1.1\r\n\r\n", body).find("x 1"),
            std::string::npos);
  EXPECT_EQ(detail::httpResponse("GET / HTTP/1.1\r\n\r\n", body).substr(9, 3), "404");
  const std::string head404 = detail::httpResponse("HEAD / HTTP/1.1\r\n\r\n", body);
  EXPECT_EQ(head404.substr(9, 3), "404");
  EXPECT_EQ(head404.substr(head404.size() - 4), "\r\n\r\n");  // HEAD: headers only
  EXPECT_EQ(detail::httpResponse("POST /metrics HTTP/1.1\r\n\r\n", body).substr(9, 3), "405");
  EXPECT_EQ(detail::httpResponse("garbage", body).substr(9, 3), "400");
  EXPECT_EQ(detail::httpResponse(std::string(9000, 'A'), body).substr(9, 3), "400");
}

}  // namespace
}  // namespace pilot::metrics
