// Heuristic modes: A ranks by the cost model, B puts the tuning DB's record first, FALLBACK lists
// every supporting engine with ref last. Several modes: their lists concatenated, duplicates dropped.
#pragma once
#include <vector>

#include "planning/plan_set.hpp"

namespace dnngraph {

void order_candidates(PartitionPlans& pp, const ir::Graph& g, const Target& target, const std::vector<HeurMode>& modes);

}  // namespace dnngraph
