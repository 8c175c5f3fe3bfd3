// Heuristic modes. A ranks by the calibrated cost model (each engine's estimate times its measured
// ratio, planning/calibration.hpp), ref last, and puts the tuning DB's record for this graph,
// partition and device first when one exists; B does the same and says so (the DB is its point);
// FALLBACK lists every supporting engine with ref last. Several modes: their lists concatenated,
// duplicates dropped.
#pragma once
#include <functional>
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

// Calibrated estimates closer than this ratio are ties: the same plan's time moves by up to 5%
// between machines of one kind (docs/perf.md, "The default plan").
constexpr double kFirstBuildTie = 1.05;
// ... and so are estimates closer than this many seconds: a launch's jitter, which is all of a
// tiny partition's difference (and its compile costs 0.4-1 s).
constexpr double kFirstBuildTieSeconds = 2e-6;

// When building the head of a ranked list compiles a kernel (NVRTC, or cuDNN's runtime
// compilation: up to seconds on a fresh process), moves to the front the first candidate within
// kFirstBuildTie (or kFirstBuildTieSeconds) of the head's ranked cost whose build compiles
// nothing, and marks it ready_first.
// Configs of the head's engine with the head's very estimate (cuDNN's, ordered by cuDNN) are left
// in their order. `compiles` (code generation, for own engines) is asked nothing when no other
// candidate lies inside the band, else for the head and then the band's candidates in turn.
void prefer_ready_within_tie(std::vector<Candidate>& ranked, const std::function<bool(const Candidate&)>& compiles);

// Whether building candidate `c` of `p` compiles a kernel: for an engine whose build() compiles
// (compiles_kernels), when the kernel it asks for is in no cache and not among the library's
// ahead-of-time kernels (found by running its code generation under a KernelPresenceProbe); for
// another engine, when it reports RUNTIME_COMPILATION for those knobs (cuDNN's runtime fusion).
bool build_compiles(const Candidate& c, const Partition& p, const Target& target);

// Sets each candidate's calibration from `table` for the partition's class on this device.
void calibrate_candidates(std::vector<Candidate>& candidates, const Partition& p, const DeviceInfo& info,
                          const std::vector<CalibrationEntry>& table);
// Calibrates the candidates (calibration_table() unless another table is given), then orders them
// by `modes`.
void order_candidates(PartitionPlans& pp, const Target& target, const RecordedWinners& recorded,
                      const std::vector<HeurMode>& modes,
                      const std::vector<CalibrationEntry>& table = calibration_table());

}  // namespace dnngraph
