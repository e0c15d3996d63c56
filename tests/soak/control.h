// The coordinator's control plane to its processes: text lines over pipes (commands down,
// events up), which cross network namespaces untouched. Times in events are CLOCK_MONOTONIC
// milliseconds, one clock for every process of the machine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/net/transport.h"

namespace soak {

class LineChannel {
 public:
  LineChannel() = default;
  /// `readFd` is made nonblocking; `writeFd` stays blocking (lines are short).
  LineChannel(int readFd, int writeFd);
  /// Appends the complete lines that arrived; false once the other end closed.
  bool receive(std::vector<std::string>* lines);
  /// Writes one line (a newline is added); false when the other end is gone.
  bool send(const std::string& line) const;
  int readFd() const { return readFd_; }

 private:
  int readFd_ = -1;
  int writeFd_ = -1;
  std::string partial_;
};

std::string toHex(const unsigned char* data, size_t size);
/// False unless `hex` is exactly 2 * size hex digits.
bool fromHex(std::string_view hex, unsigned char* out, size_t size);

/// The words of a line (split on spaces); `rest(line, n)` is everything after the n-th word.
std::vector<std::string> words(const std::string& line);
std::string rest(const std::string& line, int skipWords);

/// Resident set of this process, in KiB (/proc/self/statm).
int64_t residentKb();

}  // namespace soak
