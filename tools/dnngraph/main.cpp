// dnngraph: the command-line program (info, run, tune, tour). Every way it can fail ends in a
// message and one of the exit codes documented in docs/errors.md, never an abort.
#include <cstdlib>
#include <iostream>
#include <string>
#include <new>

#include "commands.hpp"
#include "graphs.hpp"
#include "dnngraph/version.hpp"

namespace {

// Beside graphs.hpp's kExitCheckFailed (1) and kExitError (2).
constexpr int kExitOutOfMemory = 3;  // an allocation failed (host tensors of a huge graph)
constexpr int kExitInternal = 4;     // an exception no command expected: a bug
constexpr int kExitUsage = 64;       // bad arguments: every CLI11 parse error (BSD's EX_USAGE)

// CLI11 signals --help and --version as errors whose code is 0, and the commands' own failures as
// CLI::RuntimeError carrying the exit code; everything else it raises is a usage error.
int exit_code_of(const CLI::App& app, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::RuntimeError*>(&e)) return e.get_exit_code();
  const int cli11_code = app.exit(e);  // prints help, the version, or the error and "Run with --help"
  return cli11_code == 0 ? 0 : kExitUsage;
}

// CLI11 answers an unknown command with "A subcommand is required": name it and the commands.
bool unknown_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == argv[1]) return false;
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  std::cerr << "error: unknown command '" << argv[1] << "'; the commands are " << names << " (dnngraph --help)\n";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dnngraph: deep-learning kernels described as graphs"};
  app.set_version_flag("--version", dnngraph::kVersionString);
  app.require_subcommand(1);
  app.fallthrough();  // --log-level may come after the command too
  // The log sink reads DNNGRAPH_LOG_LEVEL on its first line, after parsing: the flag sets it.
  app.add_option_function<int>(
         "--log-level", [](int level) { setenv("DNNGRAPH_LOG_LEVEL", std::to_string(level).c_str(), 1); },
         "library log lines on stderr: 0 none, 1 errors, 2 info, 3 debug (also $DNNGRAPH_LOG_LEVEL)")
      ->check(CLI::Range(0, 3));
  dnngraph::cli::add_info_command(app);
  dnngraph::cli::add_run_command(app);
  dnngraph::cli::add_tour_command(app);
  dnngraph::cli::add_tune_command(app);
  if (unknown_command(app, argc, argv)) return kExitUsage;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return exit_code_of(app, e);
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory (the graph's tensors may be too large for this machine)\n";
    return kExitOutOfMemory;
  } catch (const std::exception& e) {
    std::cerr << "error: internal error: " << e.what() << " (please report it with the command line and graph)\n";
    return kExitInternal;
  }
  return 0;
}
