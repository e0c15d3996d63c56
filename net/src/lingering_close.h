// Closing a send comm's control socket while its receiver may still write CTS records to it
// would make the kernel answer those bytes (or the unread ones at close) with a reset, and a
// reset drops whatever of the last messages has not left this host yet: a job's final
// collective would fail on the receiving rank. So the control socket is half-closed (a FIN
// behind the queued data) and kept open, its incoming bytes read and discarded, until the
// receiver closes its end, an error ends it, or a deadline passes. Process-wide, bounded.
#pragma once

#include <cstdint>

#include "socket_io.h"

namespace pilot::net {

/// Takes `fd` (a connected socket already shut for writing) and closes it once the peer has
/// closed its end or at `deadlineMs` (nowMs()), whichever comes first. Sweeps the others too.
void closeWhenPeerCloses(Fd fd, int64_t deadlineMs) noexcept;

/// Closes those whose peer has closed by now (after this process closed a receive comm: on
/// loopback that is often the peer of one of them).
void sweepLingeringSockets() noexcept;

/// How many sockets are waiting for their peer (tests).
int lingeringSockets() noexcept;

}  // namespace pilot::net
