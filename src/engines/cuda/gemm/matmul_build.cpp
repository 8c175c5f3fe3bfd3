#include "engines/cuda/gemm/matmul_build.hpp"

#include <algorithm>

#include "core/dtype.hpp"
#include "core/log.hpp"
#include "engines/cuda/common/gpu_checked.hpp"
#include "engines/cuda/common/register_epilogue.hpp"

namespace dnngraph::cuda::gemm {

// Predicted seconds: the tile-padded FLOPs at `efficiency` of the device's bf16 peak (TF32's is
// half of it: 495 of 989 TFLOP/s dense on an H100/H200; FP8's twice), or the bytes at its bandwidth, plus a launch.
// Waves as the conv engine counts them: SM slots x k steps per unit (+1 for the pipeline's fill and
// the epilogue) over the useful tiles x k steps (without split-K: the last wave's padding). A
// split-K unit also publishes its partial sums and the tile's last one reads them all back: ~6 k
// steps' time per unit (measured for the conv core on an H200, 2026-11-29), plus the counters' memset.
// The stream-K tail (c.stream_k): the last waves' k steps spread evenly over the CTAs.
double matmul_seconds(const Partition& p, const Target& t, const MatmulConfig& c, double efficiency) {
  MatmulPieces pieces;
  std::string why;
  double padded = 1.0, fixup = 0.0;
  // The shape only (check() tested the device and the types): any input type the engines take.
  if (describe_matmul_graph(p, pieces.mp, why, {.exact_fp32 = true, .fp8 = true})) {
    const auto& mp = pieces.mp;
    padded = static_cast<double>(ceil_div(mp.M, c.bm) * c.bm * ceil_div(mp.N, c.bn) * c.bn) /
             static_cast<double>(mp.M * mp.N);
    const int64_t tiles = mp.batch_count() * ceil_div(mp.M, c.bm) * ceil_div(mp.N, c.bn);
    // Clusters of 2 walk pairs of m tiles: an odd tiles_m leaves one CTA of the last pairs idle.
    const int64_t units = c.cluster > 1 ? mp.batch_count() * ceil_div(mp.M, 2 * c.bm) * 2 * ceil_div(mp.N, c.bn)
                                        : tiles * c.splits;
    const int64_t sms = std::max(1, t.info().multiprocessors), kt = ceil_div(mp.K, k_tile(c, mp.dtype));
    const int64_t per_unit = ceil_div(kt, c.splits) + 1 + (c.splits > 1 ? 6 : 0);
    if (c.stream_k && units >= sms) {
      // Whole tiles, then each CTA's equal share of the rest's k steps, plus what the shares cost
      // beyond their steps (segment starts, the fix-up, the split kernel): about one tile's time a
      // CTA, measured (H100, 8192^3 in 128 x 256 tiles, 2026-12-08: 0.9-1.4 tiles; the tail saved
      // 0.5), so the tail is predicted to pay only where the whole tiles' last wave is mostly idle.
      const int64_t whole = stream_k_whole_tiles(units, sms), share = ceil_div((units - whole) * kt, sms);
      padded *= static_cast<double>((whole / sms * (kt + 1) + share + kt + 1) * sms) /
                static_cast<double>(tiles * (kt + 1));
      fixup = 1e-6;
    } else {
      padded *= static_cast<double>(ceil_div(units, sms) * sms * per_unit) / static_cast<double>(tiles * (kt + 1));
    }
    if (c.splits > 1) fixup = 1e-6;
    // The transpose pass: each MN-major operand read and written once at the bandwidth, a launch each.
    for (bool is_a : {true, false})
      if (c.transpose && !(is_a ? mp.a_k_major : mp.b_k_major))
        fixup += 2.0 * static_cast<double>(mp.batch_count() * mp.K * (is_a ? mp.M : mp.N) * size_of(mp.dtype)) /
                     std::max(1.0, t.info().peak_bytes_per_s) +
                 3e-6;
    if (!mp.a_vec || !mp.b_vec) efficiency *= 0.1;  // element-by-element loads
    if (dtype::is_fp8(mp.dtype)) efficiency *= 2.0;  // FP8's peak: twice bf16's
  }
  if (c.tf32) efficiency *= 0.5;
  const double flops = partition_flops(p) * padded / (c.tf32x3 ? kTf32x3Rate : 1.0);
  return roofline_seconds(flops, partition_bytes(p), t.info(), efficiency, 5e-6) + fixup;
}

// FLOAT inputs take the tf32 knob where the graph allows TF32 and tf32x3 (wgmma's 3xTF32) either
// way (a graph that keeps FLOAT exact is described only for tf32x3 configs: prepare_matmul), 16-bit
// inputs neither; tf32 wgmma reads K-major operands only (it has no transpose), so
// MN-major ones need the transpose knob (a K-major copy in the workspace), which nothing else takes.
Status check_tf32(const Partition& p, const MatmulProblem& mp, const MatmulConfig& c, std::string_view engine) {
  const bool fp32 = mp.dtype == DataType::FLOAT;
  const int mn_major = !mp.a_k_major ? mp.a : !mp.b_k_major ? mp.b : -1;
  const std::string where = "node '" + p.graph->nodes[static_cast<size_t>(anchor_node(p))].name + "', tensor '" +
                            p.tensor(fp32 && mn_major >= 0 ? mn_major : mp.a).name + "': ";
  if (fp32 && c.core == Core::WGMMA && mn_major >= 0 && !c.transpose)
    return {ErrorCode::GRAPH_NOT_SUPPORTED,
            std::string(engine) + ": " + where +
                "FLOAT inputs run on wgmma as TF32 only K-major (A [m, k] with k contiguous, B stored [n, k]); this "
                "operand is MN-major (transpose=1 copies it K-major first; cuda_gemm_mma_sync takes it as is)"};
  if (c.transpose && (!fp32 || mn_major < 0))
    return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
            std::string(engine) + ": " + where +
                "transpose=1 goes with MN-major FLOAT operands only (tf32 wgmma); these inputs are " +
                std::string(to_string(mp.dtype)) + (mn_major < 0 ? ", both K-major" : "")};
  if (fp32 != (c.tf32 || c.tf32x3) || (c.tf32 && c.tf32x3))
    return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
            std::string(engine) + ": " + where + "the tf32 knob is " + (c.tf32 ? "1" : "0") + " and tf32x3 " +
                (c.tf32x3 ? "1" : "0") + " but the inputs are " + std::string(to_string(mp.dtype)) +
                " (FLOAT inputs take one of them, 16-bit inputs neither)"};
  return {};
}

Status check_fp8(const Partition& p, const MatmulProblem& mp, std::string_view engine) {
  if (!dtype::is_fp8(mp.dtype)) return {};
  const int mn_major = !mp.a_k_major ? mp.a : !mp.b_k_major ? mp.b : -1;
  const std::string node = "node '" + p.graph->nodes[static_cast<size_t>(anchor_node(p))].name + "'";
  if (mn_major >= 0)
    return {ErrorCode::GRAPH_NOT_SUPPORTED,
            std::string(engine) + ": " + node + ", tensor '" + p.tensor(mn_major).name +
                "': FP8 inputs run on wgmma only K-major (A [m, k] with k contiguous, B stored [n, k], as cuBLASLt's "
                "FP8 GEMMs take them); this operand is MN-major"};
  if (std::string why; !checked_on_gpu("gemm_fp8", "FP8 matmuls on wgmma", why))
    return {ErrorCode::GRAPH_NOT_SUPPORTED, std::string(engine) + ": " + node + ": " + why};
  return {};
}

Status build_matmul_plan(const Partition& p, const Target& t, const MatmulConfig& knobs_config, ByteReader* r,
                         std::string_view engine, std::unique_ptr<Plan>& plan) {
  MatmulPieces pieces;
  const TensorCoreInputs inputs{.exact_fp32 = knobs_config.tf32x3, .fp8 = knobs_config.core == Core::WGMMA};
  if (auto s = prepare_matmul(p, t, pieces, inputs); !s.ok()) return s;
  MatmulConfig c = knobs_config;
  c.bk = static_cast<int>(k_tile(c, pieces.mp.dtype));
  if (auto s = check_fp8(p, pieces.mp, engine); !s.ok()) return s;
  if (auto s = check_tf32(p, pieces.mp, c, engine); !s.ok()) return s;
  if (std::string why; c.register_epilogue && !register_epilogue(pieces.epi, why))
    return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
            std::string(engine) + ": node '" + p.graph->nodes[static_cast<size_t>(anchor_node(p))].name +
                "': epilogue=1 runs the epilogue in registers, but " + why};
  KernelBuild k;
  k.source = matmul_source(pieces.mp, c, pieces.epi, *p.graph);
  const char* kernel = c.core == Core::WGMMA ? kWgmmaKernel : kMmaSyncKernel;
  const bool fin = pieces.epi.L.needs_finalize();
  if (auto s = compile_or_reload(t, r, engine, kernel, c.smem_bytes, fin, k); !s.ok()) return s;
  CUfunction transpose = nullptr;
  if (c.transpose)
    if (auto st = k.module->function(kTransposeKernel, transpose); !st.ok()) return st;
  DG_LOG(DEBUG) << engine << ": " << c.describe() << " " << pieces.epi.L.describe();
  plan = make_matmul_plan(p, std::move(pieces), c, std::move(k), t.handle->cuda->multiprocessors, transpose);
  return {};
}

}  // namespace dnngraph::cuda::gemm
