#include "fusion/patterns.hpp"

#include "graph/op_traits.hpp"

namespace dnngraph {

const std::vector<FusionPattern>& fusion_patterns() {
  static const std::vector<FusionPattern> kPatterns{
      {"conv_epilogue", "pointwise* (bias, residual, activation, cast) -> [reduction]", true, true, true},
      {"matmul_epilogue", "pointwise* (scale, bias, activation, cast) -> [reduction]", true, true, true},
      {"sdpa", "pointwise*", true, false, true},
      {"norm_epilogue", "pointwise*", true, false, true},
      {"pointwise_chain", "pointwise* -> [reduction]", true, true, false},
      {"reduction", "", false, false, false},
  };
  return kPatterns;
}

const FusionPattern* pattern_named(std::string_view name) {
  for (const auto& p : fusion_patterns())
    if (p.name == name) return &p;
  return nullptr;
}

std::string pattern_diagram(const FusionPattern& p) {
  std::string ops;
  for (size_t i = 0; i < kOpCount; ++i)
    if (op_traits_at(i).fusion_pattern == p.name) ops += (ops.empty() ? "" : "|") + std::string(op_traits_at(i).name);
  return p.joins.empty() ? ops : ops + " -> " + std::string(p.joins);
}

}  // namespace dnngraph
