// nccl-pilot: the command-line tool beside the plugin library. Data goes to stdout, messages
// to stderr; every failure is one "nccl-pilot: error: ..." line and a non-zero exit.
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "pilot/version.h"

int main(int argc, char** argv) {
  using namespace pilot::cli;
  CLI::App app{
      "Inspect the nccl-pilot plugin library, explain its tuning decisions and show the "
      "topology it gives NCCL.",
      "nccl-pilot"};
  app.set_version_flag("--version", std::string("nccl-pilot ") + pilot::kVersion);
  app.require_subcommand(1);

  const std::vector<Command> commands = {
      addVersionCommand(app),  addExplainCommand(app),  addTopoCommand(app),
      addNetbenchCommand(app), addSweepCommand(app),    addFitCommand(app),
      addReportCommand(app),   addEvaluateCommand(app), addDoctorCommand(app),
      addMonitorCommand(app),  addHangCommand(app)};

  // CLI11 would report a mistyped command as a missing one; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const Command& command : commands) known = known || command.app->check_name(argv[1]);
    if (!known) {
      return reportError("unknown command '" + std::string(argv[1]) +
                             "' (commands: version, explain, topo, netbench, sweep, fit, report, "
                             "evaluate, doctor, monitor, hang; try --help)",
                         kExitUsage);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return reportError(e.what(), kExitUsage);
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return reportError("no command given (try --help)", kExitUsage);
}
