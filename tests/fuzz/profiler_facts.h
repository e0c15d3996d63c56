// What the profiler's writers are handed, made from fuzz bytes alike for the round trips of the
// summary (summary_round_trip.cc) and of the state file (hang_state_trip.cc): names made
// printable as the runtime makes them, and a communicator's facts from NCCL's init.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <string>

#include "host_facts.h"
#include "pilot/metrics/report.h"

namespace fuzz {

inline std::string name(FuzzedDataProvider& in, size_t most) {
  return pilot::metrics::detail::printableName(in.ConsumeRandomLengthString(most).c_str());
}

/// The id, name (up to 40 bytes), ranks (up to 2^20), rank and nodes of a communicator.
inline void commFacts(FuzzedDataProvider& in, pilot::metrics::CommIdentity* id) {
  id->commId = in.ConsumeIntegral<uint64_t>();
  id->name = name(in, 40);
  id->nRanks = in.ConsumeIntegralInRange(1, 1 << 20);
  id->rank = in.ConsumeIntegralInRange(0, id->nRanks - 1);
  id->nNodes = in.ConsumeIntegralInRange(1, id->nRanks);
}

}  // namespace fuzz
