// Every exported entry point runs its body through guard(): nothing thrown inside (bad_alloc
// included) crosses the C ABI into NCCL. The failure result is chosen per entry point: init
// and finalize may report an error; getCollInfo/getChunkSize never do (an error there fails
// the user's collective), they leave NCCL's decision in place instead.
#pragma once

#include <exception>
#include <utility>

#include "abi/nccl_common.h"
#include "pilot/core/log.h"

namespace pilot::plugin {

/// `flags` are the NCCL debug subsystems of the WARN line (the net plugin logs under NET).
template <typename Body>
nccl::ncclResult_t guard(Logger* log, unsigned long flags, const char* where,
                         nccl::ncclResult_t onFailure, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    if (log) PILOT_LOG(*log, Warn, flags, "%s: internal error: %s", where, e.what());
  } catch (...) {
    if (log) PILOT_LOG(*log, Warn, flags, "%s: internal error", where);
  }
  return onFailure;
}

template <typename Body>
nccl::ncclResult_t guard(Logger* log, const char* where, nccl::ncclResult_t onFailure,
                         Body&& body) noexcept {
  return guard(log, subsys::Tuning, where, onFailure, std::forward<Body>(body));
}

}  // namespace pilot::plugin
