// SCAFFOLDING: replaced when the 'info' command lands.
#include "commands.hpp"
namespace dnngraph::cli {
void add_info_command(CLI::App& app) { app.add_subcommand("info", "(not yet available)"); }
}  // namespace dnngraph::cli
