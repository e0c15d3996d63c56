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

/// Closes those whose peer has closed by now, or whose deadline passed (after this process
/// closed a receive comm: on loopback that is often the peer of one of them).
void sweepLingeringSockets() noexcept;

/// The same from the calls NCCL keeps making (test, and connection set-up), so a socket goes
/// within kSweepIntervalMs of its peer's close or its deadline, not at some later close: when
/// none waits it is one relaxed load; else a clock read, and a sweep every 100 ms at most,
/// under a try-lock (it never waits for another thread).
void sweepLingeringSocketsWhenDue() noexcept;

/// How many sockets are waiting for their peer (tests).
int lingeringSockets() noexcept;

}  // namespace pilot::net
