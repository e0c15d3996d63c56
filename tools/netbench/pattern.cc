#include "netbench/pattern.h"

#include <cstring>

namespace pilot::cli {
namespace {

// Odd, so consecutive words never repeat within 2^64 words.
constexpr uint64_t kStride = 0x9e3779b97f4a7c15ULL;

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t wordAt(uint64_t seed, uint64_t wordIndex) {
  return seed + wordIndex * kStride;
}

}  // namespace

uint64_t patternSeed(uint32_t sizeIndex, uint32_t channel, uint64_t iteration) {
  return mix(mix((uint64_t{sizeIndex} << 32) | channel) ^ iteration);
}

void fillPattern(void* data, size_t bytes, uint64_t seed, uint64_t offset) {
  auto* p = static_cast<unsigned char*>(data);
  uint64_t word = wordAt(seed, offset / 8);
  const size_t words = bytes / 8;
  // memcpy keeps it alignment-agnostic; the compiler turns the loop into vector stores.
  for (size_t i = 0; i < words; ++i, word += kStride) std::memcpy(p + 8 * i, &word, 8);
  if (const size_t tail = bytes % 8; tail != 0) std::memcpy(p + 8 * words, &word, tail);
}

PatternMismatch checkPattern(const void* data, size_t bytes, uint64_t seed, uint64_t offset) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t word = wordAt(seed, offset / 8);
  const size_t words = bytes / 8;
  size_t bad = words;
  // OR-accumulate per block so the common (clean) case is a branch-light vector loop.
  constexpr size_t kBlock = 64;
  for (size_t start = 0; start < words && bad == words; start += kBlock) {
    const size_t end = start + kBlock < words ? start + kBlock : words;
    uint64_t diff = 0;
    uint64_t w = word + start * kStride;
    for (size_t i = start; i < end; ++i, w += kStride) {
      uint64_t got;
      std::memcpy(&got, p + 8 * i, 8);
      diff |= got ^ w;
    }
    if (diff == 0) continue;
    w = word + start * kStride;
    for (size_t i = start; i < end; ++i, w += kStride) {
      uint64_t got;
      std::memcpy(&got, p + 8 * i, 8);
      if (got != w) {
        bad = i;
        break;
      }
    }
  }
  size_t checkFrom = bad, checkBytes = 8;
  if (bad == words) {  // words clean: the tail is all that is left
    checkFrom = words;
    checkBytes = bytes % 8;
    if (checkBytes == 0) return {};
  }
  const uint64_t expectedWord = word + checkFrom * kStride;
  unsigned char expected[8];
  std::memcpy(expected, &expectedWord, 8);
  for (size_t b = 0; b < checkBytes; ++b) {
    const unsigned char actual = p[8 * checkFrom + b];
    if (actual != expected[b]) return {true, 8 * checkFrom + b, expected[b], actual};
  }
  return {};
}

}  // namespace pilot::cli
