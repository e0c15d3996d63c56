// The soak's coordinator: it starts the peer processes in the two namespaces, relays the
// handles of every (re-)connection, injects the faults of the plan one after the other, and
// checks after each: what broke ended in an error within the timeout, nothing hung, nothing
// was corrupted, the communicators the fault did not hit kept moving, and every process is back
// to its descriptors (exactly) and memory (within a tolerance) once all is re-established.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "control.h"
#include "soak_plan.h"

namespace soak {

struct SoakOptions {
  uint64_t seed = 0;
  int seconds = 300;
  int timeoutMs = 3000;
  int pairs = 4;
  int commsPerPair = 4;
  double bytesPerSecond = 16 << 20;  ///< per peer process
  std::string ns[2];                 ///< network namespaces of side A and side B
  std::string ifname[2];             ///< their veth ends
  std::string self;                  ///< this executable (peers are started from it)
  std::string logDir;
};

/// Runs the soak; prints a line per fault and the summary line; 0 when every check held.
int runSoak(const SoakOptions& options);

/// Transport settings per process pair, so the faults meet several of its configurations:
/// the defaults; everything on the control socket; four streams of small chunks moved by
/// helper threads; one stream and no eager messages.
std::map<std::string, std::string> pairSettings(int pair);

/// A broken communicator must report its error within NCCL_PILOT_SOCKET_TIMEOUT_MS plus this,
/// timed from the fault's start or, when later, from when what its connection waits for entered
/// the network (Soak::timeDetections). A connection fails a timeout after the bytes it holds
/// were first sent, and the soak cannot always tell when that was: bytes written in an outage's
/// first few hundred ms, of a step its receiver does not wait on (yet), are timed from the
/// fault's start (measured up to 380 ms over). Also: the fault's stamp is taken before the ip/nft
/// command that makes it runs (10-60 ms on two busy cores); the transport looks at its
/// acknowledgements every timeout / 32 (94 ms here) and may see the deadline pass up to two of
/// those late; the far end of a failed connection learns from the near end's close one
/// scheduling round later; each peer tests its comms once per pass. Those add up to about
/// 380 + 60 + 2 x 94 = 630 ms at worst; five runs measured up to 480 ms over.
constexpr int64_t kDetectSlackMs = 750;

/// How long after one end of a connection failed the other end may take, in timeouts. It learns
/// from that end's close at once when the path works and nothing is queued; but a FIN waits
/// behind the failed end's unacknowledged data for its next retransmission, and where the kernel
/// ended the connection itself (a user timeout sends no reset) the other end only learns by its
/// own next retransmission (the backoff reaches 1.6 s here) or keepalive probe (1 s idle + 1 s):
/// its own timers, within a timeout. Measured up to 1974 ms at 3000.
constexpr int kCascadeTimeouts = 1;

/// How far a process's resident memory may be above its start after a fault. Its arenas are
/// touched up front and allocated once, so what may grow is the transport's memory of the
/// communicators re-created, which glibc keeps for reuse after free rather than returning it
/// (its mmap threshold rises to 1 MiB once such a block is freed, so later ones come from the
/// heap, which is only trimmed at its top): a receive comm's rings (about 100 KiB) and its
/// 1 MiB parking pool, made on its first unexpected message. One of each, rounded up to 2 MiB;
/// measured within 0.3 MiB of the start per process over 5 minutes, so a leak of the rings per
/// re-creation (a process sees 10 to 25) shows.
constexpr int64_t kRssToleranceKb = 2 * 1024;

/// A process's report (a "tick", or a "stats" reply).
struct PeerStats {
  bool valid = false;
  int fds = 0;
  int64_t rssKb = 0;
  uint64_t transfers = 0, bytes = 0, corrupted = 0, dropped = 0, wrongSecret = 0;
  /// Per communicator of the pair: (epoch, steps received in that epoch).
  std::vector<std::pair<uint32_t, uint64_t>> steps;
};

/// A side's report that its communicator broke ("broken C E AT SENT WAITING WHERE WHAT"):
/// when, which lane, when its send lane last posted into its last steps (SENT:
/// "FIRST:T0,T1,..."), and its receive lane's oldest step not complete (WAITING: "STEP:POSTED",
/// POSTED "-" while not posted).
struct BreakReport {
  int comm = 0, side = 0;
  uint32_t epoch = 0;
  int64_t atMs = 0;
  int lane = -1;  ///< 0 send, 1 receive; -1 in set-up
  uint64_t firstSent = 0;
  std::vector<int64_t> sentMs;  ///< when steps firstSent, firstSent + 1, ... were posted
  bool waiting = false;         ///< the receive lane reported its oldest step not complete
  uint64_t waitingStep = 0;
  int64_t waitingMs = -1;  ///< when that step was posted; -1: not posted yet
  std::string what;
};

class Soak {
 public:
  explicit Soak(const SoakOptions& options);
  ~Soak();
  int run();

 private:
  struct Process {
    int pair = 0;
    int side = 0;  ///< 0 = A, 1 = B
    pid_t pid = -1;
    LineChannel channel;
    int toPeer = -1, fromPeer = -1;
    bool ready = false;
    bool statsAsked = false;
    PeerStats last, baseline;
    std::vector<PeerStats> gone;  ///< last reports of killed incarnations (their counts)
    std::string name() const;
  };
  struct Comm {
    int id = 0;
    int pair = 0;
    uint32_t epoch = 0;
    bool up[2] = {false, false};
    bool closed[2] = {true, true};  ///< since the last open: broke, closed or died
    bool hasHandle[2] = {false, false};
    std::string handle[2];
    bool closing = false;      ///< being closed on purpose: its errors are expected
    bool manualRelay = false;  ///< re-created by a fault's code, which relays the handles itself
  };
  struct Detection {
    int comm = 0, side = 0;
    int64_t ms = 0;
    std::string what;
    bool stranger = false;     ///< the wrong-secret peer's own connection, not the communicator
    int64_t afterPeerMs = -1;  ///< learnt from the peer's close this long after it failed
  };
  /// The fault being injected (and settling): breakages are measured against it.
  struct Current {
    bool active = false;
    int64_t startMs = 0;
    std::set<int> mayBreak;  ///< communicators it is allowed to break
    std::vector<BreakReport> breakages;
    std::vector<Detection> detections;
  };
  using Snapshot = std::vector<std::pair<uint32_t, uint64_t>>;  ///< [comm * 2 + side]

  // Processes and events (soak_run.cc).
  bool startPeer(Process& p);
  void killPeer(Process& p);
  void pump(int64_t untilMs);
  bool pumpUntil(const std::function<bool()>& done, int64_t deadlineMs);
  void onLine(Process& p, const std::string& line);
  void onBreak(Process& p, Comm& c, const std::vector<std::string>& w, const std::string& line);
  void reopenClosedComms();
  void open(Comm& c);
  void relayHandles(Comm& c);
  Snapshot snapshot() const;
  bool movedSince(const Comm& c, const Snapshot& before) const;
  bool allUpAndMovedSince(const Snapshot& before) const;
  bool freshStats();
  /// Descriptors (each process exactly at its start) and memory (within kRssToleranceKb),
  /// waiting out the sockets a closed sender may keep until its receiver closed or the timeout
  /// passed (net/README.md, "Failure"). The summary text ("fds X->Y, rss X->Y MiB").
  std::string resources(bool* ok);
  /// Writes to the coordinator's log (every event of the processes, every detection).
  void note(const std::string& text);
  void failure(const std::string& what);
  /// The final checks, the processes told to finish, the summary line; the exit code.
  int finish();
  Process& process(int pair, int side) { return processes_[pair * 2 + side]; }
  int64_t now() const;

  // The faults (soak_faults.cc).
  void inject(const Fault& fault, int number);
  /// From each breakage of the fault, how long its error took: from the fault's start, or, when
  /// later, from when what the connection's receiver waits for entered the network: the last
  /// message its sender posted into its oldest waiting step, or, if the sender posted none, its
  /// own receive (the CTS record); or, where the error says how long its bytes waited for an
  /// acknowledgement, from then. A receive waiting on a send not yet posted waits on no fault.
  void timeDetections();
  /// When the failing lane's connection started to hold what got stuck (see timeDetections).
  int64_t stuckSince(const BreakReport& b) const;
  void dropFault(const Fault& f, std::string* what);
  void linkFault(const Fault& f, std::string* what);
  void killFault(const Fault& f, std::string* what);
  void attackFault(const Fault& f, std::string* what);
  /// Closes `c` on both sides (an abort) and opens it again; its handles are left to the caller.
  bool recreate(Comm& c);
  /// Waits until every communicator is up and has moved since `before`, and `quietUntilMs` is
  /// past (late detections of the fault still count against it until then).
  bool settle(const Snapshot& before, int64_t quietUntilMs, std::string* what);

  const SoakOptions& o_;
  FILE* log_ = nullptr;
  std::vector<Process> processes_;
  std::vector<Comm> comms_;
  Current current_;
  bool reopenAllowed_ = true;
  bool fatal_ = false;
  bool finishing_ = false;
  int injected_ = 0;
  std::set<int> kindsInjected_;
  int hangMs_ = 0;
  int64_t startMs_ = 0;
  uint64_t corrupted_ = 0, hung_ = 0;
  int64_t maxDetectMs_ = 0;
  int64_t maxAfterPeerMs_ = -1;  ///< the most a far end learnt after its near end
  std::vector<std::string> failures_;
};

}  // namespace soak
