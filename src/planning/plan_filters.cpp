// The cuDNN frontend's plan filters: select/deselect_behavior_notes drop candidates from every
// partition's list by their behaviour notes (a per-candidate reading of the notes that
// get_behavior_notes reports for whole plans), select/deselect_numeric_notes by the numerical
// notes each engine gives its candidates; deselect_workspace_greater_than sets the largest
// plan workspace build_candidate accepts. And the graph's key.
#include <iterator>
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

std::string_view note_name(NumericalNote n) {
  static constexpr std::string_view kNames[] = {"TENSOR_CORE", "DOWN_CONVERT_INPUTS", "REDUCED_PRECISION_REDUCTION", "FFT",
                                                "NONDETERMINISTIC", "WINOGRAD", "WINOGRAD_TILE_4x4", "WINOGRAD_TILE_6x6",
                                                "WINOGRAD_TILE_13x13", "STRICT_NAN_PROP"};
  const auto i = static_cast<size_t>(n);
  return i < std::size(kNames) ? kNames[i] : "?";
}

template <class Note>
std::string names(const std::vector<Note>& notes) {
  std::string s;
  for (Note n : notes) s += (s.empty() ? "" : ", ") + std::string(note_name(n));
  return s;
}

Status need_plans(const GraphImpl& g, const char* fn) {
  if (!g.plans || g.stage < Stage::PLANS_CREATED)
    return {ErrorCode::INVALID_CALL_ORDER, std::string(fn) + ": call create_execution_plans first"};
  return {};
}

// A candidate's behaviour notes, as get_behavior_notes reads them for a whole plan.
std::set<BehaviorNote> behavior_notes_of(const PartitionPlans& pp, const Candidate& c, const Target* target) {
  std::set<BehaviorNote> notes;
  add_behavior_notes(pp, c, target, notes);
  // A candidate on a CUDA handle can be captured unless ref stages it through host memory.
  if (target && target->device().is_cuda() && c.engine_id != 0) notes.insert(BehaviorNote::SUPPORTS_CUDA_GRAPH_NATIVE_API);
  return notes;
}

std::set<NumericalNote> numerical_notes_of(const PartitionPlans& pp, const Candidate& c, const Target* target) {
  std::set<NumericalNote> notes;
  const Engine* e = engine_by_id(c.engine_id);
  if (e && target)
    for (NumericalNote n : e->numerical_notes(pp.partition, *target, c.knobs)) notes.insert(n);
  return notes;
}

// Drops the candidates whose notes (read by `notes_of`) `keep` refuses from every partition, with
// a verdict line each; the plans must be checked (and built) again.
template <class NotesOf, class Keep>
void filter_candidates(GraphImpl& g, const std::string& filter, NotesOf notes_of, Keep keep) {
  const std::optional<Target> target = g.handle ? std::optional<Target>(make_target(g, *g.handle)) : std::nullopt;
  for (PartitionPlans& pp : g.plans->parts) {
    std::vector<Candidate> kept;
    std::vector<std::shared_ptr<Plan>> built;
    for (size_t i = 0; i < pp.candidates.size(); ++i) {
      const Candidate& c = pp.candidates[i];
      if (keep(notes_of(pp, c, target ? &*target : nullptr))) {
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

// select_*: keep the candidates with every note; deselect_*: drop those with any.
template <class Note, class NotesOf>
Status filter_by_notes(GraphImpl& g, const char* fn, const std::vector<Note>& notes, bool select, NotesOf notes_of) {
  if (auto s = need_plans(g, fn); !s.ok()) return s;
  filter_candidates(g, std::string(fn) + "(" + names(notes) + ")", notes_of, [&](const std::set<Note>& has) {
    for (Note n : notes)
      if (has.count(n) != (select ? 1u : 0u)) return false;
    return true;
  });
  return {};
}

}  // namespace

Status Graph::select_behavior_notes(const std::vector<BehaviorNote>& notes) {
  return filter_by_notes(*impl_, "select_behavior_notes", notes, true, behavior_notes_of);
}
Status Graph::deselect_behavior_notes(const std::vector<BehaviorNote>& notes) {
  return filter_by_notes(*impl_, "deselect_behavior_notes", notes, false, behavior_notes_of);
}
Status Graph::select_numeric_notes(const std::vector<NumericalNote>& notes) {
  return filter_by_notes(*impl_, "select_numeric_notes", notes, true, numerical_notes_of);
}
Status Graph::deselect_numeric_notes(const std::vector<NumericalNote>& notes) {
  return filter_by_notes(*impl_, "deselect_numeric_notes", notes, false, numerical_notes_of);
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
