// The dnngraph command's subcommands: each file adds one to the app.
#pragma once
#include <CLI/CLI.hpp>

namespace dnngraph::cli {

void add_info_command(CLI::App& app);   // info.cpp
void add_run_command(CLI::App& app);    // run.cpp
void add_tour_command(CLI::App& app);   // tour.cpp
void add_tune_command(CLI::App& app);   // tune.cpp

}  // namespace dnngraph::cli
