// cuda_conv_implicit_gemm: the engine (knobs, cost) and its plan (kernel arguments, TMA maps,
// launch); the kernels' sources: conv_kernel_source.cpp.
#include "engines/cuda/conv/conv_implicit_gemm.hpp"

#include <algorithm>

#include "core/log.hpp"
#include "engines/cuda/common/compiled_engine.hpp"
#include "engines/cuda/common/gpu_checked.hpp"
#include "engines/cuda/common/tensor_core_notes.hpp"
#include "engines/cuda/common/tensor_core_types.hpp"
#include "engines/cuda/common/kernel_build.hpp"
#include "engines/cuda/common/launch_order.hpp"
#include "engines/cuda/common/register_epilogue.hpp"
#include "engines/cuda/conv/conv_dgrad_phases.hpp"
#include "engines/cuda/conv/conv_gemm_view.hpp"
#include "engines/cuda/conv/conv_im2col_view.hpp"
#include "engines/cuda/conv/conv_kernel_source.hpp"
#include "engines/cuda/conv/conv_knobs.hpp"
#include "engines/cuda/conv/conv_problem.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/driver_ext.hpp"
#include "planning/engine_instance.hpp"

namespace dnngraph::cuda {
namespace {

using conv::ConvKnobs;
using conv::ConvProblem;
using Config = conv::ConvConfig;
constexpr const char* kEngineName = conv::kImplicitGemmEngineName;
// Settings the knob space offers only once their GPU tests have passed (a gate name on
// common/gpu_checked's list); explicit knobs build them (the tests).
struct GatedSettings {
  const char* gate;
  const char* what;
  bool (*matches)(const ConvKnobs&);
};
// None now: the halo tiles (core 4) and the 64-wide split clusters left on 2026-12-06.
constexpr std::array<GatedSettings, 0> kGatedSettings{};
using conv::kFpropKernel;
// The register epilogue's speed-up over the staged one on the same tile (knob epilogue=1), the
// least measured on an H200 (2026-12-05, docs/perf.md): 1.07-1.13 on the tutorial and RN50 layers.
constexpr double kRegisterEpilogueGain = 1.07;

using Pieces = conv::ConvPieces;

// Core 4's register epilogue computes the virtual grid's padding pixels beside the output's and
// stores only the real rows; full reductions (AMAX) would see the others ("" where none).
std::string halo_register_epilogue_rule(const EpiloguePlan& epi) {
  return epi.L.reductions.empty() ? ""
                                  : "core=4's epilogue=1 computes the virtual grid's padding pixels beside the "
                                    "output's; full reductions (AMAX) would see them (epilogue=0 serves them)";
}

// The knobs' TF32 settings against the inputs ("" where they agree): FLOAT inputs take tf32=1
// where the graph allows TF32, tf32x3=1 either way; other types neither.
std::string float_inputs_rule(const Config& c, const ConvProblem& cp) {
  if (cp.dtype != DataType::FLOAT)
    return c.fp32_operands() ? "tf32=1 and tf32x3=1 go with FLOAT inputs only; the inputs are " +
                                   std::string(to_string(cp.dtype))
                             : "";
  if (cp.exact_fp32 && !c.tf32x3)
    return "the graph does not allow TF32, so FLOAT inputs take tf32x3=1 (3xTF32, about fp32's accuracy), not " +
           std::string(c.tf32 ? "tf32=1" : "16-bit operands");
  if (!c.fp32_operands()) return "FLOAT inputs take tf32=1 (the graph allows TF32) or tf32x3=1";
  return "";
}

// FLOAT inputs the graph keeps exact run only as 3xTF32 on core 3 ("" where that can serve them).
std::string exact_fp32_rule(const Partition& p, const Target& t, const ConvProblem& cp) {
  if (!cp.exact_fp32) return "";
  const std::string where =
      "node '" + p.graph->nodes[static_cast<size_t>(anchor_node(p))].name + "', tensor '" + p.tensor(cp.x).name + "': ";
  if (t.info().sm_version != 90)
    return where + "FLOAT inputs without TF32 run as 3xTF32 on core=3 (sm_90a); the device is sm_" +
           std::to_string(t.info().sm_version) + " (" + cuda::kTf32Rule + ")";
  if (std::string why; !conv::im2col_view(cp, why))
    return where + "FLOAT inputs without TF32 run as 3xTF32 on core=3's im2col TMA loads, but " + why;
  return "";
}

Status prepare(const Partition& p, const Target& t, Pieces& out) {
  if (!t.device().is_cuda() || !t.handle->cuda)
    return {ErrorCode::GRAPH_NOT_SUPPORTED, "runs on CUDA handles; this one is " + t.device().to_string()};
  if (t.info().sm_version < 80)
    return {ErrorCode::GRAPH_NOT_SUPPORTED,
            "needs sm_80 or later (mma.sync bf16); the device is sm_" + std::to_string(t.info().sm_version)};
  std::string why;
  if (!conv::describe_conv(p, out.cp, why)) return {ErrorCode::GRAPH_NOT_SUPPORTED, why};
  if (const std::string rule = exact_fp32_rule(p, t, out.cp); !rule.empty()) return {ErrorCode::GRAPH_NOT_SUPPORTED, rule};
  if (!plan_epilogue(p, out.cp.axes, t.dynamic_shapes, out.epi, why))
    return {ErrorCode::GRAPH_NOT_SUPPORTED, "the epilogue does not fit: " + why};
  return {};
}

// A conv_dgrad's phases stored by the register epilogue: each phase's sub-grid as a TMA map
// (conv_dgrad_phases.hpp's dgrad_store_map), kept in the phase; false with the rule one breaks.
bool dgrad_register_epilogue(Pieces& pc, std::string& why) {
  const TensorMapSpec rows = cuda::register_epilogue_output_map(pc.epi);
  return std::all_of(pc.phases.begin(), pc.phases.end(), [&](conv::DgradPhase& ph) {
    return conv::dgrad_store_map(pc.cp, ph, rows, ph.store, ph.store_offset, why);
  });
}


class ConvPlan final : public KernelPlan {
 public:
  ConvPlan(const Partition& p, Pieces pc, Config c, KernelBuild k)
      : KernelPlan(p, std::move(k)), pc_(std::move(pc)), c_(c),
        held_clusters_(c_.cluster_ctas() > 1 && k_.main
                           ? cuda::max_active_clusters(k_.main, 384, static_cast<unsigned>(c_.smem_bytes()),
                                                       static_cast<unsigned>(c_.cluster_ctas()))
                           : 0) {}

  // The epilogue's workspace, then (split-K through global memory) the partial sums and one
  // counter per tile.
  int64_t epilogue_bytes() const { return (pc_.epi.L.workspace_bytes + 255) / 256 * 256; }
  bool global_splits() const { return c_.splits > 1 && !c_.split_cluster; }
  int64_t tiles() const {
    return ((pc_.cp.params.M + c_.bm - 1) / c_.bm) * ((pc_.cp.params.N + c_.bn - 1) / c_.bn);
  }
  int64_t workspace_size() const override {
    if (!global_splits()) return pc_.epi.L.workspace_bytes;
    return epilogue_bytes() + tiles() * c_.splits * c_.bm * c_.bn * 4 + tiles() * 4;
  }

  Status execute(const ExecArgs& args) const override {
    HandleImpl& h = args.handle;
    if (!h.device.is_cuda() || !h.cuda) return {ErrorCode::GRAPH_EXECUTION_FAILED, "conv plan: not a CUDA handle"};
    if (global_splits() && !args.workspace)
      return {ErrorCode::WORKSPACE_TOO_SMALL, std::string(kEngineName) + ": split_k=" + std::to_string(c_.splits) +
                                                  " needs " + std::to_string(workspace_size()) +
                                                  " bytes of workspace but it is null"};
    for (int id : {pc_.cp.x, pc_.cp.w}) {
      const void* ptr = args.ptrs[static_cast<size_t>(id)];
      if (!ptr) return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + part_.tensor(id).name + "': the pointer is null"};
      if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
        return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + part_.tensor(id).name +
                                                     "': the pointer is not 16-byte aligned, which the 16-byte gathers need"};
    }
    codegen::PointwiseParams pp;
    int vec = 1;
    if (auto s = epilogue_params(part_, pc_.epi.L, args, pp, vec); !s.ok()) return s;
    conv::ConvParams cp = pc_.cp.params;
    cp.x = args.ptrs[static_cast<size_t>(pc_.cp.x)];
    cp.w = args.ptrs[static_cast<size_t>(pc_.cp.w)];
    cp.epi_vec = vec;
    cp.tiles_m = static_cast<int32_t>((cp.M + c_.bm - 1) / c_.bm);
    cp.tiles_n = static_cast<int32_t>((cp.N + c_.bn - 1) / c_.bn);
    cp.splits = c_.splits;
    cp.ws = nullptr;
    if (auto s = reset_reductions(h, pc_.epi.L, pp); !s.ok()) return s;
    const int64_t tiles = int64_t{cp.tiles_m} * cp.tiles_n;
    if (global_splits()) {
      cp.ws = static_cast<char*>(args.workspace) + epilogue_bytes();
      char* counters = static_cast<char*>(cp.ws) + tiles * c_.splits * c_.bm * c_.bn * 4;
      if (auto s = fill32(h, counters, 0, static_cast<size_t>(tiles)); !s.ok()) return s;
    }
    cuda::TensorMap my;  // the register epilogue's output map
    if (c_.epilogue)
      if (auto s = cuda::encode_register_epilogue_map(part_, pc_.epi, args, my); !s.ok()) return s;
    if (c_.core == 2) return launch_gemm_view(h, cp, pp, my);
    if (c_.core == 4) return launch_halo(h, args, cp, pp);
    if (c_.core == 3) return pc_.phases.empty() ? launch_im2col(h, cp, pp, my) : launch_dgrad_phases(h, args, cp, pp);
    if (c_.core == 1) {
      cuda::TensorMap mw;
      if (auto s = cuda::encode_tensor_map(conv::filter_map(pc_.cp, c_), cp.w, mw); !s.ok()) return s;
      void* kargs[] = {&cp, &pp, &mw};
      if (auto s = launch_persistent(h, kargs, tiles * c_.splits, unit_ksteps(cp)); !s.ok()) return s;
    } else {
      void* kargs[] = {&cp, &pp};
      if (auto s = cuda::launch_3d(h, k_.main, {static_cast<unsigned>(tiles), 1, 1}, 128,
                                   static_cast<unsigned>(c_.smem_bytes()), kargs, kFpropKernel);
          !s.ok())
        return s;
    }
    return run_finalize(h, pc_.epi.L, k_.finalize, pp);
  }

 private:
  // The k steps of one unit (a tile, or its share of a split).
  int64_t unit_ksteps(const conv::ConvParams& p) const {
    return (conv::tile_ksteps(c_, p) + c_.splits - 1) / c_.splits;
  }

  // The wgmma cores' launch: persistent CTAs (at most one per SM) walking `units` (tile, k range)
  // units, 3 warpgroups each; with clusters, groups of CTAs walking groups of tiles. Every wgmma
  // core's kernel starts with pdl_start: short shares launch programmatically (launch_order.hpp).
  Status launch_persistent(HandleImpl& h, void** kargs, int64_t units, int64_t ksteps) const {
    const auto grid =
        static_cast<unsigned>(cuda::persistent_grid(units, c_.cluster_ctas(), h.cuda->multiprocessors, held_clusters_));
    return cuda::launch_3d(h, k_.main, {grid, 1, 1}, 384, static_cast<unsigned>(c_.smem_bytes()), kargs, kFpropKernel,
                           cuda::launch_order_for(units, grid, ksteps));
  }

  // Core 2: the matmul kernel over X as a [pixels, C] matrix (conv_gemm_view.hpp), then the finalize.
  Status launch_gemm_view(HandleImpl& h, const conv::ConvParams& cp, codegen::PointwiseParams& pp,
                          cuda::TensorMap& my) const {
    gemm::GemmParams g = conv::gemm_view_params(cp, pc_.pixel_stride, c_.splits, cp.ws);
    cuda::TensorMap mx, mw;
    if (auto s = cuda::encode_tensor_map(conv::gemm_view_activation_map(pc_.cp, pc_.pixel_stride), cp.x, mx); !s.ok())
      return s;
    if (auto s = cuda::encode_tensor_map(conv::filter_map(pc_.cp, c_), cp.w, mw); !s.ok()) return s;
    void* kargs[] = {&g, &pp, &mx, &mw, &my};  // (my: read only by epilogue=1's kernel)
    if (auto s = launch_persistent(h, kargs, int64_t{cp.tiles_m} * cp.tiles_n * c_.splits, unit_ksteps(cp)); !s.ok())
      return s;
    return run_finalize(h, pc_.epi.L, k_.finalize, pp);
  }

  // Core 3: the im2col TMA kernel (split-K units walk its (tap, channel block) k steps), then the finalize.
  Status launch_im2col(HandleImpl& h, conv::ConvParams& cp, codegen::PointwiseParams& pp, cuda::TensorMap& my) const {
    cuda::TensorMap mx, mw;
    // Clusters along M: each CTA loads half of the filter tile (its rank's output channels); along
    // N: its piece of the pixels.
    const int pixels = 128 / c_.cluster_n;
    if (auto s = cuda::encode_im2col_map(conv::im2col_activation_map(pc_.cp, c_.bk(), pixels), cp.x, mx); !s.ok())
      return s;
    if (auto s = cuda::encode_tensor_map(conv::im2col_filter_map(pc_.cp, c_.bk(), c_.bn / c_.cluster), cp.w, mw); !s.ok())
      return s;
    void* kargs[] = {&cp, &pp, &mx, &mw, &my};  // (my: read only by epilogue=1's kernel)
    const auto whole_groups = [](int64_t tiles, int64_t cl) { return (tiles + cl - 1) / cl * cl; };
    const int64_t units = whole_groups(cp.tiles_m, c_.cluster) * whole_groups(cp.tiles_n, c_.cluster_n) * c_.splits;
    if (c_.split_cluster) {  // one unit per CTA, a tile's splits in one cluster (the kernel's __cluster_dims__)
      if (units > INT32_MAX)
        return {ErrorCode::GRAPH_EXECUTION_FAILED, std::string(kEngineName) + ": split_cluster=1 launches one CTA per unit; " +
                                                       std::to_string(units) + " exceed a grid"};
      if (auto s = cuda::launch_3d(h, k_.main, {static_cast<unsigned>(units), 1, 1}, 384,
                                   static_cast<unsigned>(c_.smem_bytes()), kargs, kFpropKernel,
                                   cuda::launch_order_for(units, units, unit_ksteps(cp)));
          !s.ok())
        return s;
    } else if (auto s = launch_persistent(h, kargs, units, unit_ksteps(cp)); !s.ok()) {
      return s;
    }
    return run_finalize(h, pc_.epi.L, k_.finalize, pp);
  }

  // Core 4: halo boxes of X (conv_halo_view.hpp) over the virtual grid's 128-pixel tiles, then the finalize.
  // The register epilogue (epilogue=1) stores the rows itself, 16 bytes at a time.
  Status launch_halo(HandleImpl& h, const ExecArgs& args, conv::ConvParams& cp, codegen::PointwiseParams& pp) const {
    cp.tiles_m = static_cast<int32_t>(conv::halo_tiles_m(cp, pc_.halo));
    cuda::TensorMap mx, mw;
    if (auto s = cuda::encode_tensor_map(conv::halo_activation_map(pc_.cp, pc_.halo), cp.x, mx); !s.ok()) return s;
    if (auto s = cuda::encode_tensor_map(conv::im2col_filter_map(pc_.cp, c_.bk(), c_.bn), cp.w, mw); !s.ok()) return s;
    conv::HaloTiles t = pc_.halo;
    conv::HaloOutput o;
    if (c_.epilogue) {
      const int id = cuda::stored_tensor(pc_.epi);
      o.y = args.ptrs[static_cast<size_t>(id)];
      o.row_bytes = static_cast<int64_t>(cuda::register_epilogue_output_map(pc_.epi).strides_bytes[0]);
      if (reinterpret_cast<uintptr_t>(o.y) % 16 != 0)
        return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + part_.tensor(id).name +
                                                     "': the pointer is not 16-byte aligned, which the 16-byte stores of "
                                                     "core=4's epilogue=1 need (plans with epilogue=0 take any alignment)"};
    }
    void* kargs[] = {&cp, &t, &o, &pp, &mx, &mw};
    const int64_t tiles = int64_t{cp.tiles_m} * cp.tiles_n;
    if (auto s = launch_persistent(h, kargs, tiles, conv::tile_ksteps(c_, cp)); !s.ok()) return s;
    return run_finalize(h, pc_.epi.L, k_.finalize, pp);
  }

  // Core 3 running a conv_dgrad: its phases, each a forward convolution over DY whose epilogue
  // writes its strided sub-grid of DX, up to 4 per launch (blockIdx.y picks one); the finalize
  // once, after the last. The launch's phases share the SMs, each phase's persistent CTAs walking
  // its tiles: one CTA per SM for the whole launch, not a CTA's start and drain per phase and SM
  // (H100, 4x4 stride 2: 132 CTAs per phase ran 0.040 ms with 2 tiles each).
  Status launch_dgrad_phases(HandleImpl& h, const ExecArgs& args, const conv::ConvParams& all,
                             codegen::PointwiseParams& pp) const {
    // The phases' kernel takes both by value: within the 4 KB of kernel parameters every driver takes.
    static_assert(sizeof(conv::DgradPhaseArgs) + sizeof(codegen::PointwiseParams) <= 4096,
                  "a launch's dgrad phases must fit the kernel parameters");
    const int64_t es = size_of(pc_.cp.dtype), n = static_cast<int64_t>(pc_.phases.size());
    const void* stored = c_.epilogue ? args.ptrs[static_cast<size_t>(cuda::stored_tensor(pc_.epi))] : nullptr;
    for (int64_t first = 0; first < n; first += conv::kDgradPhasesPerLaunch) {
      conv::DgradPhaseArgs a{};
      const int64_t count = std::min<int64_t>(conv::kDgradPhasesPerLaunch, n - first);
      int64_t units = 0, ksteps = 0;
      for (int64_t i = 0; i < count; ++i) {
        const conv::DgradPhase& ph = pc_.phases[static_cast<size_t>(first + i)];
        conv::ConvParams& cp = a.cp[i];
        cp = conv::dgrad_phase_params(pc_.cp, ph);
        cp.x = all.x;
        cp.w = static_cast<const char*>(all.w) + conv::dgrad_filter_offset(pc_.cp, ph) * es;
        cp.epi_vec = all.epi_vec;
        cp.tiles_m = static_cast<int32_t>((cp.M + c_.bm - 1) / c_.bm);
        cp.tiles_n = all.tiles_n;
        cp.splits = 1;
        cp.ws = nullptr;
        units = std::max(units, int64_t{cp.tiles_m} * cp.tiles_n);
        ksteps = std::max(ksteps, conv::im2col_ktiles(ph.fprop.params, c_.bk()));
        if (auto s = cuda::encode_im2col_map(conv::im2col_activation_map(ph.fprop, c_.bk()), cp.x, a.mx[i]); !s.ok())
          return s;
        if (auto s = cuda::encode_tensor_map(conv::dgrad_filter_map(pc_.cp, ph, c_.bk()), cp.w, a.mw[i]); !s.ok())
          return s;
        if (c_.epilogue)
          if (auto s = encode_phase_store(ph, stored, a.my[i]); !s.ok()) return s;
      }
      void* kargs[] = {&a, &pp};
      const int64_t per_phase = std::max<int64_t>(1, h.cuda->multiprocessors / count);
      const auto grid = static_cast<unsigned>(std::min(units, per_phase));
      if (auto s = cuda::launch_3d(h, k_.main, {grid, static_cast<unsigned>(count), 1}, 384,
                                   static_cast<unsigned>(c_.smem_bytes()), kargs, kFpropKernel,
                                   cuda::launch_order_for(units, grid, ksteps));
          !s.ok())
        return s;
    }
    return run_finalize(h, pc_.epi.L, k_.finalize, pp);
  }

  // The register epilogue's map of a phase's sub-grid of the stored output (make() set ph.store).
  Status encode_phase_store(const conv::DgradPhase& ph, const void* stored, cuda::TensorMap& out) const {
    if (reinterpret_cast<uintptr_t>(stored) % 16 != 0)
      return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + part_.tensor(cuda::stored_tensor(pc_.epi)).name +
                                                   "': the pointer is not 16-byte aligned, which the TMA store of "
                                                   "epilogue=1 needs (plans with epilogue=0 take any alignment)"};
    return cuda::encode_tensor_map(ph.store, static_cast<const char*>(stored) + ph.store_offset * 2, out);
  }

  Pieces pc_;
  Config c_;
  int held_clusters_;  // clusters of this kernel the GPU holds at once (0: unknown or no clusters)
};

class ConvImplicitGemmEngine final : public PreparedEngine<ConvKnobs, Pieces, prepare> {
 public:
  ConvImplicitGemmEngine() : PreparedEngine(kEngineName, conv::knob_schema()) {}

  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const override {
    std::vector<ConvKnobs> settings;
    ConvProblem cp;
    std::string why;
    const bool described = conv::describe_conv(p, cp, why);
    const bool dgrad = described && (cp.dgrad || cp.wgrad);
    if (described && cp.exact_fp32) {  // 3xTF32 on core 3 only: every other core would round to TF32
      if (exact_fp32_rule(p, t, cp).empty()) conv::add_tf32x3_candidates(cp, t.info().multiprocessors, settings);
      add_register_epilogue(p, t, settings);
      return ranked(p, t, settings);
    }
    // FLOAT inputs get here only where the graph allows TF32 (exact ones returned above): every knob set takes tf32=1.
    const int64_t tf32 = described && cp.dtype == DataType::FLOAT ? 1 : 0;
    if (int64_t stride = 0; t.info().sm_version == 90 && described && conv::gemm_view(cp, stride, why))
      conv::add_gemm_view_candidates(cp, t.info().multiprocessors, tf32 ? 32 : 64, settings);
    else if (t.info().sm_version == 90 && described && conv::im2col_view(cp, why))
      conv::add_im2col_candidates(cp, t.info().multiprocessors, tf32 ? 32 : 64, settings);
    else if (std::vector<conv::DgradPhase> phases;
             t.info().sm_version == 90 && described && cp.dgrad && !tf32 && conv::dgrad_phases(cp, phases, why))
      conv::add_dgrad_phase_candidates(conv::deepest_phase(phases).fprop, t.info().multiprocessors, settings);
    if (t.info().sm_version == 90 && described && !dgrad) conv::add_halo_candidates(cp, settings);
    add_register_epilogue(p, t, settings);
    for (const GatedSettings& g : kGatedSettings) {
      if (std::string held; !cuda::checked_on_gpu(g.gate, g.what, held) && std::erase_if(settings, g.matches) > 0) {
        DG_LOG(DEBUG) << kEngineName << ": " << held;
      }
    }
    if (t.info().sm_version == 90 && !dgrad) {
      if (cp.params.N <= 64)  // 64 output channels or fewer: a 128-wide tile would be half padding
        for (int st : {6, 4}) settings.push_back({.core = 1, .tile_m = 128, .tile_n = 64, .stages = st});
      for (auto [bn, st] : {std::pair{128, 5}, {128, 4}, {256, 4}, {256, 3}})
        settings.push_back({.core = 1, .tile_m = 128, .tile_n = bn, .stages = st});
      // Split-K where each split keeps at least 4 of the 128-byte k steps (the stage ring's depth).
      const int64_t bk = tf32 ? 32 : 64, ktiles = (cp.params.K + bk - 1) / bk;
      for (int sk : {2, 3, 4, 5, 6, 8})
        if (ktiles >= 4 * sk) settings.push_back({.core = 1, .tile_m = 128, .tile_n = 128, .stages = 4, .split_k = sk});
    }
    for (auto [bm, bn] : {std::pair{128, 128}, {128, 64}, {64, 128}, {64, 64}})
      for (int st : {4, 3}) settings.push_back({.core = 0, .tile_m = bm, .tile_n = bn, .stages = st});
    for (auto& k : settings) k.tf32 = tf32;
    return ranked(p, t, settings);
  }

  // Cores 2 and 3: each whole-tile setting of one CTA again with the register epilogue (epilogue=1)
  // where the fused epilogue allows it and its output tiles fit beside the stages
  // (CudaConvRegisterEpilogue.* against ref on a GPU; a conv_dgrad's phases where each phase's
  // sub-grid is a TMA map, CudaConvDgradPhases.*); where not, the reason is logged (DNNGRAPH_LOG_LEVEL).
  // Not the forms whose wgmma ptxas serializes (register_epilogue_unserialized).
  static void add_register_epilogue(const Partition& p, const Target& t, std::vector<ConvKnobs>& out) {
    Pieces pc;
    std::string why;
    if (!std::any_of(out.begin(), out.end(), [](const ConvKnobs& k) { return k.core >= 2; })) return;
    if (!conv::describe_conv(p, pc.cp, why) || !plan_epilogue(p, pc.cp.axes, t.dynamic_shapes, pc.epi, why)) return;
    if (!cuda::register_epilogue(pc.epi, why)) {
      DG_LOG(DEBUG) << kEngineName << ": no epilogue=1 plans (registers + TMA store): " << why;
      return;
    }
    if (pc.cp.dgrad && (!conv::dgrad_phases(pc.cp, pc.phases, why) || !dgrad_register_epilogue(pc, why))) {
      DG_LOG(DEBUG) << kEngineName << ": no epilogue=1 plans for the conv_dgrad's phases: " << why;
      return;
    }
    const size_t n = out.size();
    for (size_t i = 0; i < n; ++i) {
      ConvKnobs k = out[i];
      k.epilogue = 1;
      if (k.core == 4 && !halo_register_epilogue_rule(pc.epi).empty()) continue;
      if (!register_epilogue_unserialized(pc.epi, k.pingpong, false)) continue;
      if (k.core >= 2 && conv::conv_rules(k).empty()) out.push_back(k);
    }
  }

  // Every core multiplies on tensor cores (mma.sync, wgmma).
  std::vector<NumericalNote> numerical_notes(const Partition& p, const Target&, const Knobs&) const override {
    return tensor_core_notes(p);
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    ConvKnobs knobs;
    if (!parse(k, knobs)) return 1e9;
    const Config c = config_of(knobs);
    std::string why;
    double padded = 1.0, fixup = 0.0;
    ConvProblem cp;
    if (conv::describe_conv(p, cp, why)) {
      // Wave cost: SM slots x each unit's time in k steps (conv::unit_steps: its fill and epilogue
      // too) over the useful tiles x k steps. A split-K unit also publishes its partial sums, and the
      // tile's last one reads them all back: measured on an H200 (2026-11-29) at ~6 k steps' time per unit.
      conv::HaloTiles halo;
      const int64_t tm = c.core == 4 && conv::halo_view(cp, halo, why) ? conv::halo_tiles_m(cp.params, halo)
                                                                       : (cp.params.M + c.bm - 1) / c.bm;
      const int64_t tn = (cp.params.N + c.bn - 1) / c.bn;
      const int64_t sms = std::max(1, t.info().multiprocessors);
      const int64_t kt = conv::tile_ksteps(c, cp.params);
      const int64_t units = tm * tn * c.splits;
      const auto waves = [&](int64_t n) { return static_cast<double>((n + sms - 1) / sms * sms); };
      const double useful = static_cast<double>(cp.params.M) * static_cast<double>(cp.params.N) *
                            static_cast<double>(std::max<int64_t>(kt, 1));
      // Split clusters add their sums in distributed shared memory: ~2 k steps, no memset (RN50
      // C512 7², H100: split_k 2 0.0217 ms against 0.0245 through global memory).
      const int64_t publish = c.splits == 1 ? 0 : c.split_cluster ? 2 : 6;
      // (3xTF32 keeps the 6 steps though its steps take three times as long: a third of them ranked
      // split_k 4 first at RN50 C256 14², which ran 1.08x slower than whole tiles; H100, 2026-12-07.)
      const double per_unit = conv::unit_steps(c, (kt + c.splits - 1) / c.splits) + static_cast<double>(publish);
      padded = waves(units) * per_unit * c.bm * c.bn / useful;
      if (c.splits > 1 && !c.split_cluster) fixup = 1e-6;  // the counters' memset
      // A conv_dgrad on core 3: its phases' waves of tiles, each with only its own taps' k steps,
      // against the partition's FLOPs (every tap of the filter), and ~2 us per further phase (its
      // CTAs' start and drain; the CONV_DGRAD calibration was measured with this term).
      if (std::vector<conv::DgradPhase> phases; c.core == 3 && cp.dgrad && conv::dgrad_phases(cp, phases, why)) {
        double slots = 0.0;
        for (const conv::DgradPhase& ph : phases) {
          const int64_t units_ph = (ph.fprop.params.M + c.bm - 1) / c.bm * tn;
          slots += waves(units_ph) * conv::unit_steps(c, conv::im2col_ktiles(ph.fprop.params, c.bk()));
        }
        padded = slots * c.bm * c.bn / useful;
        fixup = 2e-6 * static_cast<double>(phases.size() - 1);
      }
    }
    // Core 1 is bound by its activation gathers more than by the MMAs (about the same time per
    // 64-deep k step whatever the tile width: unit_steps counts a 64-wide tile's step twice).
    // Cores 2 and 3 have no gathering threads: the matmul's TMA core (cuda_gemm_wgmma_tma's 0.68-0.75).
    const double eff = c.core >= 2 ? conv::tma_core_efficiency(c) * (c.epilogue ? kRegisterEpilogueGain : 1.0)
                       : c.core == 1 ? (c.bn == 128 ? 0.60 : 0.62) * (c.stages >= 4 ? 1.0 : 0.97)
                                     : (c.bm * c.bn >= 128 * 128 ? 0.30 : c.bm * c.bn >= 128 * 64 ? 0.27 : 0.22) *
                                           (c.stages >= 4 ? 1.0 : 0.95);
    // TF32's peak is half of bf16's (495 of 989 TFLOP/s dense on an H100/H200); 3xTF32's rate
    // divides the FLOPs (as a lower efficiency it put RN50's 1x1 C256 56² at 6x its measured time).
    const double rate = c.tf32 ? 0.5 : 1.0, flops = partition_flops(p) * padded / (c.tf32x3 ? kTf32x3Rate : 1.0);
    return roofline_seconds(flops, partition_bytes(p), t.info(), eff * rate, 5e-6) + fixup;
  }

 private:
  Status make(const Partition& p, const Target& t, const Knobs& k, ByteReader* r,
              std::unique_ptr<Plan>& plan) const override {
    ConvKnobs knobs;
    if (auto s = read_knobs(schema_, k, ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, knobs); !s.ok()) return s;
    Config c = config_of(knobs);
    if (c.core > 0 && t.info().sm_version != 90)
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
              std::string(kEngineName) + ": core=" + std::to_string(c.core) + " (wgmma) needs sm_90a; the device is sm_" +
                  std::to_string(t.info().sm_version)};
    Pieces pc;
    if (auto s = prepare(p, t, pc); !s.ok()) return s;
    const std::string where = std::string(kEngineName) + ": node '" +
                              p.graph->nodes[static_cast<size_t>(anchor_node(p))].name + "', tensor '" +
                              p.tensor(pc.cp.x).name + "': ";
    if (std::string why; c.core == 2 && !conv::gemm_view(pc.cp, pc.pixel_stride, why))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + "core=2 runs a convolution as a plain GEMM, but " + why};
    if (std::string why; c.core == 3 && pc.cp.dgrad) {
      if (!conv::dgrad_phases(pc.cp, pc.phases, why))
        return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + "core=3 runs a conv_dgrad by phases, but " + why};
      if (const std::string rule = conv::dgrad_phase_rule(c, pc.cp.dtype); !rule.empty())
        return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + rule};
    } else if (c.core == 3 && !conv::im2col_view(pc.cp, why)) {
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + "core=3 loads the activation by im2col TMA, but " + why};
    }
    if (std::string why; c.core == 4 && !halo_fits(pc.cp, c, pc.halo, why))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + "core=4 reads the activation as halo tiles, but " + why};
    if (const std::string rule = halo_register_epilogue_rule(pc.epi); c.core == 4 && c.epilogue && !rule.empty())
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + rule};
    if (std::string why; c.epilogue && !cuda::register_epilogue(pc.epi, why))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + "epilogue=1 runs the epilogue in registers, but " + why};
    if (std::string why; c.epilogue && !pc.phases.empty() && !dgrad_register_epilogue(pc, why))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + "epilogue=1 stores the phases by TMA boxes, but " + why};
    // (A conv_dgrad's phases share one kernel: the deepest one sizes the resident filters.)
    const ConvProblem& sized = pc.phases.empty() ? pc.cp : conv::deepest_phase(pc.phases).fprop;
    if (std::string why; c.resident_b && !resident_fits(sized, c, why))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + "resident_b=1: " + why};
    if (const std::string rule = float_inputs_rule(c, pc.cp); !rule.empty())
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + rule};
    if (c.core > 0 && pc.cp.params.M + 128 >= (int64_t{1} << 31))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
              std::string(kEngineName) + ": core=" + std::to_string(c.core) + " indexes output pixels in 32 bits; this convolution has " +
                  std::to_string(pc.cp.params.M) + " (use core=0)"};
    if ((c.core == 1 && pc.cp.dgrad) || (c.core > 0 && pc.cp.wgrad))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
              std::string(kEngineName) + ": conv_dgrad runs on core=0 and core=3, conv_wgrad on core=0 only"};
    KernelBuild kb;
    kb.source = conv::kernel_source(pc, c, *p.graph);
    const bool fin = pc.epi.L.needs_finalize();
    if (auto s = compile_or_reload(t, r, kEngineName, kFpropKernel, c.smem_bytes(), fin, kb); !s.ok()) return s;
    DG_LOG(DEBUG) << kEngineName << ": " << (c.tf32 ? "tf32 " : c.tf32x3 ? "3xtf32 " : "") << c.bm << "x" << c.bn
                  << " stages=" << c.stages
                  << (c.epilogue ? " epilogue in registers, TMA store " : " ") << pc.epi.L.describe();
    plan = std::make_unique<ConvPlan>(p, std::move(pc), c, std::move(kb));
    return {};
  }
};

}  // namespace

const Engine& conv_implicit_gemm_engine() { return engine_instance<ConvImplicitGemmEngine>(); }

// For the NVRTC compile test (no GPU): the kernel source of a conv_fprop partition.
namespace conv {
bool fprop_source_for_test(const Partition& p, int core, int bm, int bn, int stages, std::string& src,
                           std::string& why, int splits, bool pingpong, bool resident, int cluster, int epilogue,
                           int cluster_n, bool split_cluster) {
  Pieces pc;
  if (!describe_conv(p, pc.cp, why)) return false;
  if (!plan_epilogue(p, pc.cp.axes, true, pc.epi, why)) return false;
  if (core == 2 && !gemm_view(pc.cp, pc.pixel_stride, why)) return false;
  if (core == 3 && (pc.cp.dgrad ? !dgrad_phases(pc.cp, pc.phases, why) : !im2col_view(pc.cp, why))) return false;
  Config c{core, bm, bn, stages, splits, pc.cp.dtype == DataType::FLOAT && !pc.cp.exact_fp32, pingpong, resident};
  c.tf32x3 = pc.cp.exact_fp32;
  c.cluster = cluster;
  c.cluster_n = cluster_n;
  c.epilogue = epilogue;
  c.split_cluster = split_cluster;
  if (core == 4 && !halo_fits(pc.cp, c, pc.halo, why)) return false;
  if (resident && !resident_fits(pc.phases.empty() ? pc.cp : deepest_phase(pc.phases).fprop, c, why)) return false;
  if (epilogue && (!cuda::register_epilogue(pc.epi, why) || (pc.cp.dgrad && !dgrad_register_epilogue(pc, why)))) return false;
  if (core == 4 && epilogue && !(why = halo_register_epilogue_rule(pc.epi)).empty()) return false;
  src = kernel_source(pc, c, *p.graph);
  return true;
}
}  // namespace conv

}  // namespace dnngraph::cuda
