// What the dnngraph subcommands share about devices and graphs: exit codes, device names, graph
// files, the build steps, and the plan and partition listings. Everything returns a Status;
// printing is left to the commands.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"

namespace dnngraph::cli {

// Process exit codes of the commands.
inline constexpr int kExitCheckFailed = 1;  // an output disagreed with the reference engine
inline constexpr int kExitError = 2;        // bad input, or a library call failed

// Prints "error: CODE: message" to stderr and throws CLI::RuntimeError(kExitError) when `s` is bad.
void exit_on_error(const Status& s, const std::string& what);

// ---- devices and graphs

// "cpu", "cuda" (= cuda:0) or "cuda:N".
Status parse_device(const std::string& text, Device& out);
// CUDA device 0 when a handle opens on it, else the CPU; `why_not_cuda` says why not, if not.
Device best_device(std::string& why_not_cuda);

Status read_text_file(const std::string& path, std::string& text);
// Reads a graph JSON file (docs/graph-json.md).
Status load_graph_file(const std::string& path, Graph& graph);

// validate, build_operation_graph, create_execution_plans({A, FALLBACK}) and check_support.
Status plan_graph(Graph& g, const Handle& h);
// plan_graph, then build_plans(policy) (plan_index < 0) or build_plan_at_index(plan_index).
Status build_graph(Graph& g, const Handle& h, BuildPlanPolicy policy = BuildPlanPolicy::HEURISTICS_CHOICE,
                   int64_t plan_index = -1);

// One line per plan index: "plan 0: cpu_conv_implicit_gemm[...] + ref".
std::vector<std::string> plan_names(const Graph& g);
// One line per partition: "partition 0 (conv_fprop+epilogue): conv, bias, relu -> 3 candidates".
std::vector<std::string> partition_lines(const Graph& g);
// Whether a partition's chosen plan is the engine called `engine` ("ref", ...).
bool chosen_plan_uses(const Graph& g, const std::string& engine);

}  // namespace dnngraph::cli
