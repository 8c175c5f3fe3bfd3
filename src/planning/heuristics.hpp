// Heuristic modes. A ranks by the calibrated cost model (each engine's estimate times its measured
// ratio, planning/calibration.hpp), ref last, and puts the tuning DB's record for this graph,
// partition and device first when one exists; B does the same and says so (the DB is its point);
// FALLBACK lists every supporting engine with ref last. Several modes: their lists concatenated,
// duplicates dropped.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "planning/calibration.hpp"
#include "planning/plan_set.hpp"
#include "planning/tuning_db.hpp"

namespace dnngraph {

// The tuning DB's records for one graph on one device, by partition node key ("0,1,2"). Read
// once per create_execution_plans, not per partition: the graph's fingerprint hashes the whole
// graph. Empty when `modes` has neither A nor B or the DB has no record of this graph.
using RecordedWinners = std::map<std::string, TuningRecord>;
RecordedWinners recorded_winners(const ir::Graph& g, const Target& target, const std::vector<HeurMode>& modes);

// Sets each candidate's calibration from `table` for the partition's class on this device.
void calibrate_candidates(std::vector<Candidate>& candidates, const Partition& p, const DeviceInfo& info,
                          const std::vector<CalibrationEntry>& table);
// Calibrates the candidates (calibration_table() unless another table is given), then orders them
// by `modes`.
void order_candidates(PartitionPlans& pp, const Target& target, const RecordedWinners& recorded,
                      const std::vector<HeurMode>& modes,
                      const std::vector<CalibrationEntry>& table = calibration_table());

}  // namespace dnngraph
