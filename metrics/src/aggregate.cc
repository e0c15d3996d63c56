#include "pilot/metrics/aggregate.h"

#include <cmath>

#include "memory_order.h"

namespace pilot::metrics {
namespace {

void addDouble(std::atomic<double>& target, double value) {
  double current = target.load(kRelaxed);
  while (!target.compare_exchange_weak(current, current + value, kRelaxed)) {
  }
}

void lowerTo(std::atomic<uint64_t>& target, uint64_t value) {
  uint64_t current = target.load(kRelaxed);
  while (value < current && !target.compare_exchange_weak(current, value, kRelaxed)) {
  }
}

void raiseTo(std::atomic<uint64_t>& target, uint64_t value) {
  uint64_t current = target.load(kRelaxed);
  while (value > current && !target.compare_exchange_weak(current, value, kRelaxed)) {
  }
}

}  // namespace

void KeyAggregate::record(const Completion& c) {
  timeNs_.fetch_add(c.timeNs, kRelaxed);
  messageBytes_.fetch_add(c.messageBytes, kRelaxed);
  addDouble(busBytes_, c.busBytes);
  if (c.busBytes > 0 && c.timeNs > 0) {
    // bytes / ns = GB/s (10^9 bytes per second).
    addDouble(logBusGbs_, std::log(c.busBytes / static_cast<double>(c.timeNs)));
    busCalls_.fetch_add(1, kRelaxed);
  }
  lowerTo(minNs_, c.timeNs);
  raiseTo(maxNs_, c.timeNs);
  if (c.expectedNs > 0) {
    expectedCalls_.fetch_add(1, kRelaxed);
    addDouble(expectedNs_, c.expectedNs);
    expectedLiveNs_.fetch_add(c.timeNs, kRelaxed);
  }
  bins_[timeBin(c.timeNs)].fetch_add(1, kRelaxed);
  calls_.fetch_add(1, kRelaxed);
}

KeyTotals KeyAggregate::totals() const {
  KeyTotals t;
  t.calls = calls_.load(kRelaxed);
  t.timeNs = timeNs_.load(kRelaxed);
  t.messageBytes = messageBytes_.load(kRelaxed);
  t.busBytes = busBytes_.load(kRelaxed);
  t.logBusGbs = logBusGbs_.load(kRelaxed);
  t.busCalls = busCalls_.load(kRelaxed);
  const uint64_t minNs = minNs_.load(kRelaxed);
  t.minNs = minNs == UINT64_MAX ? 0 : minNs;
  t.maxNs = maxNs_.load(kRelaxed);
  t.expectedCalls = expectedCalls_.load(kRelaxed);
  t.expectedNs = expectedNs_.load(kRelaxed);
  t.expectedLiveNs = expectedLiveNs_.load(kRelaxed);
  for (unsigned i = 0; i < kBins; ++i) t.bins[i] = bins_[i].load(kRelaxed);
  return t;
}

KeyTotals KeyTotals::since(const KeyTotals& e) const {
  KeyTotals d = *this;
  d.calls -= e.calls;
  d.timeNs -= e.timeNs;
  d.messageBytes -= e.messageBytes;
  d.busBytes -= e.busBytes;
  d.logBusGbs -= e.logBusGbs;
  d.busCalls -= e.busCalls;
  d.expectedCalls -= e.expectedCalls;
  d.expectedNs -= e.expectedNs;
  d.expectedLiveNs -= e.expectedLiveNs;
  for (unsigned i = 0; i < kBins; ++i) d.bins[i] -= e.bins[i];
  return d;
}

void KeyTotals::add(const KeyTotals& o) {
  if (o.calls > 0) {
    minNs = calls == 0 ? o.minNs : (o.minNs < minNs ? o.minNs : minNs);
    maxNs = o.maxNs > maxNs ? o.maxNs : maxNs;
  }
  calls += o.calls;
  timeNs += o.timeNs;
  messageBytes += o.messageBytes;
  busBytes += o.busBytes;
  logBusGbs += o.logBusGbs;
  busCalls += o.busCalls;
  expectedCalls += o.expectedCalls;
  expectedNs += o.expectedNs;
  expectedLiveNs += o.expectedLiveNs;
  for (unsigned i = 0; i < kBins; ++i) bins[i] += o.bins[i];
}

}  // namespace pilot::metrics
