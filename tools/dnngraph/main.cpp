// dnngraph: the command-line program (info, run, tune, tour).
#include "commands.hpp"
#include "dnngraph/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"dnngraph: deep-learning kernels described as graphs"};
  app.set_version_flag("--version", dnngraph::kVersionString);
  app.require_subcommand(1);
  dnngraph::cli::add_info_command(app);
  dnngraph::cli::add_run_command(app);
  dnngraph::cli::add_tour_command(app);
  dnngraph::cli::add_tune_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
