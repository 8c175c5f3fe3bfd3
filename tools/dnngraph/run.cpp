// SCAFFOLDING: replaced when the 'run' command lands.
#include "commands.hpp"
namespace dnngraph::cli {
void add_run_command(CLI::App& app) { app.add_subcommand("run", "(not yet available)"); }
}  // namespace dnngraph::cli
