#include "engines/cudnn/op_graph.hpp"

#include <algorithm>

namespace dnngraph::cudnn {
namespace {

constexpr const char* kKnobPrefix = "k_";

// Reads a descriptor-valued attribute into descriptors created for it (cuDNN fills them in).
Status get_descriptors(const CudnnApi& api, const Descriptor& from, Attr a, Desc type, int64_t max,
                       std::vector<std::shared_ptr<Descriptor>>& out) {
  out.clear();
  std::vector<BackendDescriptor> raw;
  for (int64_t i = 0; i < max; ++i) {
    out.push_back(std::make_shared<Descriptor>(api, type));
    if (!out.back()->status().ok()) return out.back()->status();
    raw.push_back(out.back()->get());
  }
  int64_t got = 0;
  if (cudnnStatus_t s = api.cudnnBackendGetAttribute(from.get(), static_cast<int>(a),
                                                     static_cast<int>(AttrType::BACKEND_DESCRIPTOR), max, &got,
                                                     raw.data());
      s != STATUS_SUCCESS)
    return cudnn_error(api, s, "cudnnBackendGetAttribute(" + desc_name(from.type()) + ", " + attr_name(a) + ")");
  out.resize(static_cast<size_t>(std::clamp<int64_t>(got, 0, max)));
  return {};
}

// Enumerated notes (behavior or numerical) of an engine; empty when cuDNN reports none.
std::vector<int> get_notes(const CudnnApi& api, const Descriptor& engine, Attr a, AttrType t, int max) {
  std::vector<int> notes(static_cast<size_t>(max), -1);
  int64_t got = 0;
  if (api.cudnnBackendGetAttribute(engine.get(), static_cast<int>(a), static_cast<int>(t), max, &got, notes.data()) !=
      STATUS_SUCCESS)
    return {};
  notes.resize(static_cast<size_t>(std::clamp<int64_t>(got, 0, max)));
  return notes;
}

Status read_config(const CudnnApi& api, const Descriptor& cfg, EngineConfig& c) {
  std::vector<std::shared_ptr<Descriptor>> engine;
  if (auto s = get_descriptors(api, cfg, Attr::ENGINECFG_ENGINE, Desc::ENGINE, 1, engine); !s.ok()) return s;
  if (engine.empty()) return {ErrorCode::INTERNAL_ERROR, "cuDNN: an engine config without an engine"};
  if (auto s = engine[0]->get_i64(Attr::ENGINE_GLOBAL_INDEX, c.engine); !s.ok()) return s;
  std::vector<std::shared_ptr<Descriptor>> choices;
  if (auto s = get_descriptors(api, cfg, Attr::ENGINECFG_KNOB_CHOICES, Desc::KNOB_CHOICE,
                               static_cast<int64_t>(KnobType::COUNTS), choices);
      !s.ok())
    return s;
  c.knobs.clear();
  for (const auto& ch : choices) {
    int type = -1;
    int64_t n = 0, value = 0;
    if (cudnnStatus_t s = api.cudnnBackendGetAttribute(ch->get(), static_cast<int>(Attr::KNOB_CHOICE_KNOB_TYPE),
                                                       static_cast<int>(AttrType::KNOB_TYPE), 1, &n, &type);
        s != STATUS_SUCCESS)
      return cudnn_error(api, s, "reading a knob choice's type");
    if (auto s = ch->get_i64(Attr::KNOB_CHOICE_KNOB_VALUE, value); !s.ok()) return s;
    c.knobs.emplace_back(type, value);
  }
  std::sort(c.knobs.begin(), c.knobs.end());
  for (int note : get_notes(api, *engine[0], Attr::ENGINE_BEHAVIOR_NOTE, AttrType::BEHAVIOR_NOTE,
                            static_cast<int>(BehaviorNote::TYPE_COUNT))) {
    c.runtime_compiled |= note == static_cast<int>(BehaviorNote::RUNTIME_COMPILATION);
    c.cuda_graph_native |= note == static_cast<int>(BehaviorNote::SUPPORTS_CUDA_GRAPH_NATIVE_API);
    c.needs_reorder |= note == static_cast<int>(BehaviorNote::REQUIRES_FILTER_INT8x32_REORDER) ||
                       note == static_cast<int>(BehaviorNote::REQUIRES_BIAS_INT8x32_REORDER);
  }
  for (int note : get_notes(api, *engine[0], Attr::ENGINE_NUMERICAL_NOTE, AttrType::NUMERICAL_NOTE,
                            static_cast<int>(NumericalNote::TYPE_COUNT))) {
    c.nondeterministic |= note == static_cast<int>(NumericalNote::NONDETERMINISTIC);
    c.tensor_core |= note == static_cast<int>(NumericalNote::TENSOR_CORE);
    c.down_convert |= note == static_cast<int>(NumericalNote::DOWN_CONVERT_INPUTS);
    if (note >= 0 && note < static_cast<int>(NumericalNote::TYPE_COUNT)) c.numerical_notes.push_back(note);
  }
  return {};
}

bool same_config(const EngineConfig& a, const EngineConfig& b) { return a.engine == b.engine && a.knobs == b.knobs; }

int knob_type_by_name(const std::string& name) {
  for (int t = 0; t < static_cast<int>(KnobType::COUNTS); ++t)
    if (knob_type_name(t) == name) return t;
  if (name.rfind("knob", 0) == 0 && name.size() > 4 &&
      std::all_of(name.begin() + 4, name.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return std::stoi(name.substr(4));
  return -1;
}

}  // namespace

Status build_op_graph(const CudnnApi& api, cudnnHandle_t handle, const Partition& p, bool dynamic, OpGraph& out) {
  if (auto s = lower_partition(api, p, out.lowered); !s.ok()) return s;
  out.dynamic = dynamic;
  out.graph = std::make_shared<Descriptor>(api, Desc::OPERATIONGRAPH);
  out.graph->set_handle(Attr::OPERATIONGRAPH_HANDLE, handle).set_descs(Attr::OPERATIONGRAPH_OPS, out.lowered.ops);
  if (dynamic) out.graph->set_bool(Attr::OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED, true);
  return out.graph->finalize();
}

Knobs to_knobs(const EngineConfig& c) {
  Knobs k{{kEngineKnob, c.engine}};
  for (const auto& [type, value] : c.knobs) k[kKnobPrefix + knob_type_name(type)] = value;
  return k;
}

bool from_knobs(const Knobs& k, EngineConfig& c, std::string& why) {
  c = EngineConfig{};
  auto it = k.find(kEngineKnob);
  if (it == k.end()) {
    why = "the knobs name no cuDNN engine ('" + std::string(kEngineKnob) + "')";
    return false;
  }
  c.engine = it->second;
  for (const auto& [name, value] : k) {
    if (name == kEngineKnob) continue;
    const int type = name.rfind(kKnobPrefix, 0) == 0 ? knob_type_by_name(name.substr(2)) : -1;
    if (type < 0) {
      why = "knob '" + name + "' is no cuDNN knob";
      return false;
    }
    c.knobs.emplace_back(type, value);
  }
  std::sort(c.knobs.begin(), c.knobs.end());
  return true;
}

Status heuristic_configs(const CudnnApi& api, const Descriptor& graph, HeurMode mode, std::vector<EngineConfig>& out) {
  Descriptor heur(api, Desc::ENGINEHEUR);
  heur.set_desc(Attr::ENGINEHEUR_OPERATION_GRAPH, graph.get())
      .set_enum(Attr::ENGINEHEUR_MODE, AttrType::HEUR_MODE, static_cast<int>(mode));
  if (auto s = heur.finalize(); !s.ok()) return s;
  int64_t count = 0;
  if (cudnnStatus_t s = api.cudnnBackendGetAttribute(heur.get(), static_cast<int>(Attr::ENGINEHEUR_RESULTS),
                                                     static_cast<int>(AttrType::BACKEND_DESCRIPTOR), 0, &count, nullptr);
      s != STATUS_SUCCESS)
    return cudnn_error(api, s, "counting the heuristics' results");
  std::vector<std::shared_ptr<Descriptor>> cfgs;
  if (auto s = get_descriptors(api, heur, Attr::ENGINEHEUR_RESULTS, Desc::ENGINECFG, count, cfgs); !s.ok()) return s;
  for (const auto& cfg : cfgs) {
    EngineConfig c;
    if (!read_config(api, *cfg, c).ok()) continue;  // a result cuDNN cannot describe is no candidate
    if (std::none_of(out.begin(), out.end(), [&](const EngineConfig& o) { return same_config(o, c); }))
      out.push_back(std::move(c));
  }
  return {};
}

Status make_plan(const CudnnApi& api, cudnnHandle_t handle, const Descriptor& graph, const EngineConfig& c,
                 BackendDescriptor kernel_cache, PlanDescriptors& out) {
  auto engine = std::make_shared<Descriptor>(api, Desc::ENGINE);
  engine->set_desc(Attr::ENGINE_OPERATION_GRAPH, graph.get()).set_i64(Attr::ENGINE_GLOBAL_INDEX, c.engine);
  if (auto s = engine->finalize(); !s.ok()) return s;
  out.parts.push_back(engine);
  std::vector<BackendDescriptor> choices;
  for (const auto& [type, value] : c.knobs) {
    auto ch = std::make_shared<Descriptor>(api, Desc::KNOB_CHOICE);
    ch->set_enum(Attr::KNOB_CHOICE_KNOB_TYPE, AttrType::KNOB_TYPE, type).set_i64(Attr::KNOB_CHOICE_KNOB_VALUE, value);
    if (auto s = ch->finalize(); !s.ok()) return s;
    choices.push_back(ch->get());
    out.parts.push_back(ch);
  }
  auto cfg = std::make_shared<Descriptor>(api, Desc::ENGINECFG);
  cfg->set_desc(Attr::ENGINECFG_ENGINE, engine->get());
  if (!choices.empty()) cfg->set_descs(Attr::ENGINECFG_KNOB_CHOICES, choices);
  if (auto s = cfg->finalize(); !s.ok()) return s;
  out.parts.push_back(cfg);
  out.plan = std::make_shared<Descriptor>(api, Desc::EXECUTION_PLAN);
  out.plan->set_handle(Attr::EXECUTION_PLAN_HANDLE, handle).set_desc(Attr::EXECUTION_PLAN_ENGINE_CONFIG, cfg->get());
  if (kernel_cache) out.plan->set_desc(Attr::EXECUTION_PLAN_KERNEL_CACHE, kernel_cache);
  if (auto s = out.plan->finalize(); !s.ok()) return s;
  return out.plan->get_i64(Attr::EXECUTION_PLAN_WORKSPACE_SIZE, out.workspace);
}

Status plan_to_json(const CudnnApi& api, const Descriptor& plan, std::string& json) {
  const int attr = static_cast<int>(Attr::EXECUTION_PLAN_JSON_REPRESENTATION), type = static_cast<int>(AttrType::CHAR);
  int64_t size = 0;
  if (cudnnStatus_t s = api.cudnnBackendGetAttribute(plan.get(), attr, type, 0, &size, nullptr); s != STATUS_SUCCESS)
    return cudnn_error(api, s, "sizing the plan's JSON representation", ErrorCode::SERIALIZATION_FAILED);
  std::string buf(static_cast<size_t>(std::max<int64_t>(size, 0)), '\0');
  if (cudnnStatus_t s = api.cudnnBackendGetAttribute(plan.get(), attr, type, size, &size, buf.data());
      s != STATUS_SUCCESS)
    return cudnn_error(api, s, "reading the plan's JSON representation", ErrorCode::SERIALIZATION_FAILED);
  buf.resize(static_cast<size_t>(std::clamp<int64_t>(size, 0, static_cast<int64_t>(buf.size()))));
  json = std::move(buf);
  return {};
}

Status plan_from_json(const CudnnApi& api, cudnnHandle_t handle, const std::string& json, PlanDescriptors& out) {
  out.plan = std::make_shared<Descriptor>(api, Desc::EXECUTION_PLAN);
  out.plan->set_handle(Attr::EXECUTION_PLAN_HANDLE, handle)
      .set(Attr::EXECUTION_PLAN_JSON_REPRESENTATION, AttrType::CHAR, static_cast<int64_t>(json.size()), json.data());
  if (auto s = out.plan->finalize(); !s.ok()) return {ErrorCode::SERIALIZATION_FAILED, s.message()};
  return out.plan->get_i64(Attr::EXECUTION_PLAN_WORKSPACE_SIZE, out.workspace);
}

}  // namespace dnngraph::cudnn
