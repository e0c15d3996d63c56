#include "sweep/progress.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace pilot::calibration::detail {
namespace {

std::string clock(double seconds) {
  long s = static_cast<long>(seconds + 0.5);
  char buffer[32];
  if (s >= 3600) {
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld", s / 60, s % 60);
  }
  return buffer;
}

std::string oneDecimal(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

}  // namespace

SweepProgress::SweepProgress(std::ostream& out, bool bar, int total, int alreadyDone)
    : out_(out), bar_(bar), total_(total), alreadyDone_(alreadyDone) {
  start_ = lastDraw_ = std::chrono::steady_clock::now();
}

void SweepProgress::started(const std::string& id) {
  running_.push_back(id);
  if (bar_) {
    draw(true);
  } else {
    out_ << "[" << alreadyDone_ + finished_ + static_cast<int>(running_.size()) << "/" << total_
         << "] " << id << ": started" << std::endl;
  }
}

void SweepProgress::finished(const std::string& id, bool ok, double seconds,
                             const std::string& detail) {
  running_.erase(std::remove(running_.begin(), running_.end(), id), running_.end());
  ++finished_;
  if (!ok) ++failed_;
  runSeconds_ += seconds;
  const std::string line = id + ": " + (ok ? "done" : "FAILED") + " in " + oneDecimal(seconds) +
                           " s" + (detail.empty() ? "" : " (" + detail + ")");
  if (bar_) {
    // Successes only move the bar; failures stay on screen above it.
    if (!ok) {
      clearLine();
      out_ << line << "\n";
    }
    draw(true);
  } else {
    out_ << "[" << alreadyDone_ + finished_ << "/" << total_ << "] " << line << std::endl;
  }
}

void SweepProgress::note(const std::string& line) {
  if (bar_) clearLine();
  out_ << line << std::endl;
  if (bar_ && drawn_) draw(true);
}

void SweepProgress::tick() {
  if (bar_) draw(false);
}

void SweepProgress::close() {
  if (bar_ && drawn_) {
    draw(true);
    out_ << "\n" << std::flush;
    drawn_ = false;
  }
}

void SweepProgress::clearLine() {
  if (drawn_) out_ << "\r\033[K";
}

void SweepProgress::draw(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - lastDraw_ < std::chrono::milliseconds(250)) return;
  lastDraw_ = now;
  const int done = alreadyDone_ + finished_;
  const int width = 24;
  const int filled = total_ > 0 ? width * done / total_ : width;
  std::string bar = "[" + std::string(static_cast<size_t>(filled), '#') +
                    std::string(static_cast<size_t>(width - filled), '.') + "]";
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string line = bar + " " + std::to_string(done) + "/" + std::to_string(total_);
  if (failed_) line += " (" + std::to_string(failed_) + " failed)";
  line += "  " + clock(elapsed);
  const int left = total_ - done;
  if (finished_ > 0 && left > 0) {
    // Mean time of the runs finished now, spread over the slots in use.
    const double perRun = runSeconds_ / finished_;
    const double slots = std::max<double>(1, static_cast<double>(running_.size()));
    line += ", ~" + clock(perRun * left / slots) + " left";
  }
  if (!running_.empty()) {
    line += "  " + running_.front();
    if (running_.size() > 1) line += " +" + std::to_string(running_.size() - 1);
  }
  if (line.size() > 100) line.resize(100);
  clearLine();
  if (!drawn_) out_ << "\r";
  out_ << line << std::flush;
  drawn_ = true;
}

}  // namespace pilot::calibration::detail
