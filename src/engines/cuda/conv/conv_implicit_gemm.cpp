// cuda_conv_implicit_gemm: the engine (knobs, cost) and its plan (kernel arguments, TMA map,
// launch). The kernels: kernels/conv_implicit_gemm.cuh (mma.sync) and kernels/conv_wgmma.cuh.
#include "engines/cuda/conv/conv_implicit_gemm.hpp"

#include <algorithm>
#include <sstream>

#include "core/log.hpp"
#include "engines/cuda/common/compiled_engine.hpp"
#include "engines/cuda/common/tensor_core_notes.hpp"
#include "engines/cuda/common/kernel_build.hpp"
#include "engines/cuda/common/kernel_config.hpp"
#include "engines/cuda/common/register_epilogue.hpp"
#include "engines/cuda/conv/conv_gemm_view.hpp"
#include "engines/cuda/conv/conv_im2col_view.hpp"
#include "engines/cuda/conv/conv_problem.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/driver_ext.hpp"
#include "planning/engine_instance.hpp"

namespace dnngraph::cuda {
namespace {

using conv::ConvProblem;
constexpr const char* kEngineName = "cuda_conv_implicit_gemm";
constexpr const char* kFpropKernel = "dg_conv_fprop";
// The register epilogue's speed-up over the staged one on the same tile (knob epilogue=1), the
// least measured on an H200 (2026-12-05, docs/perf.md): 1.07-1.13 on the tutorial and RN50 layers.
constexpr double kRegisterEpilogueGain = 1.07;

// core 0: mma.sync (any sm_80+), tiles bm x bn x 32 (tf32: x 16, the same bytes); core 1: wgmma +
// TMA (sm_90a), 128 x bn x 64 (tf32: x 32, one 128-byte row either way), optionally split-K:
// `splits` CTAs share a tile's k steps, the last one sums and runs the epilogue. Core 2: 1x1
// convolutions as plain GEMMs (conv_gemm_view.hpp) on the matmul's wgmma kernel, both operands by
// TMA, the same tiles and split-K, or ping-pong consumers with 128-wide tiles. Core 3: any other
// fprop whose windows fit the im2col maps (conv_im2col_view.hpp): TMA im2col loads issued by one
// producer thread (kernels/conv_im2col_tma.cuh), the same consumers as core 2.
struct Config {
  int core = 0;
  int bm = 128, bn = 128, stages = 4;
  int splits = 1;
  bool tf32 = false;  // FLOAT inputs as TF32 (core 0 rounds them, core 1's wgmma truncates them)
  bool pingpong = false;  // cores 2 and 3
  bool resident_b = false;  // core 3: every k step's filter tile stays in shared memory
  int resident_kt = 0;      // their count (the problem's k steps), set with resident_b
  int cluster = 1;          // core 3: 2 = pairs of CTAs sharing each filter tile by TMA multicast
                            // (cooperative or ping-pong consumers)
  // Cores 2 and 3: 1 = the epilogue in registers, the tile stored by TMA
  // (common/register_epilogue.hpp): per consumer warpgroup a ring of two 8 KB boxes (64 rows x 64
  // 16-bit columns; one for 64-wide tiles) in place of the staged epilogue's fp32 chunks.
  int epilogue = 0;
  int bk() const { return core ? (tf32 ? 32 : 64) : tf32 ? 16 : 32; }
  int threads() const { return core ? 384 : 128; }
  int smem_bytes() const {
    // Resident filters: A stages, staging, barriers, then (1024-aligned) one filter tile per k step.
    if (resident_b)
      return 1024 + (stages * bm * 128 + 2 * 64 * 36 * 4 + 16 * stages + 8 + 1023) / 1024 * 1024 + resident_kt * bn * 128;
    if (core) return 1024 + stages * (bm + bn) * 128 + (epilogue ? 2 * std::min(bn / 64, 2) * 8192 : 2 * 64 * 36 * 4) + 16 * stages;
    return std::max(stages * (bm + bn) * 64, bm * (bn + 4) * 4);  // 64 bytes of k per tile row
  }
};

// The engine's knobs, as knob_space prints them: split_k and tf32 only where they are set.
struct ConvKnobs {
  int64_t core = 0;
  int64_t tile_m = 128, tile_n = 128, stages = 4;
  int64_t split_k = 1, tf32 = 0, pingpong = 0, resident_b = 0, cluster = 1, epilogue = 0;
};

Config config_of(const ConvKnobs& k) {
  Config c{static_cast<int>(k.core), static_cast<int>(k.tile_m), static_cast<int>(k.tile_n),
           static_cast<int>(k.stages), static_cast<int>(k.split_k), k.tf32 == 1, k.pingpong == 1, k.resident_b == 1};
  c.cluster = static_cast<int>(k.cluster);
  c.epilogue = static_cast<int>(k.epilogue);
  return c;
}

std::string conv_rules(const ConvKnobs& k) {
  if (k.split_k > 1 && k.core == 0) return "split_k above 1 runs on the wgmma cores (core=1..3) only";
  if (k.core == 0 && k.tile_n == 256) return "the mma.sync core (core=0) takes tile_n 64 or 128";
  if (k.core > 0 && k.tile_m != 128) return "the wgmma cores (core=1..3) take tile_m 128";
  if (k.pingpong && (k.core < 2 || k.tile_n == 256 || k.split_k > 1))
    return "pingpong=1 goes only with core=2 or 3, tile_n 64 or 128 and split_k 1";
  if (k.core >= 2 && k.split_k > 1 && k.tile_n != 128) return "split_k above 1 on core=2 or 3 takes tile_n 128";
  if (k.resident_b && (k.core != 3 || k.pingpong)) return "resident_b=1 goes only with core=3 and pingpong 0";
  if (k.cluster == 2 && (k.core != 3 || k.split_k > 1 || k.tf32 || k.resident_b))
    return "cluster=2 goes only with core=3 and whole tiles of 16-bit inputs (split_k 1, tf32 0, resident_b 0)";
  if (k.epilogue && (k.core < 2 || k.split_k > 1 || k.resident_b))
    return "epilogue=1 (registers + TMA store) goes only with core=2 or 3 and whole tiles (split_k 1, resident_b 0)";
  if (k.core > 0 && !k.resident_b && config_of(k).smem_bytes() > 227 * 1024)
    return "the wgmma core's " + std::to_string(config_of(k).smem_bytes()) +
           " bytes of shared memory for these stages exceed 227 KB";
  return "";
}

const KnobSchema<ConvKnobs> kSchema{kEngineName,
                                    {{"core", &ConvKnobs::core, 0, 3},
                                     {"tile_m", &ConvKnobs::tile_m, 64, 128, {64, 128}},
                                     {"tile_n", &ConvKnobs::tile_n, 64, 256, {64, 128, 256}},
                                     {"stages", &ConvKnobs::stages, 2, 8},
                                     {"split_k", &ConvKnobs::split_k, 1, 16, {}, false},
                                     {"tf32", &ConvKnobs::tf32, 0, 1, {}, false},
                                     {"pingpong", &ConvKnobs::pingpong, 0, 1, {}, false},
                                     {"resident_b", &ConvKnobs::resident_b, 0, 1, {}, false},
                                     {"cluster", &ConvKnobs::cluster, 1, 2, {}, false},
                                     {"epilogue", &ConvKnobs::epilogue, 0, 1, {}, false}},
                                    conv_rules};

struct Pieces {
  ConvProblem cp;
  EpiloguePlan epi;
  int64_t pixel_stride = 0;  // core 2: the activation's row stride (conv_gemm_view.hpp)
};

Status prepare(const Partition& p, const Target& t, Pieces& out) {
  if (!t.device().is_cuda() || !t.handle->cuda)
    return {ErrorCode::GRAPH_NOT_SUPPORTED, "runs on CUDA handles; this one is " + t.device().to_string()};
  if (t.info().sm_version < 80)
    return {ErrorCode::GRAPH_NOT_SUPPORTED,
            "needs sm_80 or later (mma.sync bf16); the device is sm_" + std::to_string(t.info().sm_version)};
  std::string why;
  if (!conv::describe_conv(p, out.cp, why)) return {ErrorCode::GRAPH_NOT_SUPPORTED, why};
  if (!plan_epilogue(p, out.cp.axes, t.dynamic_shapes, out.epi, why))
    return {ErrorCode::GRAPH_NOT_SUPPORTED, "the epilogue does not fit: " + why};
  return {};
}

// kernels/conv_implicit_gemm.cuh's and conv_wgmma.cuh's configurations: the core's tile.
template <class Tile>
std::string config_source(const Tile& t) {
  return KernelConfigSource().tile(t).type("Epilogue", "dg_gen::Epilogue").str();
}

// DNNGRAPH_CONV_EPILOGUE_PROBE, for measurements only (bench/gpu/conv_epilogue.sh): 2 and 3 turn
// staged epilogues of cores 2 and 3 into diagnostic ones (2: the staging and its barriers only, 3:
// none; outputs are not written), to time a tile's main loop and epilogue apart. The mode is in the
// source, so the kernel cache keeps the variants apart.
int epilogue_probe() {
  const char* v = std::getenv("DNNGRAPH_CONV_EPILOGUE_PROBE");
  return v ? std::atoi(v) : 0;
}

// Cores 2 and 3: kernels/epilogue_tma_store.cuh's mode.
int epilogue_mode(const Config& c, const EpiloguePlan& epi) {
  if (c.epilogue) return cuda::register_epilogue_mode(epi);
  const int m = epilogue_probe();
  return !c.resident_b && (m == 2 || m == 3) ? m : 0;
}

// The kernel's configuration members after the tile's (the epilogue mode, the tiled-A probe), and
// (register epilogue) the output map argument.
// DNNGRAPH_CONV_PROBE_TILED_A=1 (measurements only, wrong results): core 3's 128-wide cooperative or
// ping-pong tiles load their activations by a tiled TMA of the filter map (conv_im2col_tma.cuh's
// ProbeTiledAOf), to time the im2col mode apart.
void add_kernel_modes(KernelConfigSource& s, const Config& c, const EpiloguePlan& epi) {
  if (const int m = epilogue_mode(c, epi)) s.value("kEpilogue", m);
  const char* probe = std::getenv("DNNGRAPH_CONV_PROBE_TILED_A");
  if (probe && *probe == '1' && c.core == 3 && c.bn == 128 && c.cluster == 1 && !c.resident_b) s.value("kProbeTiledA", 1);
}
const char* output_map_param(const Config& c) { return c.epilogue ? ", const __grid_constant__ dg::TmaDesc my" : ""; }
const char* output_map_arg(const Config& c) { return c.epilogue ? ", &my" : ""; }

std::string source(const Pieces& pc, const Config& c, const ir::Graph& g) {
  std::ostringstream os;
  os << "// Generated by dnngraph's cuda_conv_implicit_gemm engine.\n#include \"dg_math.cuh\"\n";
  if (c.core == 2) {  // the matmul's kernel: A = X as [pixels, C], B = W as [K, C], both K-major
    KernelConfigSource ks;
    ks.tile(WgmmaTile{pc.cp.dtype, c.bn, c.stages, c.splits > 1})
        .flag("kAKMajor", true)
        .flag("kBKMajor", true)
        .flag("kPingpong", c.pingpong)
        .value("kCluster", 1);
    add_kernel_modes(ks, c, pc.epi);
    os << "#include \"gemm_wgmma.cuh\"\n\n" << epilogue_source(pc.epi, g, c.epilogue == 1) << "\n"
       << ks.type("Epilogue", "dg_gen::Epilogue").str() << "extern \"C\" __global__ void __launch_bounds__(384, 1) "
       << kFpropKernel
       << "(const dg::GemmParams g, const dg::PointwiseParams p, const __grid_constant__ dg::TmaDesc mx, "
          "const __grid_constant__ dg::TmaDesc mw"
       << output_map_param(c) << ") {\n  dg::gemm_wgmma<" << kKernelConfig << ">(g, p, &mx, &mw" << output_map_arg(c)
       << ");\n}\n";
  } else if (c.core == 3) {  // im2col TMA loads of X, a (C, taps, K) map of W
    KernelConfigSource ks;
    ks.tile(WgmmaTile{pc.cp.dtype, c.bn, c.stages, c.splits > 1})
        .flag("kPingpong", c.pingpong)
        .value("kRank", conv::im2col_rank(pc.cp.params))
        .flag("kResidentB", c.resident_b)
        .value("kCluster", c.cluster);
    add_kernel_modes(ks, c, pc.epi);
    os << "#include \"conv_im2col_tma.cuh\"\n\n" << epilogue_source(pc.epi, g, c.epilogue == 1) << "\n"
       << ks.type("Epilogue", "dg_gen::Epilogue").str()
       // Clusters as a compile-time attribute: cuLaunchKernel then launches the grid in clusters.
       << "extern \"C\" __global__ void "
       << (c.cluster > 1 ? "__cluster_dims__(" + std::to_string(c.cluster) + ", 1, 1) " : "")
       << "__launch_bounds__(384, 1) " << kFpropKernel
       << "(const dg::ConvParams cp, const dg::PointwiseParams p, const __grid_constant__ dg::TmaDesc mx, "
          "const __grid_constant__ dg::TmaDesc mw"
       << output_map_param(c) << ") {\n  dg::conv_fprop_im2col<" << kKernelConfig << ">(cp, p, &mx, &mw"
       << output_map_arg(c) << ");\n}\n";
  } else if (c.core == 1) {
    os << "#include \"conv_wgmma.cuh\"\n\n" << epilogue_source(pc.epi, g) << "\n"
       << config_source(WgmmaTile{pc.cp.dtype, c.bn, c.stages, c.splits > 1})
       << "extern \"C\" __global__ void __launch_bounds__(384, 1) " << kFpropKernel
       << "(const dg::ConvParams cp, const dg::PointwiseParams p, const __grid_constant__ dg::TmaDesc mw) {\n"
       << "  dg::conv_fprop_wgmma<" << kKernelConfig << ">(cp, p, &mw);\n}\n";
  } else {
    const char* entry = pc.cp.dgrad ? "conv_dgrad_mma_sync" : pc.cp.wgrad ? "conv_wgrad_mma_sync" : "conv_fprop_mma_sync";
    os << "#include \"conv_implicit_gemm.cuh\"\n\n" << epilogue_source(pc.epi, g) << "\n"
       << config_source(MmaSyncTile{pc.cp.dtype, c.bm, c.bn, c.bk(), 2, 2, c.stages})
       << "extern \"C\" __global__ void __launch_bounds__(128) " << kFpropKernel
       << "(const dg::ConvParams cp, const dg::PointwiseParams p) {\n  dg::" << entry << "<" << kKernelConfig
       << ">(cp, p);\n}\n";
  }
  os << finalize_source(pc.epi.L);
  return os.str();
}

// Resident filters (core 3): every output channel in one tile column and every k step's filter
// tile beside the stages in 227 KB; sets c.resident_kt.
bool resident_fits(const ConvProblem& cp, Config& c, std::string& why) {
  // Capped where the count alone already overflows 227 KB, so that smem_bytes() stays in int.
  c.resident_kt = static_cast<int>(std::min<int64_t>(conv::im2col_ktiles(cp.params, c.bk()), 4096));
  if (cp.params.N > c.bn) {
    why = std::to_string(cp.params.N) + " output channels do not fit one tile column of " + std::to_string(c.bn);
    return false;
  }
  if (c.smem_bytes() > 227 * 1024) {
    why = "the " + std::to_string(c.resident_kt) + " filter tiles and " + std::to_string(c.stages) + " stages need " +
          std::to_string(c.smem_bytes()) + " bytes of shared memory, above 227 KB";
    return false;
  }
  return true;
}

// The filters as a K-major [Kout][taps * C] matrix for TMA: boxes of one 128-byte k step (64
// 16-bit or 32 fp32 elements) x tile_n rows.
cuda::TensorMapSpec filter_map(const ConvProblem& cp, const Config& c) {
  cuda::TensorMapSpec s;
  s.dtype = cp.dtype;
  const int64_t es = size_of(cp.dtype);
  s.rank = 3;
  s.dims[0] = static_cast<uint64_t>(cp.params.K);
  s.dims[1] = static_cast<uint64_t>(cp.params.N);
  s.dims[2] = 1;
  s.strides_bytes[0] = static_cast<uint64_t>((std::max<int64_t>(cp.params.w_stride_k, 16 / es) * es + 15) / 16 * 16);
  s.strides_bytes[1] = (s.strides_bytes[0] * s.dims[1] + 15) / 16 * 16;
  s.box[0] = static_cast<uint32_t>(128 / es);
  s.box[1] = static_cast<uint32_t>(c.bn);
  s.box[2] = 1;
  return s;
}

class ConvPlan final : public KernelPlan {
 public:
  ConvPlan(const Partition& p, Pieces pc, Config c, KernelBuild k)
      : KernelPlan(p, std::move(k)), pc_(std::move(pc)), c_(c) {}

  // The epilogue's workspace, then (split-K) the partial sums and one counter per tile.
  int64_t epilogue_bytes() const { return (pc_.epi.L.workspace_bytes + 255) / 256 * 256; }
  int64_t tiles() const {
    return ((pc_.cp.params.M + c_.bm - 1) / c_.bm) * ((pc_.cp.params.N + c_.bn - 1) / c_.bn);
  }
  int64_t workspace_size() const override {
    if (c_.splits == 1) return pc_.epi.L.workspace_bytes;
    return epilogue_bytes() + tiles() * c_.splits * c_.bm * c_.bn * 4 + tiles() * 4;
  }

  Status execute(const ExecArgs& args) const override {
    HandleImpl& h = args.handle;
    if (!h.device.is_cuda() || !h.cuda) return {ErrorCode::GRAPH_EXECUTION_FAILED, "conv plan: not a CUDA handle"};
    if (c_.splits > 1 && !args.workspace)
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
    if (c_.splits > 1) {
      cp.ws = static_cast<char*>(args.workspace) + epilogue_bytes();
      char* counters = static_cast<char*>(cp.ws) + tiles * c_.splits * c_.bm * c_.bn * 4;
      if (auto s = fill32(h, counters, 0, static_cast<size_t>(tiles)); !s.ok()) return s;
    }
    cuda::TensorMap my;  // the register epilogue's output map
    if (c_.epilogue)
      if (auto s = cuda::encode_register_epilogue_map(part_, pc_.epi, args, my); !s.ok()) return s;
    if (c_.core == 2) return launch_gemm_view(h, cp, pp, my);
    if (c_.core == 3) return launch_im2col(h, cp, pp, my);
    if (c_.core == 1) {
      cuda::TensorMap mw;
      if (auto s = cuda::encode_tensor_map(filter_map(pc_.cp, c_), cp.w, mw); !s.ok()) return s;
      void* kargs[] = {&cp, &pp, &mw};
      if (auto s = launch_persistent(h, kargs, tiles * c_.splits); !s.ok()) return s;
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
  // The wgmma cores' launch: persistent CTAs (at most one per SM) walking `units` (tile, k range)
  // units, 3 warpgroups each; with clusters, pairs of CTAs walking pairs of pixel tiles.
  Status launch_persistent(HandleImpl& h, void** kargs, int64_t units) const {
    const int64_t cl = c_.cluster;
    const auto grid =
        static_cast<unsigned>(std::min<int64_t>((units + cl - 1) / cl, h.cuda->multiprocessors / cl) * cl);
    return cuda::launch_3d(h, k_.main, {grid, 1, 1}, 384, static_cast<unsigned>(c_.smem_bytes()), kargs, kFpropKernel);
  }

  // Core 2: the matmul kernel over X as a [pixels, C] matrix (conv_gemm_view.hpp), then the finalize.
  Status launch_gemm_view(HandleImpl& h, const conv::ConvParams& cp, codegen::PointwiseParams& pp,
                          cuda::TensorMap& my) const {
    gemm::GemmParams g = conv::gemm_view_params(cp, pc_.pixel_stride, c_.splits, cp.ws);
    cuda::TensorMap mx, mw;
    if (auto s = cuda::encode_tensor_map(conv::gemm_view_activation_map(pc_.cp, pc_.pixel_stride), cp.x, mx); !s.ok())
      return s;
    if (auto s = cuda::encode_tensor_map(filter_map(pc_.cp, c_), cp.w, mw); !s.ok()) return s;
    void* kargs[] = {&g, &pp, &mx, &mw, &my};  // (my: read only by epilogue=1's kernel)
    if (auto s = launch_persistent(h, kargs, int64_t{cp.tiles_m} * cp.tiles_n * c_.splits); !s.ok()) return s;
    return run_finalize(h, pc_.epi.L, k_.finalize, pp);
  }

  // Core 3: the im2col TMA kernel (split-K units walk its (tap, channel block) k steps), then the finalize.
  Status launch_im2col(HandleImpl& h, conv::ConvParams& cp, codegen::PointwiseParams& pp, cuda::TensorMap& my) const {
    cuda::TensorMap mx, mw;
    if (auto s = cuda::encode_im2col_map(conv::im2col_activation_map(pc_.cp, c_.bk()), cp.x, mx); !s.ok()) return s;
    // With clusters each CTA loads half of the filter tile (its rank's output channels).
    if (auto s = cuda::encode_tensor_map(conv::im2col_filter_map(pc_.cp, c_.bk(), c_.bn / c_.cluster), cp.w, mw); !s.ok())
      return s;
    void* kargs[] = {&cp, &pp, &mx, &mw, &my};  // (my: read only by epilogue=1's kernel)
    const int64_t tiles_m = c_.cluster > 1 ? (cp.tiles_m + 1) / 2 * 2 : cp.tiles_m;  // the pairs' tiles
    if (auto s = launch_persistent(h, kargs, tiles_m * cp.tiles_n * c_.splits); !s.ok()) return s;
    return run_finalize(h, pc_.epi.L, k_.finalize, pp);
  }

  Pieces pc_;
  Config c_;
};

class ConvImplicitGemmEngine final : public PreparedEngine<ConvKnobs, Pieces, prepare> {
 public:
  ConvImplicitGemmEngine() : PreparedEngine(kEngineName, kSchema) {}

  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const override {
    std::vector<ConvKnobs> settings;
    ConvProblem cp;
    std::string why;
    const bool described = conv::describe_conv(p, cp, why);
    const bool dgrad = described && (cp.dgrad || cp.wgrad);
    // FLOAT inputs get here only where the graph allows TF32 (describe_conv): every knob set takes tf32=1.
    const int64_t tf32 = described && cp.dtype == DataType::FLOAT ? 1 : 0;
    if (int64_t stride = 0; t.info().sm_version == 90 && described && conv::gemm_view(cp, stride, why))
      add_gemm_view(cp, t, tf32 ? 32 : 64, settings);
    else if (t.info().sm_version == 90 && described && conv::im2col_view(cp, why))
      add_im2col(cp, t, tf32 ? 32 : 64, settings);
    add_register_epilogue(p, t, settings);
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

  // Core 2 (1x1 convolutions as GEMMs): 64-wide tiles for 64 output channels or fewer, else
  // 256-wide ones and 128-wide ping-pong; split-K where the 128 x 128 tiles under-fill the
  // multiprocessors and each split keeps at least 8 k steps (as cuda_gemm_wgmma_tma's).
  static void add_gemm_view(const ConvProblem& cp, const Target& t, int64_t bk, std::vector<ConvKnobs>& out) {
    if (cp.params.N <= 64) {
      for (int st : {6, 4, 8}) out.push_back({.core = 2, .tile_m = 128, .tile_n = 64, .stages = st});
      out.push_back({.core = 2, .tile_m = 128, .tile_n = 64, .stages = 8, .pingpong = 1});
    } else {
      out.push_back({.core = 2, .tile_m = 128, .tile_n = 256, .stages = 4});
      out.push_back({.core = 2, .tile_m = 128, .tile_n = 128, .stages = 6, .pingpong = 1});
    }
    const int64_t tiles = ((cp.params.M + 127) / 128) * ((cp.params.N + 127) / 128), kt = (cp.params.K + bk - 1) / bk;
    if (tiles < t.info().multiprocessors)
      for (int sk : {2, 4, 8})
        if (kt >= 8 * sk) out.push_back({.core = 2, .tile_m = 128, .tile_n = 128, .stages = 5, .split_k = sk});
  }

  // Cores 2 and 3: each whole-tile setting of one CTA again with the register epilogue (epilogue=1)
  // where the fused epilogue allows it and its output tiles fit beside the stages
  // (CudaConvRegisterEpilogue.* against ref on a GPU); where not, the reason is logged (DNNGRAPH_LOG_LEVEL).
  static void add_register_epilogue(const Partition& p, const Target& t, std::vector<ConvKnobs>& out) {
    Pieces pc;
    std::string why;
    if (!std::any_of(out.begin(), out.end(), [](const ConvKnobs& k) { return k.core >= 2; })) return;
    if (!conv::describe_conv(p, pc.cp, why) || !plan_epilogue(p, pc.cp.axes, t.dynamic_shapes, pc.epi, why)) return;
    if (!cuda::register_epilogue(pc.epi, why)) {
      DG_LOG(DEBUG) << kEngineName << ": no epilogue=1 plans (registers + TMA store): " << why;
      return;
    }
    const size_t n = out.size();
    for (size_t i = 0; i < n; ++i) {
      ConvKnobs k = out[i];
      k.epilogue = 1;
      if (k.core >= 2 && conv_rules(k).empty()) out.push_back(k);
    }
  }

  // Core 3 (im2col TMA): the same tile shapes as core 2; split-K where the 128 x 128 tiles
  // under-fill the multiprocessors and each split keeps at least 4 k steps (as core 1's).
  static void add_im2col(const ConvProblem& cp, const Target& t, int bk, std::vector<ConvKnobs>& out) {
    if (cp.params.N <= 64) {
      for (int st : {6, 4, 8}) out.push_back({.core = 3, .tile_m = 128, .tile_n = 64, .stages = st});
      out.push_back({.core = 3, .tile_m = 128, .tile_n = 64, .stages = 8, .pingpong = 1});
      // Filters resident where they fit beside 4 stages (3x3 x 64 channels: 9 tiles of 8 KB).
      const ConvKnobs resident{.core = 3, .tile_m = 128, .tile_n = 64, .stages = 4, .tf32 = bk == 32, .resident_b = 1};
      Config r = config_of(resident);
      if (std::string why; resident_fits(cp, r, why)) out.push_back(resident);
    } else {
      for (int st : {3, 4}) out.push_back({.core = 3, .tile_m = 128, .tile_n = 256, .stages = st});
      // Clusters of 2 sharing the filter tile where the pairs still fill the multiprocessors: 256-wide
      // cooperative tiles (for the autotuner: slower than without on the tutorial layer, see
      // tma_core_efficiency) and 128-wide ping-pong ones.
      const int64_t pairs = ((cp.params.M + 255) / 256) * ((cp.params.N + 255) / 256);
      const bool clusters = bk == 64 && pairs >= t.info().multiprocessors;
      if (clusters)
        for (int st : {3, 4}) out.push_back({.core = 3, .tile_m = 128, .tile_n = 256, .stages = st, .cluster = 2});
      out.push_back({.core = 3, .tile_m = 128, .tile_n = 128, .stages = 5});
      for (int st : {6, 5}) {
        out.push_back({.core = 3, .tile_m = 128, .tile_n = 128, .stages = st, .pingpong = 1});
        if (clusters && ((cp.params.M + 127) / 128) * ((cp.params.N + 127) / 128) >= 2 * t.info().multiprocessors)
          out.push_back({.core = 3, .tile_m = 128, .tile_n = 128, .stages = st, .pingpong = 1, .cluster = 2});
      }
    }
    const int64_t tiles = ((cp.params.M + 127) / 128) * ((cp.params.N + 127) / 128);
    const int64_t kt = conv::im2col_ktiles(cp.params, bk);
    if (tiles < t.info().multiprocessors) {
      for (int sk : {2, 3, 4, 6, 8})
        if (kt >= 4 * sk) out.push_back({.core = 3, .tile_m = 128, .tile_n = 128, .stages = 5, .split_k = sk});
      // Few pixels, many channels (RN50's 7x7 layers: 52 tiles of 128 x 128 on 132 SMs): twice as
      // many 64-wide tiles, whole, with no partial sums to add up.
      if (cp.params.N > 64) {
        out.push_back({.core = 3, .tile_m = 128, .tile_n = 64, .stages = 8});
        out.push_back({.core = 3, .tile_m = 128, .tile_n = 64, .stages = 8, .pingpong = 1});
      }
    }
  }

  // Cores 2 and 3 have no gathering threads: the matmul's TMA core (cuda_gemm_wgmma_tma's 0.68-0.75),
  // ordered as measured on an H200 (docs/perf.md, 2026-12-02): 64-wide tiles ran fastest with 6
  // stages (8 stages, 128 x 64 ping-pong and resident filters 2-9% slower); on core 3 the
  // cooperative 128-wide tiles led ping-pong ones (0.0182 against 0.0226 ms at C256 14x14).
  // With the register epilogue (H100, 2026-12-05): 64-wide tiles ran fastest with 8 stages, ping-pong
  // 8 within 0-4% (ahead on RN50 C64 56², behind at N8), then 6 and 4 stages; 128-wide cooperative
  // tiles led ping-pong ones at C256 14² and C512 7², tied at C128 28², and clusters of 2 slowed
  // ping-pong 4% on the tutorial layer.
  static double tma_core_efficiency(const Config& c) {
    if (c.bn == 64 && c.epilogue && !c.resident_b)
      return c.pingpong ? 0.744 : c.stages == 8 ? 0.745 : c.stages == 6 ? 0.74 : 0.735;
    if (c.bn == 64)
      return c.resident_b ? 0.71 : c.pingpong ? 0.72 : c.stages == 6 ? 0.74 : c.stages == 4 ? 0.735 : 0.73;
    if (c.bn == 128)
      return (c.core == 3 ? (c.pingpong ? 0.69 : 0.70) : (c.pingpong ? 0.75 : 0.68)) * (c.cluster > 1 ? 0.96 : 1.0);
    if (c.core != 3) return c.stages >= 4 ? 0.75 : 0.745;
    // Core 3, 128 x 256 on the tutorial layer (H200, 2026-12-02, staged epilogue): 3 stages 0.1132 ms,
    // 4 stages 0.1213, clusters of 2 0.1213 (3) and 0.1270 (4): the shared filter tile did not pay
    // there. With the register epilogue's 16 KB ring, 4 stages fit beside it.
    if (c.epilogue) return (c.stages == 4 ? 0.76 : 0.75) * (c.cluster > 1 ? 0.99 : 1.0);
    return (c.stages == 3 ? 0.75 : 0.70) * (c.cluster > 1 ? 0.93 : 1.0);
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
      // Wave cost: SM slots x k steps per unit (+1 for the pipeline's fill and the epilogue) over
      // the useful tiles x k steps. A split-K unit also publishes its partial sums, and the tile's
      // last one reads them all back: measured on an H200 (2026-11-29) at ~6 k steps' time per unit.
      const int64_t tm = (cp.params.M + c.bm - 1) / c.bm, tn = (cp.params.N + c.bn - 1) / c.bn;
      const int64_t sms = std::max(1, t.info().multiprocessors);
      // Core 3's k steps are (tap, channel block) pairs.
      const int64_t kt = c.core == 3 ? conv::im2col_ktiles(cp.params, c.bk()) : (cp.params.K + c.bk() - 1) / c.bk();
      const int64_t units = tm * tn * c.splits;
      padded = static_cast<double>(tm * c.bm * tn * c.bn) / static_cast<double>(cp.params.M * cp.params.N);
      const int64_t per_unit = (kt + c.splits - 1) / c.splits + 1 + (c.splits > 1 ? 6 : 0);
      padded *= static_cast<double>((units + sms - 1) / sms * sms * per_unit) / static_cast<double>(tm * tn * (kt + 1));
      if (c.splits > 1) fixup = 1e-6;  // the counters' memset
    }
    // The wgmma core is bound by its activation gathers more than by the MMAs (measured: about the
    // same time per 64-deep k step whatever the tile width), so 64-wide tiles lose nothing.
    // Cores 2 and 3 have no gathering threads: the matmul's TMA core (cuda_gemm_wgmma_tma's 0.68-0.75).
    const double eff = c.core >= 2 ? tma_core_efficiency(c) * (c.epilogue ? kRegisterEpilogueGain : 1.0)
                       : c.core == 1 ? (c.bn == 128 ? 0.60 : 0.62) * (c.stages >= 4 ? 1.0 : 0.97)
                                     : (c.bm * c.bn >= 128 * 128 ? 0.30 : c.bm * c.bn >= 128 * 64 ? 0.27 : 0.22) *
                                           (c.stages >= 4 ? 1.0 : 0.95);
    // TF32's peak is half of bf16's (495 of 989 TFLOP/s dense on an H100/H200).
    return roofline_seconds(partition_flops(p) * padded, partition_bytes(p), t.info(), eff * (c.tf32 ? 0.5 : 1.0), 5e-6) +
           fixup;
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
    if (std::string why; c.core == 3 && !conv::im2col_view(pc.cp, why))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + "core=3 loads the activation by im2col TMA, but " + why};
    if (std::string why; c.epilogue && !cuda::register_epilogue(pc.epi, why))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + "epilogue=1 runs the epilogue in registers, but " + why};
    if (std::string why; c.resident_b && !resident_fits(pc.cp, c, why))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, where + "resident_b=1: " + why};
    if (c.tf32 != (pc.cp.dtype == DataType::FLOAT)) {
      const ir::Tensor& x = p.tensor(pc.cp.x);
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
              std::string(kEngineName) + ": node '" + p.graph->nodes[static_cast<size_t>(anchor_node(p))].name +
                  "', tensor '" + x.name + "': the tf32 knob is " + (c.tf32 ? "1" : "0") + " but the inputs are " +
                  std::string(to_string(x.dtype)) + " (tf32=1 goes with FLOAT inputs, and only with them)"};
    }
    if (c.core > 0 && pc.cp.params.M + 128 >= (int64_t{1} << 31))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
              std::string(kEngineName) + ": core=" + std::to_string(c.core) + " indexes output pixels in 32 bits; this convolution has " +
                  std::to_string(pc.cp.params.M) + " (use core=0)"};
    if (c.core == 1 && (pc.cp.dgrad || pc.cp.wgrad))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
              std::string(kEngineName) + ": conv_dgrad and conv_wgrad run on the mma.sync core (core=0) only"};
    KernelBuild kb;
    kb.source = source(pc, c, *p.graph);
    const bool fin = pc.epi.L.needs_finalize();
    if (auto s = compile_or_reload(t, r, kEngineName, kFpropKernel, c.smem_bytes(), fin, kb); !s.ok()) return s;
    DG_LOG(DEBUG) << kEngineName << ": " << (c.tf32 ? "tf32 " : "") << c.bm << "x" << c.bn << " stages=" << c.stages
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
                           std::string& why, int splits, bool pingpong, bool resident, int cluster, int epilogue) {
  Pieces pc;
  if (!describe_conv(p, pc.cp, why)) return false;
  if (!plan_epilogue(p, pc.cp.axes, true, pc.epi, why)) return false;
  if (core == 2 && !gemm_view(pc.cp, pc.pixel_stride, why)) return false;
  if (core == 3 && !im2col_view(pc.cp, why)) return false;
  Config c{core, bm, bn, stages, splits, pc.cp.dtype == DataType::FLOAT, pingpong, resident};
  c.cluster = cluster;
  c.epilogue = epilogue;
  if (resident && !resident_fits(pc.cp, c, why)) return false;
  if (epilogue && !cuda::register_epilogue(pc.epi, why)) return false;
  src = source(pc, c, *p.graph);
  return true;
}
}  // namespace conv

}  // namespace dnngraph::cuda
