#include "engines/cudnn/cudnn_engine.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <variant>

#include "core/hash.hpp"
#include "core/log.hpp"
#include "engines/cudnn/handles.hpp"
#include "engines/cudnn/graph_cache.hpp"
#include "engines/cudnn/native_graph.hpp"
#include "planning/calibration.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cudnn {
namespace {

constexpr uint32_t kPayloadVersion = 1;

bool deterministic_requested() {
  const char* v = std::getenv("DNNGRAPH_DETERMINISTIC");
  return v && *v && std::strcmp(v, "0") != 0;
}

// Whether a conv or matmul of the partition reads FLOAT or DOUBLE and the graph does not allow TF32:
// dnngraph then computes it in full precision, so cuDNN's tensor-core (TF32) configs do not qualify.
bool needs_full_precision(const Partition& p) {
  if (p.graph->allow_tf32) return false;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const ir::Node& n = p.node(i);
    if (std::holds_alternative<PointwiseAttr>(n.attr) || std::holds_alternative<ReductionAttr>(n.attr)) continue;
    const DataType t = p.tensor(n.inputs[0]).dtype;
    if (t == DataType::FLOAT || t == DataType::DOUBLE) return true;
  }
  return false;
}

// The heuristic modes to ask cuDNN for: the ones the plans are made for (the frontend asks cuDNN
// for exactly those too; mode B's configs cost a build ALL more runtime compiles), else all.
using PlanModes = std::vector<dnngraph::HeurMode>;
PlanModes planned_modes(const Target& t) {
  if (t.heur_modes.empty()) return {dnngraph::HeurMode::A, dnngraph::HeurMode::B, dnngraph::HeurMode::FALLBACK};
  return t.heur_modes;
}

HeurMode cudnn_mode(dnngraph::HeurMode m) {
  return m == dnngraph::HeurMode::A ? HeurMode::A : m == dnngraph::HeurMode::B ? HeurMode::B : HeurMode::FALLBACK;
}

// "A, FALLBACK": the modes as messages name them.
std::string mode_names(const PlanModes& modes) {
  std::string out;
  for (dnngraph::HeurMode m : modes) out += (out.empty() ? "" : ", ") + std::string(to_string(m));
  return out;
}

// What cuDNN offers for one partition: its operation graph and the engine configs of `modes` (in
// that order, without duplicates).
struct Survey {
  Status status;
  std::vector<EngineConfig> configs;
  std::shared_ptr<OpGraph> graph;
};

Survey survey_once(const CudnnApi& a, SharedHandle& sh, const Partition& p, bool dynamic, const PlanModes& modes) {
  Survey s;
  s.graph = std::make_shared<OpGraph>();
  s.status = build_op_graph(a, sh.handle, p, dynamic, *s.graph);
  if (!s.status.ok()) return s;
  Status first_error;
  for (dnngraph::HeurMode m : modes) {
    Status st = heuristic_configs(a, *s.graph->graph, cudnn_mode(m), s.configs);
    if (!st.ok() && first_error.ok()) first_error = st;
  }
  // As PyTorch does: no configs that down-convert inputs, no TF32 for full-precision inputs, and
  // only deterministic ones when DNNGRAPH_DETERMINISTIC asks for them.
  const bool deterministic = deterministic_requested(), full_precision = needs_full_precision(p);
  const size_t offered = s.configs.size();
  std::erase_if(s.configs, [&](const EngineConfig& c) {
    return c.needs_reorder || c.down_convert || (full_precision && c.tensor_core) ||
           (deterministic && c.nondeterministic);
  });
  if (!s.configs.empty()) return s;
  if (offered > 0)
    s.status = {ErrorCode::GRAPH_NOT_SUPPORTED,
                "none of the " + std::to_string(offered) + " engine configs cuDNN offers computes the graph" +
                    (full_precision ? " in full FLOAT precision (no TF32)" : "") +
                    (deterministic ? " deterministically" : "") + " without reordering or down-converting inputs"};
  else
    s.status = first_error.ok() ? Status{ErrorCode::GRAPH_NOT_SUPPORTED,
                                         "cuDNN's heuristics (modes " + mode_names(modes) +
                                             ") offer no engine config for this graph"}
                                : first_error;
  return s;
}

// cuDNN's answer for a kind of partition (structural_fingerprint, device, shape mode): a graph of
// many identical blocks asks cuDNN's heuristics once per distinct partition instead of once per
// partition (~2.5 ms each on an H200: 10k nodes of repeated conv and matmul blocks spent 12 s
// there). The operation graph is still built for each partition: its uids are the partition's own.
struct Verdict {
  Status status;
  std::vector<EngineConfig> configs;
  bool dynamic = false;  // the operation graph the configs are for was built with dynamic shapes
};

class VerdictMemo {
 public:
  bool find(const std::string& key, Verdict& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_key_.find(key);
    if (it == by_key_.end()) return false;
    out = it->second;
    return true;
  }
  void add(const std::string& key, Verdict v) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (by_key_.size() >= 4096) by_key_.clear();  // bounded: a long-lived process sees many graphs
    by_key_[key] = std::move(v);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, Verdict> by_key_;
};

VerdictMemo& verdicts() {
  static VerdictMemo* m = new VerdictMemo();  // never destroyed: plans may outlive static teardown
  return *m;
}

// The survey from a remembered verdict: its configs over this partition's own operation graph.
Survey survey_from(const Verdict& v, SharedHandle& sh, const Partition& p) {
  Survey s;
  s.status = v.status;
  if (!s.status.ok()) return s;
  s.graph = std::make_shared<OpGraph>();
  s.status = build_op_graph(*api(), sh.handle, p, v.dynamic, *s.graph);
  if (s.status.ok()) s.configs = v.configs;
  return s;
}

// One survey per thread is remembered: check() and knob_space() ask about the same partition in a
// row, and build() reuses its operation graph. The survey is made on `held` (a handle the caller
// holds: a build's) or else on the context's first handle, and its operation graph belongs to it.
std::shared_ptr<const Survey> survey(const Partition& p, const Target& t, SharedHandle* held = nullptr) {
  thread_local std::string memo_key;
  thread_local std::shared_ptr<const Survey> memo;
  const PlanModes modes = planned_modes(t);
  const std::string modes_key = "m" + mode_names(modes);
  std::string key = std::to_string(p.graph->fingerprint()) + "|" +
                    std::to_string(reinterpret_cast<uintptr_t>(t.handle->cuda->context)) + "|" +
                    (t.dynamic_shapes && t.kernel_cache ? "d" : "s") + (deterministic_requested() ? "D" : "") + "|" +
                    std::to_string(reinterpret_cast<uintptr_t>(held)) + "|" + modes_key + "|";
  for (int n : p.nodes) key += std::to_string(n) + ",";
  if (memo && key == memo_key) return memo;
  auto out = std::make_shared<Survey>();
  SharedHandle* sh = held;
  if (!held) out->status = shared_handle(*api(), *t.handle, sh);
  if (out->status.ok()) {
    std::unique_lock<std::mutex> lock = held ? std::unique_lock<std::mutex>() : std::unique_lock<std::mutex>(sh->mutex);
    // cuDNN serves other batch sizes from compiled kernels through a kernel cache only.
    const bool dynamic = t.dynamic_shapes && t.kernel_cache;
    const std::string kind = std::to_string(structural_fingerprint(p)) + "|" +
                             std::to_string(reinterpret_cast<uintptr_t>(t.handle->cuda->context)) + "|" +
                             (dynamic ? "d" : "s") + (deterministic_requested() ? "D" : "") + modes_key;
    Verdict known;
    if (verdicts().find(kind, known)) {
      *out = survey_from(known, *sh, p);
    } else {
      *out = survey_once(*api(), *sh, p, dynamic, modes);
      bool used_dynamic = dynamic;
      if (dynamic && !out->status.ok()) {
        DG_LOG(INFO) << "cudnn: with dynamic shapes: " << out->status.message() << "; trying static shapes";
        Survey fixed = survey_once(*api(), *sh, p, false, modes);
        if (fixed.status.ok()) *out = std::move(fixed), used_dynamic = false;
      }
      // Only successes: a refusal names this partition's nodes and tensors, and is cheap to repeat.
      if (out->status.ok()) verdicts().add(kind, {out->status, out->configs, used_dynamic});
    }
  }
  memo_key = std::move(key);
  memo = out;
  return memo;
}

Status bad_exec(const std::string& why) { return {ErrorCode::GRAPH_EXECUTION_FAILED, "cudnn: " + why}; }

// DNNGRAPH_CUDNN_NATIVE_GRAPH=0 keeps plans on cudnnBackendExecute on every call, no CUDA graph
// (read when a plan is made).
bool native_graph_wanted() {
  const char* v = std::getenv("DNNGRAPH_CUDNN_NATIVE_GRAPH");
  return !v || std::strcmp(v, "0") != 0;
}

class CudnnPlan final : public Plan {
 public:
  // `note`: the engine config carries SUPPORTS_CUDA_GRAPH_NATIVE_API (false when unknown). Plans
  // replay as CUDA graphs, one per pointer set that repeats (graph_cache.hpp; native_graph.hpp:
  // cuDNN's native API, else a captured execute; the native API is tried either way, cuDNN
  // refuses what it cannot populate); launch_path() says how.
  CudnnPlan(const Partition& p, SharedHandle* sh, cuda::CUcontext ctx, PlanDescriptors pd,
            std::shared_ptr<const OpGraph> graph, PackLayout pack, bool note)
      : sh_(sh), ctx_(ctx), pd_(std::move(pd)), graph_(std::move(graph)), pack_(std::move(pack)) {
    scalars_.assign(pack_.ids.size(), 0);
    ptrs_.assign(pack_.ids.size(), nullptr);
    for (size_t i = 0; i < pack_.ids.size(); ++i) {
      const int id = pack_.ids[i];
      names_.push_back(id >= 0 ? p.tensor(id).name : "constant uid " + std::to_string(pack_.uids[i]));
      sizes_.push_back(id >= 0 ? static_cast<size_t>(size_of(p.tensor(id).dtype)) : sizeof(uint64_t));
      if (id < 0) scalars_[i] = pack_.constants[i];  // a constant of the lowering (SDPA's scale, -inf)
      if (id < 0 || pack_.by_value[i]) ptrs_[i] = &scalars_[i];  // host values live here, at a fixed address
    }
    note_ = note ? " (engine note SUPPORTS_CUDA_GRAPH_NATIVE_API)" : "";
    use_graphs_ = native_graph_wanted();
    path_ = use_graphs_ ? "a CUDA graph per repeating pointer set, made on its second sighting"
                        : "cudnnBackendExecute (DNNGRAPH_CUDNN_NATIVE_GRAPH=0)";
  }

  std::string launch_path() const {
    std::lock_guard<std::mutex> lock(sh_->mutex);
    if (!use_graphs_ || cache_.size() == 0) return path_;
    return path_ + "; graphs held for " + std::to_string(cache_.size()) + " pointer set(s)";
  }

  int64_t workspace_size() const override { return pd_.workspace; }

  // A pointer set with a graph replays it; a miss runs cudnnBackendExecute, or makes the set's
  // graph when the cache admits it (graph_cache.hpp). While the stream is captured
  // (populate_cuda_graph of a whole dnngraph graph), the capture records cudnnBackendExecute.
  Status execute(const ExecArgs& args) const override {
    HandleImpl& h = args.handle;
    if (!h.device.is_cuda() || !h.cuda) return bad_exec("not a CUDA handle");
    if (h.cuda->context != ctx_) return bad_exec("the plan was built for another CUDA device");
    if (pd_.workspace > 0 && !args.workspace)
      return {ErrorCode::WORKSPACE_TOO_SMALL, "cudnn: the plan needs " + std::to_string(pd_.workspace) +
                                                  " bytes of workspace but it is null"};
    if (auto s = cuda::make_current(h); !s.ok()) return s;
    const CudnnApi& a = *api();
    std::lock_guard<std::mutex> lock(sh_->mutex);
    if (auto s = read_pointer_set(args); !s.ok()) return s;
    const auto stream = cuda::stream_of(h);
    const bool graphs = use_graphs_ && !stream_is_capturing(stream);
    if (graphs)
      if (const NativeGraph* g = cache_.find(key_)) return g->launch(stream);
    if (auto s = update_variant_pack(a, args.workspace); !s.ok()) return s;
    if (cudnnStatus_t s = a.cudnnSetStream(sh_->handle, stream); s != STATUS_SUCCESS)
      return cudnn_error(a, s, "cudnnSetStream", ErrorCode::GRAPH_EXECUTION_FAILED);
    if (graphs && cache_.admit(key_))
      if (const NativeGraph* g = make_graph(a, stream)) return g->launch(stream);
    if (cudnnStatus_t s = a.cudnnBackendExecute(sh_->handle, pd_.plan->get(), vp_->get()); s != STATUS_SUCCESS)
      return cudnn_error(a, s, "cudnnBackendExecute", ErrorCode::GRAPH_EXECUTION_FAILED);
    return {};
  }

  // Reads the call's pointer set into key_: every tensor pointer, or a by-value scalar's value
  // (copied to scalars_, whose address the variant pack holds), then the workspace.
  Status read_pointer_set(const ExecArgs& args) const {
    key_.clear();
    for (size_t i = 0; i < pack_.ids.size(); ++i) {
      if (pack_.ids[i] < 0) continue;  // a constant: set once
      void* p = args.ptrs[static_cast<size_t>(pack_.ids[i])];
      if (!p) return {ErrorCode::INVALID_VARIANT_PACK, "cudnn: tensor '" + names_[i] + "' has a null pointer"};
      if (pack_.by_value[i]) {
        uint64_t v = 0;
        std::memcpy(&v, p, sizes_[i]);
        scalars_[i] = v;
        key_.push_back(v);
        continue;
      }
      if (reinterpret_cast<uintptr_t>(p) % kAlignment != 0)
        return {ErrorCode::INVALID_VARIANT_PACK, "cudnn: tensor '" + names_[i] + "' is not " +
                                                     std::to_string(kAlignment) +
                                                     "-byte aligned (cuDNN plans are built for aligned pointers)"};
      ptrs_[i] = p;
      key_.push_back(reinterpret_cast<uintptr_t>(p));
    }
    key_.push_back(reinterpret_cast<uintptr_t>(args.workspace));
    return {};
  }

  // Remakes the variant pack when the pointer set differs from the one it was made for.
  Status update_variant_pack(const CudnnApi& a, void* workspace) const {
    if (vp_ && key_ == vp_key_) return {};
    vp_ = std::make_unique<Descriptor>(a, Desc::VARIANT_PACK);
    vp_->set_i64s(Attr::VARIANT_PACK_UNIQUE_IDS, pack_.uids)
        .set(Attr::VARIANT_PACK_DATA_POINTERS, AttrType::VOID_PTR, static_cast<int64_t>(ptrs_.size()), ptrs_.data())
        .set(Attr::VARIANT_PACK_WORKSPACE, AttrType::VOID_PTR, 1, &workspace);
    if (auto s = vp_->finalize(); !s.ok()) {
      vp_.reset();
      return {ErrorCode::INVALID_VARIANT_PACK, s.message()};
    }
    vp_key_ = key_;
    return {};
  }

  // Makes the graph of key_ (a new one or the least recently used one, updated). When that fails
  // the plan stays on cudnnBackendExecute from then on.
  const NativeGraph* make_graph(const CudnnApi& a, cuda::CUstream stream) const {
    Status s;
    if (!sh_->capture_stream)
      s = cuda::check(cuda::driver()->cuStreamCreate(&sh_->capture_stream, cuda::STREAM_NON_BLOCKING),
                      "cudnn: cuStreamCreate");
    NativeGraph& g = cache_.slot_for(key_);
    if (s.ok())
      s = g.prepare(a, sh_->handle, pd_.plan->get(), vp_->get(), stream, sh_->capture_stream, native_refused_);
    if (!s.ok()) {
      DG_LOG(INFO) << "cudnn: no CUDA graph for this plan, using cudnnBackendExecute: " << s.message();
      use_graphs_ = false;
      cache_.clear();
      path_ = "cudnnBackendExecute (" + s.message() + ")";
      return nullptr;
    }
    native_refused_ = g.native_refusal();
    path_ = g.how() + note_;
    return &g;
  }

  void serialize(ByteWriter& w) const override {
    std::string json;
    {
      std::lock_guard<std::mutex> lock(sh_->mutex);
      if (auto s = plan_to_json(*api(), *pd_.plan, json); !s.ok()) {
        DG_LOG(ERROR) << s.to_string();
        json.clear();  // deserialize then says the payload holds no plan
      }
    }
    w.put(kPayloadVersion);
    w.put_string(json);
  }

 private:
  SharedHandle* sh_;
  cuda::CUcontext ctx_;
  PlanDescriptors pd_;
  std::shared_ptr<const OpGraph> graph_;  // the descriptors the plan was made from
  PackLayout pack_;
  std::vector<std::string> names_;
  std::vector<size_t> sizes_;
  // The call's pointer set, the variant pack (reused while the set stays the same) and the set it
  // was made for, the CUDA graphs by pointer set; guarded by sh_->mutex.
  mutable std::vector<uint64_t> scalars_;
  mutable std::vector<void*> ptrs_;
  mutable PointerSet key_, vp_key_;
  mutable std::unique_ptr<Descriptor> vp_;
  mutable bool use_graphs_ = false;
  mutable std::string path_, native_refused_;
  std::string note_;
  mutable GraphCache cache_;
};

class CudnnEngine final : public Engine {
 public:
  std::string_view name() const override { return "cudnn"; }

  // Each build takes a handle of its own (handles.hpp): cuDNN compiles runtime-fused configs on
  // the calling thread, 0.2-0.4 s each for attention, so build_plans(ALL) compiles them at once.
  bool builds_concurrently() const override { return true; }

  Support check(const Partition& p, const Target& t) const override {
    if (!t.device().is_cuda() || !t.handle->cuda)
      return Support::no("runs on CUDA handles; this one is " + t.device().to_string());
    if (!api()) return Support::no(error() + ": using dnngraph's own engines");
    if (auto why = unsupported_reason(p); !why.empty()) return Support::no(why);
    auto s = survey(p, t);
    if (!s->status.ok()) return Support::no(s->status.message());
    return Support::yes();
  }

  // A config is cuDNN's global engine index and its knob choices: the index present and each
  // knob one of cuDNN's knob types. Whether this cuDNN has that engine is for build to find out.
  Status check_knobs(const Knobs& k) const override {
    EngineConfig c;
    std::string why;
    if (!from_knobs(k, c, why)) return {ErrorCode::INVALID_VALUE, "cudnn: " + why};
    if (c.engine < 0) return {ErrorCode::INVALID_VALUE, "cudnn: engine index " + std::to_string(c.engine) + " is negative"};
    return {};
  }

  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const override {
    std::vector<Knobs> out;
    if (!api() || !t.handle->cuda) return out;
    for (const auto& c : survey(p, t)->configs) out.push_back(to_knobs(c));
    return out;
  }

  // What cuDNN's heuristics reported for the config the knobs name: RUNTIME_COMPILATION for its
  // runtime-fusion engines (the note the frontend's test_matmul_bias_relu looks for).
  std::vector<dnngraph::BehaviorNote> behavior_notes(const Partition& p, const Target& t, const Knobs& k) const override {
    EngineConfig c;
    std::string why;
    if (!api() || !t.handle->cuda || !from_knobs(k, c, why)) return {};
    for (const EngineConfig& o : survey(p, t)->configs)
      if (o.engine == c.engine && o.knobs == c.knobs && o.runtime_compiled)
        return {dnngraph::BehaviorNote::RUNTIME_COMPILATION};
    return {};
  }

  // cuDNN's numerical notes of that config, as it reported them (its enum is the frontend's order).
  std::vector<dnngraph::NumericalNote> numerical_notes(const Partition& p, const Target& t, const Knobs& k) const override {
    EngineConfig c;
    std::string why;
    std::vector<dnngraph::NumericalNote> out;
    if (!api() || !t.handle->cuda || !from_knobs(k, c, why)) return out;
    for (const EngineConfig& o : survey(p, t)->configs)
      if (o.engine == c.engine && o.knobs == c.knobs)
        for (int n : o.numerical_notes) out.push_back(static_cast<dnngraph::NumericalNote>(n));
    return out;
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs&) const override {
    // cuDNN's configs keep cuDNN's own order (equal estimates; mode A sorts stably). The efficiency
    // is what cuDNN reaches on the H200 anchors (~0.6 of the bf16 peak), slightly discounted so
    // that on a tie dnngraph's own engines are the default and autotune settles it.
    // fp32 operands run at TF32's rate at best, half of bf16's (the own engines count it the same
    // way); exact fp32 is slower still, which calibration measures.
    const Precision prec = operand_precision(p);
    const double rate = prec == Precision::SINGLE || prec == Precision::TF32 ? 0.5 : 1.0;
    return roofline_seconds(partition_flops(p), partition_bytes(p), t.info(), 0.55 * rate, 6e-6);
  }

  Status build(const Partition& p, const Target& t, const Knobs& k, std::unique_ptr<Plan>& plan) const override {
    if (!api()) return {ErrorCode::GRAPH_NOT_SUPPORTED, error()};
    EngineConfig c;
    std::string why;
    if (!from_knobs(k, c, why)) return {ErrorCode::INVALID_VALUE, "cudnn: " + why};
    // A build on a handle of its own, so that builds_concurrently's threads compile cuDNN's
    // runtime-fused configs at once; dynamic shapes share a kernel cache, built on the first handle.
    const bool dynamic = t.dynamic_shapes && t.kernel_cache;
    SharedHandle* sh = nullptr;
    std::unique_lock<std::mutex> lock;
    if (auto s = build_handle(*api(), *t.handle, dynamic, sh, lock); !s.ok()) return s;
    auto sv = survey(p, t, sh);
    if (!sv->status.ok()) return sv->status;
    BackendDescriptor kc = nullptr;
    if (sv->graph->dynamic && t.kernel_cache) {
      const uint64_t topology = p.graph->fingerprint(true) ^
                                hash64(std::to_string(reinterpret_cast<uintptr_t>(t.handle->cuda->context)));
      if (auto s = kernel_cache(*api(), t.kernel_cache, topology, *sv->graph->graph, kc); !s.ok()) {
        DG_LOG(INFO) << "cudnn: no kernel cache: " << s.message();
      }
    }
    PlanDescriptors pd;
    if (auto s = make_plan(*api(), sh->handle, *sv->graph->graph, c, kc, pd); !s.ok())
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, "cudnn[" + knobs_to_string(k) + "]: " + s.message()};
    DG_LOG(DEBUG) << "cudnn: built engine " << c.engine << (c.runtime_compiled ? " (runtime compiled)" : "")
                  << ", workspace " << pd.workspace;
    // The knobs name the config; its notes are those cuDNN's heuristics reported for it.
    bool native_graph = false;
    for (const EngineConfig& o : sv->configs)
      if (o.engine == c.engine && o.knobs == c.knobs) native_graph = o.cuda_graph_native;
    plan = std::make_unique<CudnnPlan>(p, sh, t.handle->cuda->context, std::move(pd), sv->graph,
                                       sv->graph->lowered.pack, native_graph);
    return {};
  }

  Status deserialize(const Partition& p, const Target& t, const Knobs&, ByteReader& r,
                     std::unique_ptr<Plan>& plan) const override {
    if (!api()) return {ErrorCode::GRAPH_NOT_SUPPORTED, error()};
    const auto version = r.get<uint32_t>();
    std::string json;
    if (!r.get_string(json, size_t{1} << 28) || version != kPayloadVersion)
      return {ErrorCode::SERIALIZATION_FAILED, "cudnn: the plan payload is truncated or of another version"};
    if (json.empty()) return {ErrorCode::SERIALIZATION_FAILED, "cudnn: the payload holds no cuDNN plan"};
    std::vector<TensorPlan> tensors;
    if (auto s = plan_tensors(p, tensors); !s.ok()) return s;
    SharedHandle* sh = nullptr;
    if (auto s = shared_handle(*api(), *t.handle, sh); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(sh->mutex);
    PlanDescriptors pd;
    if (auto s = plan_from_json(*api(), sh->handle, json, pd); !s.ok())
      return {ErrorCode::SERIALIZATION_FAILED, "cudnn: cuDNN could not reload its plan: " + s.message()};
    // A reloaded plan's engine notes are unknown: the native CUDA graph is tried, execute is the fallback.
    plan = std::make_unique<CudnnPlan>(p, sh, t.handle->cuda->context, std::move(pd), nullptr, pack_layout(tensors),
                                       false);
    return {};
  }
};

}  // namespace

std::string launch_path(const Plan& plan) {
  const auto* p = dynamic_cast<const CudnnPlan*>(&plan);
  return p ? p->launch_path() : "not a cudnn plan";
}

const Engine& engine() {
  static const CudnnEngine kEngine;
  return kEngine;
}

}  // namespace dnngraph::cudnn
