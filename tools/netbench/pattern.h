// The payload every netbench message carries: a sequence of 64-bit words derived from (size
// index, channel, iteration) and the word's offset in the channel's part. A lost, duplicated,
// reordered, stale (earlier iteration or size) or flipped byte no longer matches.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pilot::cli {

/// Seed of one channel's part of one iteration.
uint64_t patternSeed(uint32_t sizeIndex, uint32_t channel, uint64_t iteration);

/// Writes the pattern for bytes [offset, offset + bytes) of the part. offset is a multiple of
/// 8 (messages start on slot boundaries); `data` needs no alignment.
void fillPattern(void* data, size_t bytes, uint64_t seed, uint64_t offset);

/// Where the pattern first differs.
struct PatternMismatch {
  bool found = false;
  size_t offset = 0;  ///< within `data`
  uint8_t expected = 0;
  uint8_t actual = 0;
};
PatternMismatch checkPattern(const void* data, size_t bytes, uint64_t seed, uint64_t offset);

}  // namespace pilot::cli
