#include "json_report.hpp"

#include <cmath>
#include <iostream>

#include "graphs.hpp"
#include "planning/introspect.hpp"

namespace dnngraph::cli {

nlohmann::json seconds_json(double s) { return std::isfinite(s) ? nlohmann::json(s) : nlohmann::json(nullptr); }

nlohmann::json partitions_json(const Graph& g) {
  nlohmann::json out = nlohmann::json::array();
  const auto parts = introspect::partitions(g);
  for (size_t i = 0; i < parts.size(); ++i) {
    nlohmann::json candidates = nlohmann::json::array();
    for (const auto& c : parts[i].candidates)
      candidates.push_back({{"label", c.label}, {"engine_id", c.engine_id}, {"estimate_s", seconds_json(c.estimate_s)},
                            {"from_tuning_db", c.from_tuning_db}});
    out.push_back({{"index", i}, {"pattern", parts[i].pattern}, {"nodes", parts[i].nodes},
                   {"candidates", candidates}, {"chosen", parts[i].chosen}});
  }
  return out;
}

nlohmann::json plans_json(const Graph& g) {
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
    std::string name;
    out.push_back(g.get_plan_name_at_index(i, name).ok() ? nlohmann::json(name) : nlohmann::json(nullptr));
  }
  return out;
}

std::string chosen_plan_name(const Graph& g) {
  std::string name;
  for (const auto& p : introspect::partitions(g))
    if (p.chosen < p.candidates.size()) name += (name.empty() ? "" : " + ") + p.candidates[p.chosen].label;
  return name;
}

nlohmann::json comparison_json(const Comparison& c) {
  return {{"tensor", c.name},        {"uid", c.uid},
          {"elements", c.elements},  {"mismatches", c.mismatches},
          {"max_abs_err", c.max_abs}, {"max_rel_err", c.max_rel},
          {"tolerance", c.tolerance}, {"checksum", c.checksum},
          {"ref_checksum", c.ref_checksum}, {"ok", c.ok}};
}

nlohmann::json timing_json(const CandidateTiming& t) {
  const bool failed = !t.error.empty();
  return {{"rank", t.rank},
          {"plan", t.label},
          {"seconds", failed ? nlohmann::json(nullptr) : seconds_json(t.seconds)},
          {"runs", t.runs},
          {"gave_up", t.gave_up},
          {"workspace_bytes", t.workspace},
          {"error", failed ? nlohmann::json(t.error) : nlohmann::json(nullptr)},
          {"chosen", t.rank == 0 && !failed}};
}

void print_json(const nlohmann::json& j) {
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace dnngraph::cli
