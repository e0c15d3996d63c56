// A fixed 64-bit mix (SplitMix64's finalizer) for hash tables and schedules whose results must be
// the same on every rank and every platform: unlike std::hash, it is defined here.
#pragma once

#include <cstdint>

namespace pilot {

inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace pilot
