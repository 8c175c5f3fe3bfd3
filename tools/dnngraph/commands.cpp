#include "commands.hpp"

#include <limits>

#include "graphs.hpp"

namespace dnngraph::cli {

void add_graph_file_options(CLI::App& cmd, GraphFileOptions& o) {
  cmd.add_option("graph", o.graph_path, "graph JSON file (docs/graph-json.md)")->required()->check(CLI::ExistingFile);
  cmd.add_option("--device", o.device, "cpu, cuda or cuda:N (default: the best device present)");
  // Held as int64 while parsing: CLI11 would wrap "-5" into a uint64 seed.
  cmd.add_option_function<int64_t>("--seed", [&o](int64_t seed) { o.seed = static_cast<uint64_t>(seed); },
                                   "seed of the random inputs (default: 1)")
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()));
  cmd.add_option("--engines", o.engines, "only these engines, comma-separated (e.g. ref,cpu_gemm_packed)")
      ->delimiter(',');
}

Device chosen_device(const GraphFileOptions& o, std::string& why_not_cuda) {
  why_not_cuda.clear();
  if (o.device.empty()) return best_device(why_not_cuda);
  Device device = Device::cpu();
  exit_on_error(parse_device(o.device, device), "--device");
  return device;
}

}  // namespace dnngraph::cli
