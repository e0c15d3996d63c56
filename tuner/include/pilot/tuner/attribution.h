// Which rule of a compiled table made the decision NCCL ran, seen from outside getCollInfo: the
// profiler learns (collective, bytes, algorithm, protocol, channels) of every operation but not
// the cost table, pipeOps or regBuff the tuner saw. It walks the same candidates getCollInfo
// walks, in the same order, and credits the first rule whose choice is what NCCL ran.
#pragma once

#include <cstdint>

#include "pilot/tuner/compiled_table.h"

namespace pilot::tuner {

/// What NCCL ran. nChannels 0 = unknown (no channel check).
struct RanDecision {
  Collective collective = Collective::AllReduce;
  uint64_t nBytes = 0;  ///< as NCCL passes it to getCollInfo (total bytes for AllGather/RS)
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  int nChannels = 0;
};

/// The rule that made NCCL run `ran`, or nullptr where NCCL decided on its own. Walks the
/// rules matching (collective, nBytes) in priority order:
///  - a rule naming a choice is credited when the choice admits NCCL's algorithm and protocol
///    and its channel count (if any) is at least NCCL's (NCCL may run on fewer channels than a
///    tuner allows, never more); otherwise the tuner must have passed it over (an unusable
///    cell, a pipeops/regbuff condition) and the walk goes on;
///  - a rule naming no choice but channels is credited under the same channel condition;
///  - a rule the tuner always applies (no choice, no per-call condition) ends the walk: if it
///    was not credited above, NCCL decided (a chunk-only rule leaves the choice to NCCL).
/// A rule with a pipeops or regbuff condition whose choice NCCL happened to make on its own is
/// credited too: the profiler cannot tell the two apart.
const Rule* attributeDecision(const CompiledTable& table, const RanDecision& ran);

}  // namespace pilot::tuner
