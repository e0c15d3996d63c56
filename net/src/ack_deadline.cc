#include "ack_deadline.h"

// The kernel's tcp_info: glibc's <netinet/tcp.h> copy ends before tcpi_notsent_bytes.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>

#include "socket_io.h"

namespace pilot::net {

AckDeadline::AckDeadline(int timeoutMs)
    : timeoutMs_(timeoutMs), intervalMs_(std::clamp(timeoutMs / 32, 10, 250)) {}

bool AckDeadline::due() {
  now_ = coarseNowMs();
  if (now_ < nextMs_) return false;
  nextMs_ = now_ + intervalMs_;
  return true;
}

std::string AckDeadline::inspect(int slot, int fd) {
  tcp_info info{};
  socklen_t length = sizeof(info);
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return {};
  // Bytes wait for the peer: sent and not acknowledged, or not sent though its window is open
  // (with the carrier gone they can sit unsent for most of a second before the kernel counts
  // them as sent; a closed window is the kernel's to probe, and a live peer answers). A kernel
  // before 5.4 does not say the window: there only what was sent counts.
  const bool windowKnown = length >= offsetof(tcp_info, tcpi_snd_wnd) + sizeof(info.tcpi_snd_wnd);
  const bool waiting = info.tcpi_unacked > 0 ||
                       (windowKnown && info.tcpi_notsent_bytes > 0 && info.tcpi_snd_wnd > 0);
  if (!waiting) {
    waitingSince_[slot] = 0;
    return {};
  }
  if (waitingSince_[slot] == 0) waitingSince_[slot] = now_;
  // Both for the whole timeout: nothing acknowledged (a live peer acknowledges within a round
  // trip, keepalive probes included), and bytes waiting since this side first saw them (never
  // longer than they really waited, so a connection idle for longer than a short timeout still
  // gets its chance; the look comes at most two intervals after the timeout).
  const int64_t waited = std::min<int64_t>(now_ - waitingSince_[slot], info.tcpi_last_ack_recv);
  if (waited < timeoutMs_) return {};
  return kNoAcknowledgement + std::to_string(waited) + " ms";
}

}  // namespace pilot::net
