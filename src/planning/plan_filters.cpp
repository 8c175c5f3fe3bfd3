// The cuDNN frontend's plan filters: select/deselect_behavior_notes drop candidates from every
// partition's list by their behaviour notes (a per-candidate reading of the notes that
// get_behavior_notes reports for whole plans); deselect_workspace_greater_than sets the largest
// plan workspace build_candidate accepts. And the graph's key.
#include <optional>
#include <set>

#include "planning/plan_set.hpp"

namespace dnngraph {
namespace {

std::string_view note_name(BehaviorNote n) {
  switch (n) {
    case BehaviorNote::RUNTIME_COMPILATION: return "RUNTIME_COMPILATION";
    case BehaviorNote::SUPPORTS_CUDA_GRAPH_NATIVE_API: return "SUPPORTS_CUDA_GRAPH_NATIVE_API";
    case BehaviorNote::CUBLASLT_DEPENDENCY: return "CUBLASLT_DEPENDENCY";
  }
  return "?";
}

std::string names(const std::vector<BehaviorNote>& notes) {
  std::string s;
  for (BehaviorNote n : notes) s += (s.empty() ? "" : ", ") + std::string(note_name(n));
  return s;
}

Status need_plans(const GraphImpl& g, const char* fn) {
  if (!g.plans || g.stage < Stage::PLANS_CREATED)
    return {ErrorCode::INVALID_CALL_ORDER, std::string(fn) + ": call create_execution_plans first"};
  return {};
}

// Drops the candidates `keep` refuses from every partition, with a verdict line each; the plans
// must be checked (and built) again.
template <class Keep>
void filter_candidates(GraphImpl& g, const std::string& filter, Keep keep) {
  const std::optional<Target> target = g.handle ? std::optional<Target>(make_target(g, *g.handle)) : std::nullopt;
  for (PartitionPlans& pp : g.plans->parts) {
    std::vector<Candidate> kept;
    std::vector<std::shared_ptr<Plan>> built;
    for (size_t i = 0; i < pp.candidates.size(); ++i) {
      const Candidate& c = pp.candidates[i];
      std::set<BehaviorNote> notes;
      add_behavior_notes(pp, c, target ? &*target : nullptr, notes);
      // A candidate on a CUDA handle can be captured unless ref stages it through host memory.
      if (target && target->device().is_cuda() && c.engine_id != 0) notes.insert(BehaviorNote::SUPPORTS_CUDA_GRAPH_NATIVE_API);
      if (keep(notes)) {
        kept.push_back(c);
        built.push_back(pp.built[i]);
      } else {
        pp.verdicts.push_back(c.label() + ": dropped by " + filter);
      }
    }
    pp.candidates = std::move(kept);
    pp.built = std::move(built);
    pp.chosen = 0;
  }
  g.stage = Stage::PLANS_CREATED;
}

}  // namespace

Status Graph::select_behavior_notes(const std::vector<BehaviorNote>& notes) {
  if (auto s = need_plans(*impl_, "select_behavior_notes"); !s.ok()) return s;
  filter_candidates(*impl_, "select_behavior_notes(" + names(notes) + ")", [&](const std::set<BehaviorNote>& has) {
    for (BehaviorNote n : notes)
      if (!has.count(n)) return false;
    return true;
  });
  return {};
}

Status Graph::deselect_behavior_notes(const std::vector<BehaviorNote>& notes) {
  if (auto s = need_plans(*impl_, "deselect_behavior_notes"); !s.ok()) return s;
  filter_candidates(*impl_, "deselect_behavior_notes(" + names(notes) + ")", [&](const std::set<BehaviorNote>& has) {
    for (BehaviorNote n : notes)
      if (has.count(n)) return false;
    return true;
  });
  return {};
}

Status Graph::deselect_workspace_greater_than(int64_t bytes) {
  if (auto s = need_plans(*impl_, "deselect_workspace_greater_than"); !s.ok()) return s;
  if (bytes < 0)
    return {ErrorCode::INVALID_VALUE, "deselect_workspace_greater_than: " + std::to_string(bytes) + " bytes is negative"};
  impl_->plans->max_plan_workspace = bytes;
  return {};
}

Status Graph::key(int64_t& out) const {
  const GraphImpl& g = *impl_;
  if (g.stage < Stage::LOWERED || !g.ir) return {ErrorCode::INVALID_CALL_ORDER, "key: call build_operation_graph first"};
  out = static_cast<int64_t>(g.ir->fingerprint(g.ir->dynamic_shapes));
  return {};
}

}  // namespace dnngraph
