// The subcommands main() wires up. Each adds its options to the app and returns what runs it
// after parsing succeeded, so argument errors and run-time errors are reported apart.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace pilot::cli {

struct Command {
  CLI::App* app;             ///< the subcommand, to see whether it was given
  std::function<int()> run;  ///< returns the exit status
};

Command addVersionCommand(CLI::App& app);
Command addExplainCommand(CLI::App& app);
Command addTopoCommand(CLI::App& app);
Command addNetbenchCommand(CLI::App& app);
Command addSweepCommand(CLI::App& app);
Command addFitCommand(CLI::App& app);
Command addReportCommand(CLI::App& app);
Command addDoctorCommand(CLI::App& app);
Command addMonitorCommand(CLI::App& app);
Command addHangCommand(CLI::App& app);
Command addEvaluateCommand(CLI::App& app);

/// Exit statuses: 1 for a failure while running, 2 for bad arguments.
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

/// Prints "nccl-pilot: error: MESSAGE" to stderr and returns `status`.
int reportError(const std::string& message, int status = kExitFailure);

}  // namespace pilot::cli
