#include "graphs.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "planning/introspect.hpp"

namespace dnngraph::cli {

void exit_on_error(const Status& s, const std::string& what) {
  if (s.ok()) return;
  std::cerr << "error: " << what << ": " << s.to_string() << "\n";
  throw CLI::RuntimeError(kExitError);
}

// ---- devices and graphs

Status parse_device(const std::string& text, Device& out) {
  if (text == "cpu") {
    out = Device::cpu();
    return {};
  }
  if (text == "cuda") {
    out = Device::cuda(0);
    return {};
  }
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() < 9 &&
      std::all_of(text.begin() + 5, text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    out = Device::cuda(std::stoi(text.substr(5)));
    return {};
  }
  return {ErrorCode::INVALID_VALUE, "device '" + text + "' is not one of cpu, cuda, cuda:N"};
}

Device best_device(std::string& why_not_cuda) {
  Handle cuda(Device::cuda(0));
  if (cuda.status().ok()) {
    why_not_cuda.clear();
    return Device::cuda(0);
  }
  why_not_cuda = cuda.status().message();
  return Device::cpu();
}

Status read_text_file(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {ErrorCode::IO_ERROR, "cannot open '" + path + "' for reading"};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return {ErrorCode::IO_ERROR, "error while reading '" + path + "'"};
  text = ss.str();
  return {};
}

Status load_graph_file(const std::string& path, Graph& graph) {
  std::string text;
  if (auto s = read_text_file(path, text); !s.ok()) return s;
  if (auto s = Graph::from_json(text, graph); !s.ok()) return {s.code(), path + ": " + s.message()};
  return {};
}

Status plan_graph(Graph& g, const Handle& h) {
  if (auto s = g.validate(); !s.ok()) return s;
  if (auto s = g.build_operation_graph(h); !s.ok()) return s;
  if (auto s = g.create_execution_plans({HeurMode::A, HeurMode::FALLBACK}); !s.ok()) return s;
  return g.check_support(h);
}

Status build_graph(Graph& g, const Handle& h, BuildPlanPolicy policy, int64_t plan_index) {
  if (auto s = plan_graph(g, h); !s.ok()) return s;
  return plan_index < 0 ? g.build_plans(h, policy) : g.build_plan_at_index(h, plan_index);
}

std::vector<std::string> plan_names(const Graph& g) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
    std::string name;
    if (!g.get_plan_name_at_index(i, name).ok()) name = "?";
    out.push_back("plan " + std::to_string(i) + ": " + name);
  }
  return out;
}

std::vector<std::string> partition_lines(const Graph& g) {
  std::vector<std::string> out;
  const auto parts = introspect::partitions(g);
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& pp = parts[i];
    std::string line = "partition " + std::to_string(i) + " (" + pp.pattern + "):";
    for (size_t k = 0; k < pp.nodes.size(); ++k) line += (k ? ", " : " ") + pp.nodes[k];
    line += " -> " + std::to_string(pp.candidates.size()) + " candidate" + (pp.candidates.size() == 1 ? "" : "s");
    if (!pp.candidates.empty()) line += ", chosen " + pp.candidates[pp.chosen].label;
    out.push_back(line);
  }
  return out;
}

bool chosen_plan_uses(const Graph& g, const std::string& engine) {
  const int id = engine_id_by_name(engine);
  if (id < 0) return false;
  for (const auto& pp : introspect::partitions(g))
    if (!pp.candidates.empty() && pp.candidates[pp.chosen].engine_id == id) return true;
  return false;
}

}  // namespace dnngraph::cli
