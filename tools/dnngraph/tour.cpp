// SCAFFOLDING: replaced when the 'tour' command lands.
#include "commands.hpp"
namespace dnngraph::cli {
void add_tour_command(CLI::App& app) { app.add_subcommand("tour", "(not yet available)"); }
}  // namespace dnngraph::cli
