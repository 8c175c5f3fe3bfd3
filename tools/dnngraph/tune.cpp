// SCAFFOLDING: replaced when the 'tune' command lands.
#include "commands.hpp"
namespace dnngraph::cli {
void add_tune_command(CLI::App& app) { app.add_subcommand("tune", "(not yet available)"); }
}  // namespace dnngraph::cli
