// Engines by id, as the cuDNN frontend offers them: get_engine_count, get_knobs_for_engine,
// create_execution_plan(engine, knobs) and the behaviour notes of plans. An engine id is a
// registry id; the plans made here join the same PlanSet that create_execution_plans fills, so
// check_support, build_plans, execute and serialize treat them alike.
#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

#include "core/no_throw.hpp"
#include "planning/plan_build.hpp"
#include "planning/plan_set.hpp"

namespace dnngraph {
namespace {

constexpr const char* kKernelCfg = "kernel_cfg";

Status need_lowered(const GraphImpl& g, const char* fn) {
  if (g.stage < Stage::LOWERED || !g.ir || !g.handle)
    return {ErrorCode::INVALID_CALL_ORDER, std::string(fn) + ": call build_operation_graph(handle) first"};
  return {};
}

int64_t engine_count() {
  int max_id = -1;
  for (const auto& reg : engine_registry()) max_id = std::max(max_id, reg.id);
  return max_id + 1;
}

std::string node_names(const Partition& p) {
  std::string s;
  for (size_t i = 0; i < p.nodes.size(); ++i) s += (i ? ", '" : "'") + p.node(i).name + "'";
  return s;
}

// The engine behind `engine_id`, and its knob settings for every partition of the graph as fused
// (before the planner's splits): each partition must be one the engine accepts.
struct EngineSurvey {
  const Engine* engine = nullptr;
  std::vector<Partition> parts;
  std::vector<std::vector<Knobs>> spaces;  // parallel to parts
};

Status survey(const GraphImpl& g, int64_t engine_id, const char* fn, EngineSurvey& out) {
  if (auto s = need_lowered(g, fn); !s.ok()) return s;
  const int64_t count = engine_count();
  out.engine = engine_id >= 0 && engine_id < count ? engine_by_id(static_cast<int>(engine_id)) : nullptr;
  if (!out.engine)
    return {ErrorCode::INVALID_VALUE, std::string(fn) + ": engine id " + std::to_string(engine_id) +
                                          " is not an engine's (ids run 0.." + std::to_string(count - 1) + ")"};
  const std::string who = std::string(fn) + ": engine " + std::to_string(engine_id) + " (" +
                          std::string(out.engine->name()) + ")";
  if (auto s = partition_graph(*g.ir, out.parts); !s.ok()) return s;
  const Target target = make_target(g, *g.handle);
  for (const auto& p : out.parts) {
    const Support ok = out.engine->check(p, target);
    if (!ok.ok)
      return {ErrorCode::GRAPH_NOT_SUPPORTED, who + " does not support the partition of nodes " + node_names(p) +
                                                  " on " + target.device().to_string() + ": " + ok.reason};
    out.spaces.push_back(out.engine->knob_space(p, target));
    if (out.spaces.back().empty())
      return {ErrorCode::GRAPH_NOT_SUPPORTED, who + " offers no knob setting for the partition of nodes " + node_names(p)};
  }
  return {};
}

bool has_own_knob(const EngineSurvey& s, const std::string& name) {
  for (const auto& space : s.spaces)
    for (const auto& k : space)
      if (k.count(name)) return true;
  return false;
}

EngineKnob make_knob(std::string name, const std::set<int64_t>& values) {
  EngineKnob k;
  k.name = std::move(name);
  k.values.assign(values.begin(), values.end());
  k.min_value = k.values.front();
  k.max_value = k.values.back();
  int64_t gap = 0;
  for (size_t i = 1; i < k.values.size(); ++i) gap = std::gcd(gap, k.values[i] - k.values[i - 1]);
  k.stride = gap > 0 ? gap : 1;
  return k;
}

// The setting of `space` that `knobs` picks (see create_execution_plan in graph.hpp).
Status pick_setting(const Engine& e, const std::vector<Knobs>& space, const Knobs& knobs, bool synthetic_cfg,
                    const std::string& who, Knobs& out) {
  Knobs wanted = knobs;
  std::vector<Knobs> choices = space;
  if (auto it = wanted.find(kKernelCfg); synthetic_cfg && it != wanted.end()) {
    if (it->second < 0 || it->second >= static_cast<int64_t>(space.size()))
      return {ErrorCode::INVALID_VALUE, who + ": knob kernel_cfg=" + std::to_string(it->second) + " is not in 0.." +
                                            std::to_string(space.size() - 1) + " (the engine's settings for this graph)"};
    choices = {space[static_cast<size_t>(it->second)]};
    wanted.erase(it);
  }
  auto holds = [&](const Knobs& k) {
    return std::all_of(wanted.begin(), wanted.end(), [&](const auto& kv) {
      auto f = k.find(kv.first);
      return f != k.end() && f->second == kv.second;
    });
  };
  for (const auto& k : choices)
    if (holds(k)) return out = k, Status{};
  out = choices.front();
  for (const auto& [name, value] : wanted) out[name] = value;
  if (auto s = e.check_knobs(out); !s.ok()) return {s.code(), who + ": " + s.message()};
  return {};
}

// The plan set the new plan joins: the current one when its partitions are the survey's, else a
// new one (none yet). Plans that create_execution_plans split differently cannot be joined.
Status plan_set_for(GraphImpl& g, EngineSurvey& s, const std::string& who, std::shared_ptr<PlanSet>& out) {
  if (g.plans && g.stage >= Stage::PLANS_CREATED) {
    bool same = g.plans->parts.size() == s.parts.size();
    for (size_t i = 0; same && i < s.parts.size(); ++i) same = g.plans->parts[i].partition.nodes == s.parts[i].nodes;
    if (!same)
      return {ErrorCode::INVALID_VALUE, who + ": the plans made by create_execution_plans split the graph into " +
                                            std::to_string(g.plans->parts.size()) + " partitions, which one engine "
                                            "cannot join; call create_execution_plan before create_execution_plans"};
    out = g.plans;
    return {};
  }
  out = std::make_shared<PlanSet>();
  // serialize() stores heuristic modes and deserialize re-plans with them: FALLBACK lists every
  // engine's settings, so the plan chosen here is found again.
  out->modes = {HeurMode::FALLBACK};
  for (auto& p : s.parts) {
    PartitionPlans pp;
    pp.partition = std::move(p);
    out->parts.push_back(std::move(pp));
  }
  layout_intermediates(*out, *g.ir);
  return {};
}

}  // namespace

Status Graph::get_engine_count(int64_t& count) const {
  if (auto s = need_lowered(*impl_, "get_engine_count"); !s.ok()) return s;
  count = engine_count();
  return {};
}

Status Graph::get_knobs_for_engine(int64_t engine_id, std::vector<EngineKnob>& knobs) const {
  return no_throw(ErrorCode::INTERNAL_ERROR, "get_knobs_for_engine", [&]() -> Status {
    EngineSurvey s;
    if (auto st = survey(*impl_, engine_id, "get_knobs_for_engine", s); !st.ok()) return st;
    std::map<std::string, std::set<int64_t>> values;
    size_t settings = 0;
    for (const auto& space : s.spaces) {
      settings = std::max(settings, space.size());
      for (const auto& k : space)
        for (const auto& [name, v] : k) values[name].insert(v);
    }
    knobs.clear();
    if (!has_own_knob(s, kKernelCfg)) {
      std::set<int64_t> index;
      for (size_t i = 0; i < settings; ++i) index.insert(static_cast<int64_t>(i));
      knobs.push_back(make_knob(kKernelCfg, index));
    }
    for (const auto& [name, v] : values) knobs.push_back(make_knob(name, v));
    return {};
  });
}

Status Graph::create_execution_plan(int64_t engine_id, const std::map<std::string, int64_t>& knobs) {
  return no_throw(ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, "create_execution_plan", [&]() -> Status {
    GraphImpl& g = *impl_;
    EngineSurvey s;
    if (auto st = survey(g, engine_id, "create_execution_plan", s); !st.ok()) return st;
    const std::string who = "create_execution_plan: engine " + std::to_string(engine_id) + " (" +
                            std::string(s.engine->name()) + ")";
    const bool synthetic_cfg = !has_own_knob(s, kKernelCfg);
    std::vector<Knobs> picked(s.parts.size());
    for (size_t i = 0; i < s.parts.size(); ++i)
      if (auto st = pick_setting(*s.engine, s.spaces[i], knobs, synthetic_cfg, who, picked[i]); !st.ok()) return st;
    std::shared_ptr<PlanSet> ps;
    if (auto st = plan_set_for(g, s, who, ps); !st.ok()) return st;
    // Every partition gets the candidate at the same index, so plan index i means this plan.
    const int64_t index = ps->plan_count();
    for (int64_t i = 0; i < index; ++i) {
      bool same = true;
      for (size_t p = 0; same && p < ps->parts.size(); ++p) {
        const Candidate& c = ps->parts[p].candidates[ps->parts[p].index_for(i)];
        same = c.engine_id == engine_id && c.knobs == picked[p];
      }
      if (same) return Status{};  // already a plan of the list
    }
    const Target target = make_target(g, *g.handle);
    for (size_t p = 0; p < ps->parts.size(); ++p) {
      PartitionPlans& pp = ps->parts[p];
      // A partition with fewer candidates repeats its last one up to the new index.
      while (!pp.candidates.empty() && static_cast<int64_t>(pp.candidates.size()) < index) {
        pp.candidates.push_back(pp.candidates.back());
        pp.built.push_back(pp.built.back());
      }
      const Candidate c{static_cast<int>(engine_id), picked[p],
                        s.engine->estimate_seconds(pp.partition, target, picked[p]), -1};
      pp.candidates.push_back(c);
      pp.built.push_back(nullptr);
      pp.verdicts.push_back(std::string(s.engine->name()) + ": plan " + std::to_string(index) +
                            " added by create_execution_plan");
    }
    g.plans = std::move(ps);
    g.stage = Stage::PLANS_CREATED;
    return {};
  });
}

void add_behavior_notes(const PartitionPlans& pp, const Candidate& c, const Target* target, std::set<BehaviorNote>& found) {
  const Engine* e = engine_by_id(c.engine_id);
  if (!e) return;
  // Own CUDA engines generate their kernels' source per graph and compile it with NVRTC (a kernel
  // cache or the library's ahead-of-time kernels may serve the binary: still runtime compilation,
  // as cuDNN's note means it); cuBLASLt's kernels are its library's.
  if (e->name().rfind("cuda_", 0) == 0) found.insert(BehaviorNote::RUNTIME_COMPILATION);
  if (e->name() == "cublaslt") found.insert(BehaviorNote::CUBLASLT_DEPENDENCY);
  if (target)
    for (BehaviorNote n : e->behavior_notes(pp.partition, *target, c.knobs)) found.insert(n);
}

namespace {

// The notes of running candidate pick(pp) of every partition.
template <class Pick>
std::vector<BehaviorNote> notes_of(const GraphImpl& g, Pick pick) {
  std::set<BehaviorNote> found;
  // Stream capture records any plan that enqueues its work on the handle's stream; ref stages
  // through host memory, so a plan with a ref partition is not offered as capturable.
  bool capturable = g.handle && g.handle->device().is_cuda();
  std::optional<Target> target;
  if (g.handle) target.emplace(make_target(g, *g.handle));
  for (const auto& pp : g.plans->parts) {
    const Candidate& c = pp.candidates[pick(pp)];
    capturable = capturable && c.engine_id != 0;
    add_behavior_notes(pp, c, target ? &*target : nullptr, found);
  }
  if (capturable) found.insert(BehaviorNote::SUPPORTS_CUDA_GRAPH_NATIVE_API);
  return {found.begin(), found.end()};
}

}  // namespace

Status Graph::get_behavior_notes_for_plan_at_index(int64_t index, std::vector<BehaviorNote>& notes) const {
  const GraphImpl& g = *impl_;
  if (!g.plans || g.stage < Stage::PLANS_CREATED)
    return {ErrorCode::INVALID_CALL_ORDER, "get_behavior_notes_for_plan_at_index: call create_execution_plans first"};
  if (index < 0 || index >= g.plans->plan_count())
    return {ErrorCode::INVALID_VALUE, "get_behavior_notes_for_plan_at_index: plan index " + std::to_string(index) +
                                          " is outside [0, " + std::to_string(g.plans->plan_count()) + ")"};
  notes = notes_of(g, [&](const PartitionPlans& pp) { return pp.index_for(index); });
  return {};
}

Status Graph::get_behavior_notes(std::vector<BehaviorNote>& notes) const {
  const GraphImpl& g = *impl_;
  if (!g.plans || g.stage < Stage::PLANS_BUILT)
    return {ErrorCode::INVALID_CALL_ORDER, "get_behavior_notes: no plan is chosen yet: call build_plans first (or "
                                           "ask get_behavior_notes_for_plan_at_index about a plan not built)"};
  // The chosen candidates may differ by partition (after autotune): these are what execute runs.
  notes = notes_of(g, [](const PartitionPlans& pp) { return static_cast<size_t>(pp.chosen); });
  return {};
}

}  // namespace dnngraph
