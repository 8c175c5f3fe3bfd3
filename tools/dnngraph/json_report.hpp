// The JSON that `run --json` and `tune --json` print (schemas in docs/cli.md), made from the same
// values as their text, so the two cannot disagree.
#pragma once
#include <nlohmann/json.hpp>

#include <vector>

#include "dnngraph/dnngraph.hpp"
#include "planning/autotune.hpp"
#include "reference_check.hpp"

namespace dnngraph::cli {

// JSON has no infinity or NaN: a time that is not finite is null.
nlohmann::json seconds_json(double s);
// Every partition: index, pattern, nodes, candidates (label, engine id, estimate, from the tuning
// DB) and the index of the chosen one.
nlohmann::json partitions_json(const Graph& g);
// The plan names, by plan index.
nlohmann::json plans_json(const Graph& g);
// The plan that runs after build_plans: every partition's chosen candidate, joined by " + " as
// plan names are (the heuristics' choice need not be plan 0 when a candidate failed to build).
std::string chosen_plan_name(const Graph& g);
nlohmann::json comparison_json(const Comparison& c);
// One timed candidate; `chosen` when it is its partition's rank 0.
nlohmann::json timing_json(const CandidateTiming& t);
// Prints `j` on stdout, indented; bytes that are not UTF-8 (a file name) become U+FFFD rather
// than an exception.
void print_json(const nlohmann::json& j);

}  // namespace dnngraph::cli
