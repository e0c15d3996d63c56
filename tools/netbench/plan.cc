#include "netbench/plan.h"

#include <algorithm>
#include <cstdlib>

#include "pilot/core/text.h"

namespace pilot::cli {

const char* protoName(Proto p) {
  switch (p) {
    case Proto::LL:
      return "ll";
    case Proto::LL128:
      return "ll128";
    case Proto::Simple:
      break;
  }
  return "simple";
}

std::optional<Proto> parseProto(const std::string& name) {
  const std::string lower = text::toLower(name);
  if (lower == "ll") return Proto::LL;
  if (lower == "ll128") return Proto::LL128;
  if (lower == "simple") return Proto::Simple;
  return std::nullopt;
}

ProtoBufferSizes defaultBufferSizes() {
  // device.h: LL = 8 lines/thread x 512 threads x 8 steps x 16 B; LL128 = 120 elements/thread
  // x 640 threads x 8 steps x 8 B; Simple = 1 << 22.
  return {size_t{8} * 512 * kNcclSteps * 16, size_t{120} * 640 * kNcclSteps * 8, size_t{1} << 22};
}

Expected<ProtoBufferSizes> bufferSizesFromEnvironment() {
  ProtoBufferSizes sizes = defaultBufferSizes();
  static const char* const kNames[kNumProtos] = {"NCCL_LL_BUFFSIZE", "NCCL_LL128_BUFFSIZE",
                                                 "NCCL_BUFFSIZE"};
  for (int p = 0; p < kNumProtos; ++p) {
    const char* value = std::getenv(kNames[p]);
    if (value == nullptr || *value == '\0') continue;
    // NCCL reads a plain integer; -2 means "default".
    if (std::string(value) == "-2") continue;
    auto bytes = text::parseUnsigned(value);
    // Slots stay 8-byte aligned (the pattern is written in words) and every message fits the
    // int sizes of net ABI v6..v8.
    if (!bytes || *bytes == 0 || *bytes % (kNcclSteps * 8) != 0 || *bytes > (uint64_t{1} << 30)) {
      return Error{std::string(kNames[p]) + "=" + value +
                   ": netbench takes a positive multiple of 64 bytes up to 1G"};
    }
    sizes[p] = static_cast<size_t>(*bytes);
  }
  return sizes;
}

StepShape stepShape(const ProtoBufferSizes& buffers, Proto proto, int sliceSteps, int channels) {
  StepShape shape;
  shape.slotBytes = buffers[static_cast<int>(proto)] / kNcclSteps;
  // Only Simple spans several slots per message; LL and LL128 always post one.
  shape.sliceSteps = proto == Proto::Simple ? sliceSteps : 1;
  // sendProxyProgress / recvProxyProgress: maxDepth = min(NCCL_STEPS, NCCL_SHARED_STEPS /
  // nsubs). NCCL never hands a proxy more subs than leave one slot each; we keep one.
  shape.maxDepth = std::max(1, std::min(kNcclSteps, kNcclSharedSteps / std::max(1, channels)));
  return shape;
}

SizePlan::SizePlan(uint64_t size, int channels, size_t messageBytes, uint64_t warmup,
                   uint64_t iterations)
    : size_(size), messageBytes_(messageBytes), warmup_(warmup), iterations_(iterations) {
  parts_.assign(static_cast<size_t>(channels), size / static_cast<uint64_t>(channels));
  for (uint64_t c = 0; c < size % static_cast<uint64_t>(channels); ++c) ++parts_[c];
}

uint64_t SizePlan::messagesPerIteration(int c) const {
  const uint64_t part = parts_[c];
  return part == 0 ? 1 : (part + messageBytes_ - 1) / messageBytes_;
}

uint64_t SizePlan::totalMessages(int c) const {
  return messagesPerIteration(c) * (warmup_ + iterations_);
}

SizePlan::Message SizePlan::message(int c, uint64_t n) const {
  const uint64_t perIteration = messagesPerIteration(c);
  Message m;
  m.iteration = n / perIteration;
  m.index = n % perIteration;
  m.offset = m.index * messageBytes_;
  m.bytes = static_cast<size_t>(std::min<uint64_t>(messageBytes_, parts_[c] - m.offset));
  m.timed = m.iteration >= warmup_;
  return m;
}

uint64_t SizePlan::timedMessages() const {
  uint64_t total = 0;
  for (int c = 0; c < channels(); ++c) total += messagesPerIteration(c) * iterations_;
  return total;
}

uint64_t SizePlan::timedBytes() const {
  return size_ * iterations_;
}

uint64_t iterationsFor(uint64_t size, uint64_t iters, uint64_t minBytes) {
  if (size == 0 || minBytes == 0) return iters;
  return std::max(iters, (minBytes + size - 1) / size);
}

}  // namespace pilot::cli
