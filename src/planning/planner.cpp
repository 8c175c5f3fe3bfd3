// create_execution_plans, check_support, build_plans: partitions -> ranked candidates -> plans.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/log.hpp"
#include "core/no_throw.hpp"
#include "planning/build_limits.hpp"
#include "planning/heuristics.hpp"
#include "planning/kernel_cache.hpp"
#include "planning/parallel_build.hpp"
#include "planning/plan_build.hpp"
#include "planning/shipped_kernels.hpp"

namespace dnngraph {

constexpr int kRefEngineId = 0;  // registry id of `ref` (ids are append-only)

std::string Candidate::label() const {
  const Engine* e = engine_by_id(engine_id);
  std::string s(e ? e->name() : "unknown");
  if (!knobs.empty()) s += "[" + knobs_to_string(knobs) + "]";
  // Plain loops in double, staged through host memory on a GPU: the tutorial conv takes 21-26 s a
  // run on the H200. Whoever reads a plan list (explain, plan names, the CLI) is told so.
  if (engine_id == kRefEngineId) s += " (reference, not for speed)";
  return s;
}

int64_t PlanSet::plan_count() const {
  size_t n = 0;
  for (const auto& p : parts) {
    if (p.candidates.empty()) return 0;  // a partition no engine runs: no plan runs the graph
    n = std::max(n, p.candidates.size());
  }
  return static_cast<int64_t>(n);
}

int64_t PlanSet::workspace_bytes() const {
  int64_t engine_ws = 0;
  for (const auto& p : parts)
    for (const auto& plan : p.built)
      if (plan) engine_ws = std::max(engine_ws, plan->workspace_size());
  return intermediates_bytes + engine_ws;
}

Target make_target(const GraphImpl& g, const Handle& handle) {
  Target t;
  t.handle = &impl_of(handle);
  t.dynamic_shapes = g.dynamic_shapes;
  t.kernel_cache = g.kernel_cache ? &impl_of(*g.kernel_cache) : nullptr;
  if (g.plans) t.heur_modes = g.plans->modes;
  return t;
}

namespace {

bool engine_allowed(const GraphImpl& g, std::string_view name) {
  auto listed = [&](const std::vector<std::string>& v) { return std::find(v.begin(), v.end(), name) != v.end(); };
  return (g.selected_engines.empty() || listed(g.selected_engines)) && !listed(g.deselected_engines);
}

// Asks every engine about the partition; fills verdicts and unordered candidates.
void survey_engines(const GraphImpl& g, PartitionPlans& pp, const Target& target) {
  pp.candidates.clear();
  pp.verdicts.clear();
  for (const auto& reg : engine_registry()) {
    if (!engine_allowed(g, reg.engine->name())) {
      pp.verdicts.push_back(std::string(reg.engine->name()) + ": rejected: deselected by the graph's engine filter");
      continue;
    }
    const Support s = reg.engine->check(pp.partition, target);
    if (!s.ok) {
      pp.verdicts.push_back(std::string(reg.engine->name()) + ": rejected: " + s.reason);
      DG_LOG(INFO) << "partition " << pp.partition.pattern << ": " << reg.engine->name() << " rejected: " << s.reason;
      continue;
    }
    for (const Knobs& k : reg.engine->knob_space(pp.partition, target)) {
      Candidate c{reg.id, k, reg.engine->estimate_seconds(pp.partition, target, k), -1};
      pp.candidates.push_back(c);
    }
    pp.verdicts.push_back(std::string(reg.engine->name()) + ": accepted");
  }
}

bool only_ref(const PartitionPlans& pp) {
  return std::all_of(pp.candidates.begin(), pp.candidates.end(),
                     [](const Candidate& c) { return c.engine_id == kRefEngineId; });
}

// A fused partition that only the reference engine (or none) accepts is replaced by `pieces` when
// every piece has an engine and one of them is faster than ref (or the fused form had none).
bool split_if_better(const GraphImpl& g, const PartitionPlans& fused, std::vector<Partition> pieces,
                     const Target& target, std::vector<PartitionPlans>& out) {
  if (pieces.empty()) return false;
  std::vector<PartitionPlans> surveyed;
  bool better = false;
  for (auto& q : pieces) {
    PartitionPlans qp;
    qp.partition = std::move(q);
    survey_engines(g, qp, target);
    if (qp.candidates.empty()) return false;
    better |= !only_ref(qp);
    surveyed.push_back(std::move(qp));
  }
  if (!better && !fused.candidates.empty()) return false;
  // Keep the verdicts on the fused form, so explain() says why it was split.
  for (const auto& v : fused.verdicts)
    surveyed.front().verdicts.insert(surveyed.front().verdicts.begin(), "fused " + fused.partition.pattern + ": " + v);
  for (auto& q : surveyed) out.push_back(std::move(q));
  return true;
}

// A pointwise/reduction partition longer than kMaxPointwiseNodesOnGpu on a CUDA target, as runs
// of that many nodes in topological order (each run reads only earlier runs and outside tensors);
// otherwise the partition itself.
std::vector<Partition> bound_pointwise_length(Partition p, const Target& target) {
  const size_t n = p.nodes.size(), max = kMaxPointwiseNodesOnGpu;
  if (p.anchor >= 0 || n <= max || !target.device().is_cuda()) return {std::move(p)};
  std::vector<Partition> runs;
  const size_t count = (n + max - 1) / max;
  for (size_t r = 0; r < count; ++r) {
    Partition q;
    q.graph = p.graph;
    q.nodes.assign(p.nodes.begin() + static_cast<std::ptrdiff_t>(r * max),
                   p.nodes.begin() + static_cast<std::ptrdiff_t>(std::min(n, (r + 1) * max)));
    q.pattern = p.pattern + "[" + std::to_string(r + 1) + "/" + std::to_string(count) + "]";
    q.anchor = -1;
    finish_partition(q);
    runs.push_back(std::move(q));
  }
  return runs;
}

}  // namespace

Status plan_partitions(const GraphImpl& g, const Target& for_any_modes, const std::vector<HeurMode>& modes,
                       std::shared_ptr<PlanSet>& out) {
  Target target = for_any_modes;
  target.heur_modes = modes;
  std::vector<Partition> found, fused;
  if (auto s = partition_graph(*g.ir, found); !s.ok()) return s;
  for (auto& part : found)
    for (auto& q : bound_pointwise_length(std::move(part), target)) fused.push_back(std::move(q));
  auto ps = std::make_shared<PlanSet>();
  ps->modes = modes;
  for (auto& part : fused) {
    PartitionPlans pp;
    pp.partition = std::move(part);
    survey_engines(g, pp, target);
    if (pp.partition.nodes.size() > 1 && only_ref(pp) &&
        (split_if_better(g, pp, split_anchor_from_epilogue(pp.partition), target, ps->parts) ||
         split_if_better(g, pp, split_per_node(pp.partition), target, ps->parts)))
      continue;
    ps->parts.push_back(std::move(pp));
  }
  const RecordedWinners recorded = recorded_winners(*g.ir, target, modes);
  for (auto& pp : ps->parts) {
    order_candidates(pp, target, recorded, modes);
    pp.built.assign(pp.candidates.size(), nullptr);
  }
  layout_intermediates(*ps, *g.ir);
  out = std::move(ps);
  return {};
}

namespace {
// A misspelt engine in select_engines/deselect_engines would otherwise leave every engine
// "deselected" (or none), with nothing saying which name was wrong.
Status check_engine_names(const GraphImpl& g) {
  for (const auto* list : {&g.selected_engines, &g.deselected_engines})
    for (const auto& name : *list) {
      if (engine_id_by_name(name) >= 0) continue;
      std::string known;
      for (const auto& reg : engine_registry()) known += (known.empty() ? "" : ", ") + std::string(reg.engine->name());
      return {ErrorCode::INVALID_VALUE, std::string(list == &g.selected_engines ? "select_engines" : "deselect_engines") +
                                            ": no engine is named '" + name + "'; the engines are " + known};
    }
  return {};
}
}  // namespace

Status Graph::create_execution_plans(const std::vector<HeurMode>& modes) {
  return no_throw(ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, "create_execution_plans", [&]() -> Status {
    GraphImpl& g = *impl_;
    if (g.stage < Stage::LOWERED || !g.handle)
      return {ErrorCode::INVALID_CALL_ORDER, "create_execution_plans: call build_operation_graph(handle) first"};
    if (modes.empty()) return {ErrorCode::INVALID_VALUE, "create_execution_plans: no heuristic mode given"};
    if (auto s = check_engine_names(g); !s.ok()) return s;
    std::shared_ptr<PlanSet> ps;
    if (auto s = plan_partitions(g, make_target(g, *g.handle), modes, ps); !s.ok()) return s;
    g.plans = std::move(ps);
    g.stage = Stage::PLANS_CREATED;
    return {};
  });
}

Status Graph::check_support(const Handle& handle) {
  GraphImpl& g = *impl_;
  if (!handle.status().ok()) return handle.status();
  if (g.stage < Stage::PLANS_CREATED || !g.plans)
    return {ErrorCode::INVALID_CALL_ORDER, "check_support: call create_execution_plans first"};
  for (const auto& pp : g.plans->parts) {
    if (!pp.candidates.empty()) continue;
    std::string why;
    for (const auto& v : pp.verdicts) why += "\n  " + v;
    std::string nodes;
    for (size_t i = 0; i < pp.partition.nodes.size(); ++i) nodes += (i ? ", '" : "'") + pp.partition.node(i).name + "'";
    return {ErrorCode::GRAPH_NOT_SUPPORTED,
            "no engine supports the partition of nodes " + nodes + " on " + handle.device().to_string() + ":" + why};
  }
  g.stage = Stage::SUPPORT_CHECKED;
  return {};
}

namespace {
// `max_workspace` >= 0: deselect_workspace_greater_than's limit on the plan's workspace.
Status build_candidate(PartitionPlans& pp, size_t i, const Target& target, int64_t max_workspace) {
  if (pp.built[i]) return {};
  const Candidate& c = pp.candidates[i];
  std::unique_ptr<Plan> plan;
  // An engine that throws (an allocation too large for this machine) fails this candidate only.
  const Status built = no_throw(ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, c.label(),
                                [&] {
                                  const Engine& e = *engine_by_id(c.engine_id);
                                  return e.build(pp.partition, shipped_kernel_target(e, pp.partition, target, c.knobs),
                                                 c.knobs, plan);
                                });
  if (const Status& s = built; !s.ok()) {
    DG_LOG(INFO) << "building " << c.label() << " failed: " << s.to_string();
    return s;
  }
  if (max_workspace >= 0 && plan->workspace_size() > max_workspace)
    return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
            c.label() + " needs " + std::to_string(plan->workspace_size()) + " bytes of workspace, more than the " +
                std::to_string(max_workspace) + " of deselect_workspace_greater_than"};
  pp.built[i] = std::move(plan);
  return {};
}
}  // namespace

void build_candidates(PlanSet& ps, const Target& target, const std::vector<CandidateRef>& which,
                      std::vector<Status>& status) {
  status.assign(which.size(), Status{});
  std::vector<size_t> together, alone;
  for (size_t k = 0; k < which.size(); ++k) {
    const Candidate& c = ps.parts[which[k].first].candidates[which[k].second];
    (engine_by_id(c.engine_id)->builds_concurrently() ? together : alone).push_back(k);
  }
  auto build = [&](size_t k) { status[k] = build_candidate(ps.parts[which[k].first], which[k].second, target, ps.max_plan_workspace); };
  // build_candidate throws nothing (no_throw); each task writes only its own slots.
  run_concurrently(together.size(), [&](size_t j) { build(together[j]); });
  for (size_t k : alone) build(k);
}

Status build_partitions(PlanSet& ps, const Target& target, BuildPlanPolicy policy) {
  const size_t n = ps.parts.size();
  std::vector<Status> last(n);
  std::vector<bool> resolved(n, false);
  std::vector<size_t> next(n, 0);  // HEURISTICS_CHOICE: the candidate each partition tries next
  for (;;) {
    std::vector<CandidateRef> which;
    for (size_t p = 0; p < n; ++p) {
      const size_t count = ps.parts[p].candidates.size();
      if (resolved[p] || next[p] >= count) continue;
      const size_t end = policy == BuildPlanPolicy::ALL ? count : next[p] + 1;
      for (size_t i = next[p]; i < end; ++i) which.push_back({p, i});
      next[p] = end;
    }
    if (which.empty()) break;
    std::vector<Status> status;
    build_candidates(ps, target, which, status);
    // In candidate order per partition: the first that built is chosen, as a serial build chose.
    for (size_t k = 0; k < which.size(); ++k) {
      const auto [p, i] = which[k];
      last[p] = status[k];
      if (status[k].ok() && !resolved[p]) {
        resolved[p] = true;
        ps.parts[p].chosen = static_cast<int>(i);
      }
    }
  }
  for (size_t p = 0; p < n; ++p)
    if (!resolved[p])
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, "no candidate of partition '" +
                                                                   ps.parts[p].partition.pattern +
                                                                   "' could be built; last error: " + last[p].to_string()};
  return {};
}

Status Graph::build_plans(const Handle& handle, BuildPlanPolicy policy) {
  GraphImpl& g = *impl_;
  if (!handle.status().ok()) return handle.status();
  if (g.stage < Stage::SUPPORT_CHECKED) {
    if (auto s = check_support(handle); !s.ok()) return s;
  }
  if (auto s = build_partitions(*g.plans, make_target(g, handle), policy); !s.ok()) return s;
  g.stage = Stage::PLANS_BUILT;
  return {};
}

Status Graph::build_plan_at_index(const Handle& handle, int64_t index) {
  GraphImpl& g = *impl_;
  if (g.stage < Stage::SUPPORT_CHECKED) {
    if (auto s = check_support(handle); !s.ok()) return s;
  }
  if (index < 0 || index >= g.plans->plan_count())
    return {ErrorCode::INVALID_VALUE, "build_plan_at_index: index " + std::to_string(index) + " is outside [0, " +
                                          std::to_string(g.plans->plan_count()) + ")"};
  const Target target = make_target(g, handle);
  std::vector<CandidateRef> which;
  for (size_t p = 0; p < g.plans->parts.size(); ++p) which.push_back({p, g.plans->parts[p].index_for(index)});
  std::vector<Status> status;
  build_candidates(*g.plans, target, which, status);
  for (const Status& s : status)
    if (!s.ok()) return s;
  if (g.stage < Stage::PLANS_BUILT) {
    for (auto& pp : g.plans->parts) pp.chosen = static_cast<int>(pp.index_for(index));
    g.stage = Stage::PLANS_BUILT;
  }
  return {};
}

int64_t Graph::get_execution_plan_count() const { return impl_->plans ? impl_->plans->plan_count() : 0; }

Status Graph::get_plan_name_at_index(int64_t index, std::string& name) const {
  if (!impl_->plans) return {ErrorCode::INVALID_CALL_ORDER, "get_plan_name_at_index: no plans yet"};
  if (index < 0 || index >= impl_->plans->plan_count())
    return {ErrorCode::INVALID_VALUE, "plan index " + std::to_string(index) + " is out of range"};
  name.clear();
  for (const auto& pp : impl_->plans->parts) name += (name.empty() ? "" : " + ") + pp.candidates[pp.index_for(index)].label();
  return {};
}

Status Graph::get_workspace_size(int64_t& bytes) const {
  if (!impl_->plans || impl_->stage < Stage::PLANS_BUILT)
    return {ErrorCode::INVALID_CALL_ORDER, "get_workspace_size: call build_plans first"};
  bytes = impl_->plans->workspace_bytes();
  return {};
}

Status Graph::get_workspace_size_plan_at_index(int64_t index, int64_t& bytes) const {
  if (!impl_->plans) return {ErrorCode::INVALID_CALL_ORDER, "get_workspace_size_plan_at_index: no plans yet"};
  if (index < 0 || index >= impl_->plans->plan_count())
    return {ErrorCode::INVALID_VALUE, "plan index " + std::to_string(index) + " is out of range"};
  bytes = impl_->plans->intermediates_bytes;
  int64_t engine_ws = 0;
  for (const auto& pp : impl_->plans->parts) {
    const auto& plan = pp.built[pp.index_for(index)];
    if (!plan) return {ErrorCode::INVALID_CALL_ORDER, "plan " + std::to_string(index) + " is not built"};
    engine_ws = std::max(engine_ws, plan->workspace_size());
  }
  bytes += engine_ws;
  return {};
}

std::string Graph::explain() const {
  std::ostringstream os;
  if (!impl_->plans) return "no plans: call create_execution_plans first\n";
  const auto& parts = impl_->plans->parts;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& pp = parts[i];
    os << "partition " << i << " (" << pp.partition.pattern << "):";
    for (size_t k = 0; k < pp.partition.nodes.size(); ++k) os << (k ? ", " : " ") << pp.partition.node(k).name;
    os << "\n";
    for (const auto& v : pp.verdicts) os << "  " << v << "\n";
    for (size_t k = 0; k < pp.candidates.size(); ++k) {
      const auto& c = pp.candidates[k];
      os << "  plan " << k << ": " << c.label() << "  estimate " << c.estimate_s * 1e3 << " ms";
      if (c.calibration != 1.0) os << " x " << c.calibration << " measured ratio = " << c.ranked_s() * 1e3 << " ms";
      if (c.measured_s >= 0) os << "  measured " << c.measured_s * 1e3 << " ms";
      if (c.from_tuning_db) os << " (the tuning DB's record for this graph and device)";
      if (c.ready_first)
        os << " (first: within " << std::lround((kFirstBuildTie - 1) * 100) << "% or "
           << kFirstBuildTieSeconds * 1e6 << " us of the best estimate, and its build compiles nothing)";
      if (static_cast<int>(k) == pp.chosen) os << "  (chosen)";
      os << "\n";
    }
  }
  return os.str();
}

}  // namespace dnngraph
