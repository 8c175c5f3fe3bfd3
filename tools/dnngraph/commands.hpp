// The dnngraph command's subcommands (each file adds one to the app) and what `run` and `tune`
// share: the graph file, the device, the inputs' seed and the engines to consider.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"

namespace dnngraph::cli {

void add_info_command(CLI::App& app);   // info.cpp
void add_run_command(CLI::App& app);    // run.cpp
void add_tour_command(CLI::App& app);   // tour.cpp
void add_tune_command(CLI::App& app);   // tune.cpp

struct GraphFileOptions {
  std::string graph_path;
  std::string device;                // empty: the best device present
  uint64_t seed = 1;
  std::vector<std::string> engines;  // empty: every engine
};

// Adds the graph argument and --device, --seed and --engines to `cmd`.
void add_graph_file_options(CLI::App& cmd, GraphFileOptions& o);

// The device that --device names, else the best one present; `why_not_cuda` says why the best is
// not CUDA, if not. Exits with kExitError (graphs.hpp) when --device is not a device name.
Device chosen_device(const GraphFileOptions& o, std::string& why_not_cuda);

}  // namespace dnngraph::cli
