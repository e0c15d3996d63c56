// What both ends of a connection share: the failure latch and its log lines, the hand-over of
// the data streams, and the shutdown of a failed comm's sockets.
#include "socket_comm.h"

#include <sys/socket.h>

namespace pilot::net {

Error FailureLatch::fail(const std::string& what) {
  if (!failed_) {
    failed_ = true;
    message_ = std::string(role_) + " " + peer_ + ": " + what;
    PILOT_LOG(log_, Warn, subsys::Net, "%s", message_.c_str());
  }
  return Error{message_};
}

Error FailureLatch::usage(const std::string& what) {
  const std::string message = std::string(role_) + " " + peer_ + ": " + what;
  PILOT_LOG(log_, Warn, subsys::Net, "%s", message.c_str());
  return Error{message};
}

void FailureLatch::logClosed(const TrafficCount& moved, int streams) const {
  PILOT_LOG(log_, Info, subsys::Net,
            "%s %s closed: %llu messages, %llu bytes over %d data stream(s)", role_, peer_.c_str(),
            static_cast<unsigned long long>(moved.messages),
            static_cast<unsigned long long>(moved.bytes), streams);
}

void adoptStreams(Connection& connection, StreamArray& streams) {
  for (int s = 0; s < connection.streams; ++s) {
    streams[s].fd = std::move(connection.data[s]);
    streams[s].index = s;
  }
}

void shutdownSockets(const Fd& control, const StreamArray& streams, int count) {
  // The fds stay open (and owned) until the comm is closed; only the connection ends.
  if (control.valid()) (void)::shutdown(control.get(), SHUT_RDWR);
  for (int s = 0; s < count; ++s) {
    if (streams[s].fd.valid()) (void)::shutdown(streams[s].fd.get(), SHUT_RDWR);
  }
}

}  // namespace pilot::net
