// The oracles of hang_state_fuzz (see there): the state reader and the verdict on arbitrary
// bytes (hang_state_reader.cc), and the library's own writer read back (hang_state_trip.cc).
// Violations abort (fuzz::die).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fuzz {

/// `text` as a state file: parsed, checked against the bounds, rendered and read back, then
/// judged beside a second rank of each of its communicators.
void checkStateReader(const std::string& text);
/// A process's live state made from the bytes, written by metrics::renderState and read back.
void checkStateRoundTrip(const uint8_t* data, size_t size);

}  // namespace fuzz
