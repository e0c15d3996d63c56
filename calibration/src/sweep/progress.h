// What `sweep run` shows while it works: on a terminal one status line redrawn in place (a bar,
// counts, elapsed and remaining time, the runs in flight) with finished failures printed above
// it; elsewhere (a log file, CI) one plain line per event.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

namespace pilot::calibration::detail {

class SweepProgress {
 public:
  SweepProgress(std::ostream& out, bool bar, int total, int alreadyDone);

  void started(const std::string& id);
  void finished(const std::string& id, bool ok, double seconds, const std::string& detail);
  void note(const std::string& line);
  /// Redraws the bar (at most a few times a second); a no-op for plain lines.
  void tick();
  /// Leaves the terminal on a fresh line.
  void close();

 private:
  void draw(bool force);
  void clearLine();

  std::ostream& out_;
  bool bar_;
  int total_, finished_ = 0, failed_ = 0, alreadyDone_;
  double runSeconds_ = 0;  // time of the runs finished now, for the estimate
  std::vector<std::string> running_;
  std::chrono::steady_clock::time_point start_, lastDraw_;
  bool drawn_ = false;
};

}  // namespace pilot::calibration::detail
