// dnngraph run GRAPH.json: builds the graph on a device, runs it on seeded random inputs, times it,
// and checks every output against the same graph run by the reference engine on the CPU. With
// --json, stdout holds one JSON object instead of the text (schema: docs/cli.md).
#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "graphs.hpp"
#include "host_tensors.hpp"
#include "json_report.hpp"
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
  bool json = false;
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

// The outputs' checksums (--no-check), as text lines and into `j`.
void report_checksums(const std::vector<HostTensor>& tensors, std::ostream& out, nlohmann::json& j) {
  j["check"] = nullptr;
  j["checksums"] = nlohmann::json::array();
  for (const auto& h : tensors) {
    if (!h.is_output()) continue;
    out << "  '" << h.name << "' checksum " << checksum(h) << "\n";
    j["checksums"].push_back({{"tensor", h.name}, {"uid", h.uid}, {"checksum", checksum(h)}});
  }
  j["result"] = "UNCHECKED";
}

void run_graph(const RunOptions& o) {
  // With --json the text goes nowhere (a stream without a buffer drops what it is given).
  std::ostream no_text(nullptr);
  std::ostream& out = o.json ? no_text : std::cout;
  nlohmann::json j;
  std::string text;
  exit_on_error(read_text_file(o.graph_path, text), "reading the graph");
  Graph g;
  exit_on_error(Graph::from_json(text, g), o.graph_path);

  std::string why_not_cuda;
  const Device device = chosen_device(o, why_not_cuda);
  Handle handle(device);
  exit_on_error(handle.status(), "opening " + device.to_string());
  out << "graph: " << o.graph_path << " ('" << introspect::graph_name(g) << "', " << introspect::node_count(g) << " nodes)\n";
  out << "device: " << device.to_string();
  if (!why_not_cuda.empty()) out << " (no GPU: " << why_not_cuda << ")";
  out << "\n";
  j.update({{"graph", o.graph_path}, {"name", introspect::graph_name(g)}, {"nodes", introspect::node_count(g)},
            {"device", device.to_string()}, {"device_name", introspect::device_info(handle).name},
            {"why_not_cuda", why_not_cuda}});

  if (!o.engines.empty()) g.select_engines(o.engines);
  exit_on_error(plan_graph(g, handle), "planning");
  // --explain prints the partitions and the plan list itself, with every engine's verdict.
  if (o.explain) {
    out << g.explain();
    j["explain"] = g.explain();
  } else {
    for (const auto& line : partition_lines(g)) out << "  " << line << "\n";
    for (const auto& line : plan_names(g)) out << "  " << line << "\n";
  }
  if (o.plan >= g.get_execution_plan_count())
    exit_on_error({ErrorCode::INVALID_VALUE, "--plan " + std::to_string(o.plan) + ": the graph has " +
                                                 std::to_string(g.get_execution_plan_count()) + " plans"}, "--plan");
  exit_on_error(o.plan < 0 ? g.build_plans(handle) : g.build_plan_at_index(handle, o.plan), "building plans");
  out << "running " << (o.plan < 0 ? "the heuristics' choice" : "plan " + std::to_string(o.plan));
  const size_t tuned = o.plan <= 0 ? tuned_partitions(g) : 0;
  if (tuned > 0)
    out << " (" << tuned << " of " << introspect::partitions(g).size()
        << " partitions from the tuning DB's record: " << TuningDb::default_path() << ")";
  out << "\n";
  // After building: a partition's chosen candidate is known then.
  j["partitions"] = partitions_json(g);
  j["plans"] = plans_json(g);
  std::string plan_name = chosen_plan_name(g);
  if (o.plan >= 0) exit_on_error(g.get_plan_name_at_index(o.plan, plan_name), "naming the plan");
  j["plan"] = {{"index", o.plan < 0 ? nlohmann::json(nullptr) : nlohmann::json(o.plan)}, {"name", plan_name},
               {"tuned_partitions", tuned}};

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
  out << "time: median " << format_seconds(t.median_s) << ", min " << format_seconds(t.min_s) << " over "
      << t.iters << " runs";
  const std::string rate = format_rate(introspect::graph_flops(g), t.median_s);
  out << (rate.empty() ? "" : ", " + rate) << ", workspace " << ws << " bytes\n";
  j["time"] = {{"median_s", t.median_s}, {"min_s", t.min_s}, {"iters", t.iters}};
  j["flops"] = introspect::graph_flops(g);
  j["workspace_bytes"] = ws;

  if (!o.check) {
    report_checksums(tensors, out, j);
    if (o.json) print_json(j);
    return;
  }
  // On stderr with --json: the wait deserves a word, and stdout is the JSON's.
  if (const double flops = introspect::graph_flops(g); flops > 2e9)
    (o.json ? std::cerr : std::cout) << "checking against ref on the CPU: " << flops / 1e9
                                     << " GFLOP at well under 1 GFLOP/s may take minutes (--no-check skips it)\n"
                                     << std::flush;
  std::vector<HostTensor> ref;
  exit_on_error(run_reference(text, tensors, ref), "running the reference engine");
  std::vector<Comparison> results;
  const double tol = o.rtol ? *o.rtol : graph_tolerance(g);
  exit_on_error(compare_outputs(tensors, ref, tol, results), "comparing");
  bool ok = true;
  out << "check against ref (cpu):\n";
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& c : results) {
    out << "  " << format_comparison(c) << "\n";
    outputs.push_back(comparison_json(c));
    ok &= c.ok;
  }
  out << (ok ? "PASS" : "FAIL") << "\n";
  j["check"] = {{"reference", "ref (cpu)"}, {"rtol", tol}, {"outputs", outputs}, {"passed", ok}};
  j["checksums"] = nullptr;
  j["result"] = ok ? "PASS" : "FAIL";
  if (o.json) print_json(j);
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
  cmd->add_flag("--json", o->json, "print one JSON object instead of the text (schema: docs/cli.md)");
  cmd->add_option("--rtol", o->rtol, "relative tolerance of the check, 0 to 1 (default: by data type)")
      ->check(finite_range(0, 1));
  cmd->callback([o] { run_graph(*o); });
}

}  // namespace dnngraph::cli
