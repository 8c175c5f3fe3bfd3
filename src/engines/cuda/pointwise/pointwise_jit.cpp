#include "engines/cuda/pointwise/pointwise_jit.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/dtype.hpp"
#include "core/log.hpp"
#include "engines/cuda/codegen/emitter.hpp"
#include "engines/cuda/codegen/params.hpp"
#include "engines/cuda/codegen/pointwise_ops.hpp"
#include "engines/cuda/common/compiled_engine.hpp"
#include "engines/cuda/common/kernel_build.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "runtime/cuda/context.hpp"
#include "planning/build_limits.hpp"
#include "planning/engine_instance.hpp"

namespace dnngraph::cuda {
namespace {

using codegen::Layout;

bool deterministic_requested() {
  const char* v = std::getenv("DNNGRAPH_DETERMINISTIC");
  return v && std::strcmp(v, "0") != 0 && *v != '\0';
}

// Whether the deterministic knob changes anything: an order-dependent full reduction (sums), and
// no order-dependent partial one (which the two-pass form does not cover).
bool deterministic_is_a_choice(const expr::Program& prog, const ir::Graph& g) {
  bool full = false, partial = false;
  for (const auto& in : prog.code) {
    if (in.kind != expr::InstrKind::REDUCE || !codegen::order_dependent(in.reduce)) continue;
    (g.tensor(in.tensor).volume() == 1 ? full : partial) = true;
  }
  return full && !partial;
}

// Blocks for the main kernel: enough to cover the work, at most a full wave of 256-thread blocks.
int grid_for(const Layout& L, const Target& t) {
  const Context& c = *t.handle->cuda;
  const int per_sm = std::max(1, c.max_threads_per_sm / codegen::kThreads);
  const int64_t wave = int64_t{c.multiprocessors} * per_sm;
  const int64_t need = (L.volume / L.vec + codegen::kThreads - 1) / codegen::kThreads;
  return static_cast<int>(std::max<int64_t>(1, std::min(wave, need)));
}

// The vector kernel is build.main; the scalar one runs where pointers are not vector-aligned.
struct Kernels {
  KernelBuild build;
  CUfunction scalar = nullptr;
};

// The engine's knobs: elements per thread and loop step, and the two-pass form of full sums.
struct PointwiseKnobs {
  int64_t deterministic = -1;  // -1 (absent): as DNNGRAPH_DETERMINISTIC says
  int64_t unroll = 2;
};

const KnobSchema<PointwiseKnobs> kSchema{
    "cuda_pointwise_jit",
    {{"deterministic", &PointwiseKnobs::deterministic, 0, 1, {}, false}, {"unroll", &PointwiseKnobs::unroll, 1, 8}}};

// Lowering and layout: what both build and deserialize start from.
Status prepare(const Partition& p, const Target& t, const PointwiseKnobs& k, expr::Program& prog, Layout& L) {
  std::string why;
  if (!codegen::checked_on_gpu(p, why)) return {ErrorCode::GRAPH_NOT_SUPPORTED, "cuda_pointwise_jit: " + why};
  if (!expr::lower(p, -1, prog, why)) return {ErrorCode::GRAPH_NOT_SUPPORTED, "cuda_pointwise_jit: " + why};
  codegen::LayoutOptions o;
  o.dynamic = t.dynamic_shapes;
  o.deterministic = k.deterministic >= 0 ? k.deterministic != 0 : deterministic_requested();
  o.unroll = static_cast<int>(k.unroll);
  if (!codegen::plan_layout(prog, *p.graph, o, L, why))
    return {ErrorCode::GRAPH_NOT_SUPPORTED, "cuda_pointwise_jit: " + why};
  o.grid = grid_for(L, t);
  if (!codegen::plan_layout(prog, *p.graph, o, L, why))
    return {ErrorCode::GRAPH_NOT_SUPPORTED, "cuda_pointwise_jit: " + why};
  return {};
}

Status load_kernels(const Target& t, const Layout& L, Kernels& k) {
  KernelBuild& b = k.build;
  if (auto s = Module::load(*t.handle, b.cubin, b.module); !s.ok()) return s;
  if (auto s = b.module->function(codegen::kVectorKernel, b.main); !s.ok()) return s;
  if (L.vec > 1) {
    if (auto s = b.module->function(codegen::kScalarKernel, k.scalar); !s.ok()) return s;
  }
  if (L.needs_finalize()) {
    if (auto s = b.module->function(codegen::kFinalizeKernel, b.finalize); !s.ok()) return s;
  }
  return {};
}

class PointwisePlan final : public Plan {
 public:
  PointwisePlan(const Partition& p, Layout L, Kernels k) : part_(p), L_(std::move(L)), k_(std::move(k)) {}

  int64_t workspace_size() const override { return L_.workspace_bytes; }

  Status execute(const ExecArgs& args) const override {
    HandleImpl& h = args.handle;
    if (!h.device.is_cuda() || !h.cuda) return {ErrorCode::GRAPH_EXECUTION_FAILED, "cuda_pointwise_jit: not a CUDA handle"};
    if (L_.workspace_bytes > 0 && !args.workspace)
      return {ErrorCode::WORKSPACE_TOO_SMALL, "cuda_pointwise_jit: the plan needs workspace but it is null"};
    std::vector<float> scalars;
    for (int id : L_.scalars)
      scalars.push_back(static_cast<float>(dtype::load(args.ptrs[static_cast<size_t>(id)], part_.tensor(id).dtype, 0)));
    const int vec = aligned(args.ptrs) ? L_.vec : 1;
    if (vec != L_.vec) {
      DG_LOG(INFO) << "cuda_pointwise_jit: an operand is not aligned to " << L_.vec << " elements; running the scalar kernel";
    }
    codegen::PointwiseParams params;
    codegen::fill_params(L_, vec, args.ptrs, scalars, args.workspace, params);
    for (size_t i = 0; i < L_.reductions.size(); ++i) {
      const auto& r = L_.reductions[i];
      if (r.full && L_.deterministic) continue;  // partials are written, not accumulated
      if (auto s = fill32(h, params.acc[i], codegen::identity_bits(r.mode), static_cast<size_t>(r.volume)); !s.ok())
        return s;
    }
    void* main_args[] = {&params};
    const LaunchDims main{static_cast<unsigned>(L_.grid), codegen::kThreads, 0};
    if (auto s = launch(h, vec == L_.vec ? k_.build.main : k_.scalar, main, main_args, "cuda_pointwise_jit"); !s.ok())
      return s;
    if (!L_.needs_finalize()) return {};
    int blocks = L_.grid;
    int64_t partial_volume = 1;
    for (const auto& r : L_.reductions)
      if (!r.full) partial_volume = std::max(partial_volume, r.volume);
    const LaunchDims fin{static_cast<unsigned>(std::min<int64_t>(L_.grid, (partial_volume + 255) / 256)),
                         codegen::kThreads, 0};
    void* fin_args[] = {&params, &blocks};
    return launch(h, k_.build.finalize, fin, fin_args, "cuda_pointwise_jit finalize");
  }

  void serialize(ByteWriter& w) const override { serialize_kernel(k_.build, w); }

 private:
  // Every vector-accessed operand is aligned to a whole vector.
  bool aligned(const std::vector<void*>& ptrs) const {
    for (const auto& op : L_.operands) {
      if (op.inner != codegen::Access::VEC) continue;
      const auto addr = reinterpret_cast<uintptr_t>(ptrs[static_cast<size_t>(op.tensor)]);
      if (addr % static_cast<uintptr_t>(L_.vec * size_of(op.dtype)) != 0) return false;
    }
    return true;
  }

  Partition part_;
  Layout L_;
  Kernels k_;
};

class PointwiseJitEngine final : public CompiledEngine<PointwiseKnobs> {
 public:
  PointwiseJitEngine() : CompiledEngine(kSchema) {}

  std::string_view name() const override { return "cuda_pointwise_jit"; }

  Support check(const Partition& p, const Target& t) const override {
    if (!t.device().is_cuda() || !t.handle->cuda)
      return Support::no("runs on CUDA handles; this one is " + t.device().to_string());
    if (p.anchor >= 0) return Support::no("node '" + p.node(0).name + "': the partition has an anchor op; GEMM/conv engines fuse epilogues");
    if (p.nodes.size() > kMaxPointwiseNodesOnGpu)
      return Support::no("node '" + p.node(0).name + "': the partition has " + std::to_string(p.nodes.size()) +
                         " nodes, more than the " + std::to_string(kMaxPointwiseNodesOnGpu) +
                         " one kernel takes (NVRTC's compile time grows superlinearly; the planner splits longer runs)");
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      const ir::Node& n = p.node(i);
      if (!ir::is<PointwiseAttr>(n) && !ir::is<ReductionAttr>(n)) return Support::no(ir::describe(n) + " is not pointwise or a reduction");
      if (n.compute_type == DataType::DOUBLE) return Support::no("node '" + n.name + "': compute type DOUBLE is not supported (fp32 arithmetic)");
    }
    if (!nvrtc()) return Support::no(nvrtc_error());
    expr::Program prog;
    Layout L;
    if (auto s = prepare(p, t, PointwiseKnobs{}, prog, L); !s.ok()) return Support::no(s.message());
    return Support::yes();
  }

  std::vector<Knobs> knob_space(const Partition& p, const Target&) const override {
    expr::Program prog;
    std::string why;
    const bool det_choice = expr::lower(p, -1, prog, why) && deterministic_is_a_choice(prog, *p.graph);
    std::vector<PointwiseKnobs> settings;
    for (int64_t unroll : {2, 4, 1}) {
      if (!det_choice) settings.push_back({.unroll = unroll});
      else if (deterministic_requested()) settings.push_back({.deterministic = 1, .unroll = unroll});
      else for (int64_t d : {0, 1}) settings.push_back({.deterministic = d, .unroll = unroll});
    }
    return print_knobs(schema_, settings);
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    PointwiseKnobs knobs;
    if (!parse(k, knobs)) return 1e9;
    // Memory bound: ~85% of peak bandwidth; a launch (two with the deterministic finalizer) of a few
    // microseconds. Unrolling by 2 is the usual best; the others rank after it.
    const double launches = knobs.deterministic == 1 ? 2 : 1;
    const double penalty = knobs.unroll != 2 ? 1.05 : 1.0;
    return penalty * roofline_seconds(partition_flops(p), partition_bytes(p), t.info(), 0.85, 4e-6 * launches);
  }

 private:
  // Compiles (r null) or reloads the stored kernels (r set), then makes the plan.
  Status make(const Partition& p, const Target& t, const Knobs& k, ByteReader* r,
              std::unique_ptr<Plan>& plan) const override {
    PointwiseKnobs knobs;
    if (auto s = read_knobs(schema_, k, knob_error(r), knobs); !s.ok()) return s;
    expr::Program prog;
    Layout L;
    if (auto s = prepare(p, t, knobs, prog, L); !s.ok()) return s;
    Kernels kn;
    KernelBuild& b = kn.build;
    b.source = codegen::emit_pointwise(prog, *p.graph, L);
    const Status got = r ? read_kernel(*r, name(), b) : compile_cached(t, b.source, "cuda_pointwise_jit.cu", b.cubin);
    if (!got.ok()) return got;
    if (auto s = load_kernels(t, L, kn); !s.ok()) return s;
    if (!r) {
      DG_LOG(DEBUG) << "cuda_pointwise_jit: " << L.describe() << " grid=" << L.grid;
    }
    plan = std::make_unique<PointwisePlan>(p, std::move(L), std::move(kn));
    return {};
  }
};

}  // namespace

const Engine& pointwise_jit_engine() { return engine_instance<PointwiseJitEngine>(); }

}  // namespace dnngraph::cuda
