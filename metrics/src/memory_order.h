// The memory orders of the metrics layer's lock-free structures, by short names, defined once
// for every file of the layer.
#pragma once

#include <atomic>

namespace pilot::metrics {

inline constexpr auto kRelaxed = std::memory_order_relaxed;
inline constexpr auto kAcquire = std::memory_order_acquire;
inline constexpr auto kRelease = std::memory_order_release;
inline constexpr auto kAcqRel = std::memory_order_acq_rel;

}  // namespace pilot::metrics
