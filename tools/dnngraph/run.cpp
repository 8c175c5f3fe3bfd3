// dnngraph run GRAPH.json: builds the graph on a device, runs it on seeded random inputs, times it,
// and checks every output against the same graph run by the reference engine on the CPU.
#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "graphs.hpp"
#include "host_tensors.hpp"
#include "reference_check.hpp"
#include "planning/introspect.hpp"
#include "planning/tuning_db.hpp"

namespace dnngraph::cli {
namespace {

struct RunOptions : GraphFileOptions {
  int64_t plan = -1;   // -1: the heuristics' choice
  int iters = 5;
  bool explain = false;
  bool check = true;
  std::optional<double> rtol;  // none: by data type
};

// CLI::Range, with NaN refused too: it compares false with both bounds.
CLI::Validator finite_range(double lo, double hi) {
  const CLI::Range range(lo, hi);
  return CLI::Validator(
      [range](std::string& input) {
        double value = 0;
        if (CLI::detail::lexical_cast(input, value) && std::isnan(value)) return "Value " + input + " is not a number";
        return range(input);
      },
      range.get_description());
}

// Partitions whose first plan is the tuning DB's record for this graph, partition and device.
size_t tuned_partitions(const Graph& g) {
  size_t n = 0;
  for (const auto& p : introspect::partitions(g)) n += !p.candidates.empty() && p.candidates.front().from_tuning_db;
  return n;
}

void run_graph(const RunOptions& o) {
  std::string text;
  exit_on_error(read_text_file(o.graph_path, text), "reading the graph");
  Graph g;
  exit_on_error(Graph::from_json(text, g), o.graph_path);

  std::string why_not_cuda;
  const Device device = chosen_device(o, why_not_cuda);
  Handle handle(device);
  exit_on_error(handle.status(), "opening " + device.to_string());
  std::cout << "graph: " << o.graph_path << " ('" << introspect::graph_name(g) << "', " << introspect::node_count(g) << " nodes)\n";
  std::cout << "device: " << device.to_string();
  if (!why_not_cuda.empty()) std::cout << " (no GPU: " << why_not_cuda << ")";
  std::cout << "\n";

  if (!o.engines.empty()) g.select_engines(o.engines);
  exit_on_error(plan_graph(g, handle), "planning");
  // --explain prints the partitions and the plan list itself, with every engine's verdict.
  if (o.explain) {
    std::cout << g.explain();
  } else {
    for (const auto& line : partition_lines(g)) std::cout << "  " << line << "\n";
    for (const auto& line : plan_names(g)) std::cout << "  " << line << "\n";
  }
  if (o.plan >= g.get_execution_plan_count())
    exit_on_error({ErrorCode::INVALID_VALUE, "--plan " + std::to_string(o.plan) + ": the graph has " +
                                                 std::to_string(g.get_execution_plan_count()) + " plans"}, "--plan");
  exit_on_error(o.plan < 0 ? g.build_plans(handle) : g.build_plan_at_index(handle, o.plan), "building plans");
  std::cout << "running " << (o.plan < 0 ? "the heuristics' choice" : "plan " + std::to_string(o.plan));
  if (o.plan <= 0 && tuned_partitions(g) > 0)
    std::cout << " (" << tuned_partitions(g) << " of " << introspect::partitions(g).size()
              << " partitions from the tuning DB's record: " << TuningDb::default_path() << ")";
  std::cout << "\n";

  std::vector<HostTensor> tensors;
  exit_on_error(make_host_tensors(g, o.seed, tensors), "making inputs");
  DeviceTensors dev;
  exit_on_error(dev.upload(handle, tensors), "uploading inputs");
  int64_t ws = 0;
  exit_on_error(o.plan < 0 ? g.get_workspace_size(ws) : g.get_workspace_size_plan_at_index(o.plan, ws), "workspace size");
  exit_on_error(dev.reserve_workspace(ws), "allocating the workspace");
  auto execute = [&] {
    return o.plan < 0 ? g.execute(handle, dev.pack(), dev.workspace(), dev.workspace_bytes())
                      : g.execute_plan_at_index(handle, dev.pack(), dev.workspace(), o.plan, dev.workspace_bytes());
  };
  // The checked run: outputs are NaN before it, so anything left unwritten shows.
  exit_on_error(execute(), "executing");
  exit_on_error(dev.download_outputs(tensors), "downloading outputs");
  Timing t;
  exit_on_error(time_runs(handle, o.iters, execute, t), "timing");
  std::cout << "time: median " << format_seconds(t.median_s) << ", min " << format_seconds(t.min_s) << " over "
            << t.iters << " runs";
  const std::string rate = format_rate(introspect::graph_flops(g), t.median_s);
  std::cout << (rate.empty() ? "" : ", " + rate) << ", workspace " << ws << " bytes\n";

  if (!o.check) {
    for (const auto& h : tensors)
      if (h.is_output()) std::cout << "  '" << h.name << "' checksum " << checksum(h) << "\n";
    return;
  }
  if (const double flops = introspect::graph_flops(g); flops > 2e9)
    std::cout << "checking against ref on the CPU: " << flops / 1e9
              << " GFLOP at well under 1 GFLOP/s may take minutes (--no-check skips it)\n" << std::flush;
  std::vector<HostTensor> ref;
  exit_on_error(run_reference(text, tensors, ref), "running the reference engine");
  std::vector<Comparison> results;
  const double tol = o.rtol ? *o.rtol : graph_tolerance(g);
  exit_on_error(compare_outputs(tensors, ref, tol, results), "comparing");
  bool ok = true;
  std::cout << "check against ref (cpu):\n";
  for (const auto& c : results) {
    std::cout << "  " << format_comparison(c) << "\n";
    ok &= c.ok;
  }
  std::cout << (ok ? "PASS" : "FAIL") << "\n";
  if (!ok) throw CLI::RuntimeError(kExitCheckFailed);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a graph JSON file on random inputs, time it, check it against ref");
  add_graph_file_options(*cmd, *o);
  cmd->add_option("--plan", o->plan, "run plan N instead of the heuristics' choice")
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--iters", o->iters, "timed runs (the median is printed)")->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  cmd->add_flag("--explain", o->explain, "print every partition, every engine's verdict and the plan list");
  cmd->add_flag("!--no-check", o->check, "skip the comparison with the reference engine");
  cmd->add_option("--rtol", o->rtol, "relative tolerance of the check, 0 to 1 (default: by data type)")
      ->check(finite_range(0, 1));
  cmd->callback([o] { run_graph(*o); });
}

}  // namespace dnngraph::cli
