// Hangs the program makes on one communicator, told from its ranks' own oldest operations:
//  - a mismatch: some ranks wait in another collective than the one the others wait in
//    (rank 3 in AllGather while the rest are in AllReduce #20), or in the same one with another
//    size; NCCL matches calls by order only, so both sides wait forever;
//  - a Send/Recv cycle: ranks that each wait in a Send/Recv whose peer has not posted the
//    matching side because it waits, itself, in one towards the next (rank 2 receives from 3
//    while 3 receives from 2).
#pragma once

#include <map>

#include "hang/stuck_op.h"
#include "hang/verdict.h"

namespace pilot::cli::hang {

/// Marks the ranks of a stalled collective whose oldest is another collective, or the stuck
/// one with another size than most, as Mismatched (and sets the stall's size to the most's).
void markMismatches(Stall* s);

/// Fills s->cycle with the ranks of a Send/Recv cycle among the waiting ranks (the one through
/// the stuck operation's ranks when there are several); empty when there is none.
void markCycle(Stall* s, const std::map<int, View>& views);

}  // namespace pilot::cli::hang
