// Heuristic modes: A ranks by the cost model, B puts the tuning DB's record first, FALLBACK lists
// every supporting engine with ref last. Several modes: their lists concatenated, duplicates dropped.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "planning/plan_set.hpp"
#include "planning/tuning_db.hpp"

namespace dnngraph {

// Mode B's tuning DB records for one graph on one device, by partition node key ("0,1,2"). Read
// once per create_execution_plans, not per partition: the graph's fingerprint hashes the whole
// graph. Empty when `modes` has no B.
using RecordedWinners = std::map<std::string, TuningRecord>;
RecordedWinners recorded_winners(const ir::Graph& g, const Target& target, const std::vector<HeurMode>& modes);

void order_candidates(PartitionPlans& pp, const RecordedWinners& recorded, const std::vector<HeurMode>& modes);

}  // namespace dnngraph
