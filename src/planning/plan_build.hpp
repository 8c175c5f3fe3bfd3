// The planning steps on a given Target: Graph's API runs them on its handle's, the AOT kernel
// generator (tools/aot) on a described H200 that needs no GPU.
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "planning/plan_set.hpp"

namespace dnngraph {

// Partitions g's IR, surveys every engine per partition (splitting a fused partition only ref
// takes), orders the candidates by `modes` and lays out the intermediates.
Status plan_partitions(const GraphImpl& g, const Target& target, const std::vector<HeurMode>& modes,
                       std::shared_ptr<PlanSet>& out);

// Cross-partition intermediates' places at the front of the workspace (256-byte aligned), values
// live at the same time apart and the others sharing bytes (partitions run in list order), into
// ps.workspace_offset and ps.intermediates_bytes.
void layout_intermediates(PlanSet& ps, const ir::Graph& g);

// A candidate to build: (partition index, candidate index).
using CandidateRef = std::pair<size_t, size_t>;

// Builds each listed candidate that is not built yet, into ps.parts[p].built[i]; status[k] is
// which[k]'s result. Candidates of engines that build concurrently are built on build_threads()
// threads, the others in order on the caller's; the outcome does not depend on the threads.
void build_candidates(PlanSet& ps, const Target& target, const std::vector<CandidateRef>& which,
                      std::vector<Status>& status);

// ALL: builds every candidate (one concurrent batch); HEURISTICS_CHOICE: each partition's first
// candidate that builds (in rounds: every partition's next candidate at once, so one compile per
// partition when the first builds). Each partition's chosen plan is its first built candidate; the
// first partition (in order) with none fails the call, naming the last error of its candidates.
Status build_partitions(PlanSet& ps, const Target& target, BuildPlanPolicy policy);

}  // namespace dnngraph
