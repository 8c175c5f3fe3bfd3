// PlanSet: the partitions of a graph, each with its ordered candidates and built plans.
//
// Plan index i (get_execution_plan_count, build/execute_plan_at_index) means: every partition uses
// its i-th ranked candidate, or its last one when it has fewer. execute() uses each partition's
// chosen candidate: the heuristics' first, or after autotune the fastest measured (autotune reorders
// every partition's list fastest first, so plan 0 is then every partition's fastest).
#pragma once
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fusion/partition.hpp"
#include "graph/graph_impl.hpp"
#include "planning/engine.hpp"

namespace dnngraph {

struct Candidate {
  int engine_id = -1;
  Knobs knobs;
  double estimate_s = 0;   // the engine's estimate_seconds
  double measured_s = -1;  // autotune's median, when timed (or the tuning DB record's)
  // Mode A ranks by estimate_s * calibration: the measured / estimated ratio of this engine on this
  // device and workload class (planning/calibration.hpp), 1 where none was measured.
  double calibration = 1.0;
  bool from_tuning_db = false;  // put first by a tuning DB record of this graph, partition and device
  // Put first by mode A over a plan whose build compiles (heuristics.hpp, kFirstBuildTie): within
  // the tie band of its estimate, and this one builds without compiling.
  bool ready_first = false;
  double ranked_s() const { return estimate_s * calibration; }
  std::string label() const;  // "engine[knobs]"
};

struct PartitionPlans {
  Partition partition;
  std::vector<Candidate> candidates;         // best first
  std::vector<std::string> verdicts;         // one line per engine, for explain()
  std::vector<std::shared_ptr<Plan>> built;  // parallel to candidates; null until built
  int chosen = 0;
  size_t index_for(int64_t plan_index) const {
    return std::min(static_cast<size_t>(plan_index), candidates.size() - 1);
  }
};

// The user pointers of the last execute() whose every pointer the device accepted, and its handle:
// a graph replayed on the same buffers skips the driver's pointer queries (a few calls per tensor).
struct CheckedPointers {
  std::mutex mutex;
  const HandleImpl* handle = nullptr;
  std::vector<void*> ptrs;  // of the graph's user tensors, in tensor id order
};

struct PlanSet {
  std::vector<PartitionPlans> parts;
  std::vector<HeurMode> modes;
  std::vector<int64_t> workspace_offset;  // by tensor id: intermediates between partitions; -1 elsewhere
  int64_t intermediates_bytes = 0;
  int64_t max_plan_workspace = -1;  // deselect_workspace_greater_than's limit; -1: none
  mutable CheckedPointers checked;

  int64_t plan_count() const;  // 0 while a partition has no candidate (index_for needs one)
  int64_t workspace_bytes() const;  // intermediates + the largest built plan's workspace
};

Target make_target(const GraphImpl& g, const Handle& handle);

// The behaviour notes of running candidate `c` of partition `pp` (engine_query.cpp): the engine's
// own (with a target) and what its name implies (cuda_*: RUNTIME_COMPILATION; cublaslt).
void add_behavior_notes(const PartitionPlans& pp, const Candidate& c, const Target* target, std::set<BehaviorNote>& found);

// Resolves a variant pack into pointers by IR tensor id, checking every rule (src/planning/execute.cpp).
// `scalars` receives storage for pass-by-value values baked into the graph.
// `need` is the workspace the plans about to run ask for.
Status resolve_pack(const GraphImpl& g, const Handle& handle, const VariantPack* by_tensor,
                    const UidVariantPack* by_uid, void* workspace, int64_t workspace_bytes, int64_t need,
                    std::vector<void*>& ptrs, std::vector<double>& scalars);
// Runs every partition with candidate choice[p] (which must be built).
Status run_partitions(const GraphImpl& g, const Handle& handle, const std::vector<void*>& ptrs, void* workspace,
                      const std::vector<size_t>& choice);

}  // namespace dnngraph
