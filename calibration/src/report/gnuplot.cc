// Optional gnuplot charts beside the HTML report, for slides and papers. Absent gnuplot is not
// an error: the HTML page has its own charts.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "pilot/calibration/report.h"
#include "pilot/core/text.h"

extern char** environ;

namespace pilot::calibration {
namespace {

bool onPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  for (std::string_view dir : text::split(path, ':')) {
    if (dir.empty()) continue;
    const std::string full = std::string(dir) + "/" + program;
    if (access(full.c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string quoted(std::string s) {
  for (char& c : s) {
    if (c == '"' || c == '\\') c = '\'';
  }
  return "\"" + s + "\"";
}

/// The gnuplot script for one shape: data blocks, then time and bus bandwidth as SVG and PNG.
std::string script(const Shape& shape, const std::string& base) {
  std::ostringstream os;
  for (size_t c = 0; c < shape.series.size(); ++c) {
    os << "$d" << c << " << EOD\n";
    for (const SizeStat& st : shape.series[c].sizes) {
      os << st.size << " " << st.timeUs << " " << st.minUs << " " << st.maxUs << " " << st.busbw
         << "\n";
    }
    os << "EOD\n";
  }
  os << "set logscale x 2\nset format x '%.0b%B'\nset grid\nset key outside right\n"
        "set xlabel 'message size (bytes)'\n";
  auto plot = [&](const char* what, const char* ylabel, const char* column, bool logY) {
    os << (logY ? "set logscale y\n" : "unset logscale y\n") << "set ylabel '" << ylabel << "'\n"
       << "set title " << quoted(shape.key.str() + ": " + what) << " noenhanced\n";
    for (const char* term : {"svg", "png"}) {
      if (std::string(term) == "svg") {
        os << "set terminal svg size 1000,560 dynamic\n";
      } else {
        os << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size "
              "1000,560 } else { set terminal png size 1000,560 }\n";
      }
      os << "set output " << quoted(base + "-" + what + "." + term) << "\nplot ";
      for (size_t c = 0; c < shape.series.size(); ++c) {
        const Series& s = shape.series[c];
        os << (c ? ", " : "") << "$d" << c << " using 1:" << column << " with linespoints lw "
           << (s.isDefault() ? "3 lc rgb '#222222'" : "1.5") << " title " << quoted(s.label)
           << " noenhanced";
      }
      os << "\nset output\n";
    }
  };
  plot("time", "time (us)", "2", true);
  plot("busbw", "bus bandwidth (GB/s)", "5", false);
  return os.str();
}

}  // namespace

GnuplotOutput plotWithGnuplot(const FitResult& fit, const ReportChoices&, const std::string& stem) {
  GnuplotOutput out;
  out.found = onPath("gnuplot");
  if (!out.found) return out;
  for (size_t i = 0; i < fit.data.shapes.size(); ++i) {
    const std::string base = stem + "-" + std::to_string(i);
    const std::string path = base + ".gp";
    {
      std::ofstream f(path);
      f << script(fit.data.shapes[i], base);
      if (!f) {
        out.error = "cannot write " + path;
        return out;
      }
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    char arg0[] = "gnuplot";
    std::string scriptPath = path;
    char* argv[] = {arg0, scriptPath.data(), nullptr};
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    if (rc != 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      out.error = "gnuplot failed on " + path;
      return out;
    }
    out.files.push_back(path);
    for (const char* what : {"time", "busbw"}) {
      for (const char* ext : {"svg", "png"}) out.files.push_back(base + "-" + what + "." + ext);
    }
  }
  return out;
}

}  // namespace pilot::calibration
