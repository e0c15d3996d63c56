// SHA-256 (FIPS 180-4), our own, for the tuning table's digest: every rank logs it and a
// launcher can pin it (NCCL_PILOT_TUNER_TABLE_SHA256), so ranks that read different tables say
// so. The plugin links no crypto library; this is a checksum of a local file, not a secret.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pilot {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view data);
  /// The digest of everything passed to update(); the object is spent afterwards.
  std::array<uint8_t, 32> finish();

 private:
  void block(const uint8_t* p);

  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes
};

/// The 64 lower-case hex digits of SHA-256(data).
std::string sha256Hex(std::string_view data);

}  // namespace pilot
