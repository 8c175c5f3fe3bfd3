#include "engines/cuda/norm/norm_rowwise.hpp"

#include <algorithm>

#include "core/dtype.hpp"
#include "core/log.hpp"
#include "engines/cuda/common/compiled_engine.hpp"
#include "engines/cuda/common/gpu_checked.hpp"
#include "engines/cuda/common/kernel_build.hpp"
#include "engines/cuda/norm/norm_knobs.hpp"
#include "engines/cuda/norm/norm_params.hpp"
#include "engines/cuda/norm/norm_problem.hpp"
#include "planning/engine_instance.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda {
namespace {

using norm::NormConfig;
using norm::NormKnobs;
using norm::NormProblem;

constexpr const char* kName = "cuda_norm_rowwise";

Status prepare(const Partition& p, const Target& t, NormProblem& pr) {
  if (!t.device().is_cuda() || !t.handle->cuda)
    return {ErrorCode::GRAPH_NOT_SUPPORTED, "runs on CUDA handles; this one is " + t.device().to_string()};
  std::string why;
  if (!norm::describe(p, pr, why)) return {ErrorCode::GRAPH_NOT_SUPPORTED, why};
  if (!checked_on_gpu(kName, "", why)) return {ErrorCode::GRAPH_NOT_SUPPORTED, why};
  return {};
}

NormConfig config_of(const NormProblem& pr, const NormKnobs& k) {
  return norm::choose_config(pr, k.threads_per_row, k.rows_per_block, k.vec != 0, k.prefetch != 0);
}

// The problem, its configuration and launch shape: what a plan runs.
struct NormLaunch {
  NormProblem pr;
  NormConfig cfg;
  int64_t grid = 1;  // main kernel blocks (backward: workspace slices)
  int64_t workspace = 0;
  // The backward's kernels wait for the kernel before them themselves (norm_pdl_wait) and let the
  // next one be scheduled near their end (norm_pdl_trigger): on sm_90 each launches
  // programmatically, so the finalize's launch hides under the main kernel's tail (H100, bf16
  // 8192 x 8192: 0.1634 -> 0.1617 ms, 2026-12-07).
  LaunchOrder order = LaunchOrder::STREAM;
};

class NormPlan final : public KernelPlan {
 public:
  NormPlan(const Partition& p, NormLaunch l, KernelBuild k, CUfunction scalar, CUfunction finalize)
      : KernelPlan(p, std::move(k)), l_(std::move(l)), scalar_(scalar), finalize_(finalize) {}

  int64_t workspace_size() const override { return l_.workspace; }

  Status execute(const ExecArgs& args) const override {
    HandleImpl& h = args.handle;
    if (!h.device.is_cuda() || !h.cuda) return {ErrorCode::GRAPH_EXECUTION_FAILED, std::string(kName) + ": not a CUDA handle"};
    const NormProblem& pr = l_.pr;
    for (int id : {pr.x, pr.dy, pr.scale, pr.bias, pr.eps, pr.mean_in, pr.inv_in, pr.out, pr.mean_out, pr.inv_out,
                   pr.dscale, pr.dbias})
      if (id >= 0 && !ptr(args, id))
        return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + part_.tensor(id).name + "': the pointer is null"};
    if (l_.workspace > 0 && !args.workspace)
      return {ErrorCode::WORKSPACE_TOO_SMALL, std::string(kName) + ": the plan needs workspace but it is null"};
    if (reinterpret_cast<uintptr_t>(args.workspace) % alignof(float) != 0)
      return {ErrorCode::INVALID_VARIANT_PACK, std::string(kName) + ": the workspace is not 4-byte aligned (fp32 sums)"};
    norm::NormParams P = params(args);
    const bool vec = l_.cfg.vec > 1 && aligned(args);
    if (l_.cfg.vec > 1 && !vec) {
      DG_LOG(INFO) << kName << ": a row operand is not aligned to " << l_.cfg.vec << " elements; running the scalar kernel";
    }
    const NormConfig run = vec || l_.cfg.vec == 1 ? l_.cfg : norm::scalar_config(l_.pr, l_.cfg);
    void* main_args[] = {&P};
    const Grid3 grid{static_cast<unsigned>(l_.grid)};
    if (auto s = launch_3d(h, vec || l_.cfg.vec == 1 ? k_.main : scalar_, grid, static_cast<unsigned>(run.block()), 0,
                           main_args, kName, l_.order);
        !s.ok())
      return s;
    if (!finalize_) return {};
    norm::NormFinalizeParams F{P.partials, ptr(args, pr.dscale), ptr(args, pr.dbias), pr.cols, l_.grid};
    void* fin_args[] = {&F};
    const Grid3 blocks{static_cast<unsigned>((pr.cols + norm::kFinalizeColumns - 1) / norm::kFinalizeColumns)};
    return launch_3d(h, finalize_, blocks, norm::kFinalizeThreads, 0, fin_args, "cuda_norm_rowwise column sums",
                     l_.order);
  }

 private:
  static void* ptr(const ExecArgs& args, int id) { return id >= 0 ? args.ptrs[static_cast<size_t>(id)] : nullptr; }

  norm::NormParams params(const ExecArgs& args) const {
    const NormProblem& pr = l_.pr;
    norm::NormParams P;
    P.x = ptr(args, pr.x), P.dy = ptr(args, pr.dy), P.scale = ptr(args, pr.scale), P.bias = ptr(args, pr.bias);
    P.mean = static_cast<const float*>(ptr(args, pr.mean_in));
    P.inv = static_cast<const float*>(ptr(args, pr.inv_in));
    P.out = ptr(args, pr.out);
    P.mean_out = static_cast<float*>(ptr(args, pr.mean_out));
    P.inv_out = static_cast<float*>(ptr(args, pr.inv_out));
    P.partials = l_.workspace > 0 ? static_cast<float*>(args.workspace) : nullptr;
    P.rows = pr.rows, P.cols = pr.cols;
    P.x_pitch = pr.x_pitch, P.dy_pitch = pr.dy_pitch, P.out_pitch = pr.out_pitch;
    P.mean_pitch = pr.mean_pitch, P.inv_pitch = pr.inv_pitch;
    // Epsilon is a host scalar of any float type (the graph's pass-by-value tensor).
    P.eps = pr.eps >= 0 ? static_cast<float>(dtype::load(ptr(args, pr.eps), part_.tensor(pr.eps).dtype, 0)) : 0.0f;
    P.inv_cols = static_cast<float>(1.0 / static_cast<double>(pr.cols));
    return P;
  }

  // Every operand the vector kernel accesses by vectors starts on a whole vector (its pitches
  // were checked at plan time).
  bool aligned(const ExecArgs& args) const {
    const NormProblem& pr = l_.pr;
    for (int id : {pr.x, pr.dy, pr.out, pr.scale, pr.bias}) {
      if (id < 0) continue;
      const auto bytes = static_cast<uintptr_t>(std::min<int64_t>(16, l_.cfg.vec * size_of(part_.tensor(id).dtype)));
      if (reinterpret_cast<uintptr_t>(ptr(args, id)) % bytes != 0) return false;
    }
    return true;
  }

  NormLaunch l_;
  CUfunction scalar_ = nullptr;
  CUfunction finalize_ = nullptr;
};

class NormRowwiseEngine final : public PreparedEngine<NormKnobs, NormProblem, prepare> {
 public:
  NormRowwiseEngine() : PreparedEngine(kName, norm::knob_schema()) {}

  // The fewest threads that keep the row in registers first, then twice and half as many (or, for
  // warp groups, 4 and 2 rows per block); the backward also with twice its blocks per SM and, with
  // its rows in registers, without loading the next row early.
  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const override {
    NormProblem pr;
    std::string why;
    if (!norm::describe(p, pr, why)) return {schema_.print(NormKnobs{})};
    const NormConfig c = config_of(pr, NormKnobs{});
    std::vector<NormKnobs> settings{NormKnobs{}};
    if (pr.backward && pr.column_sums()) {
      const int sms = std::max(1, t.info().multiprocessors);
      const int64_t per_sm = (norm::grid_blocks(pr, c, sms) + sms - 1) / sms;
      if (2 * per_sm <= std::min<int64_t>(8, 1024 / c.block())) settings.push_back({.blocks_per_sm = 2 * per_sm});
    }
    if (c.prefetch) settings.push_back({.prefetch = 0});
    if (c.threads == 32) {
      settings.push_back({.threads_per_row = 32, .rows_per_block = 4});
      settings.push_back({.threads_per_row = 32, .rows_per_block = 2});
    } else {
      if (c.threads < 1024) settings.push_back({.threads_per_row = c.threads * 2});
      settings.push_back({.threads_per_row = c.threads / 2});
    }
    return ranked(p, t, settings);
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    NormKnobs knobs;
    NormProblem pr;
    std::string why;
    if (!parse(k, knobs) || !norm::describe(p, pr, why)) return 1e9;
    const NormConfig c = config_of(pr, knobs);
    // Bandwidth bound: every tensor read once and written once, plus (backward) the column sums'
    // slices written and read back. 85% of peak bandwidth with the row in registers; streaming
    // re-reads each row (from L2, mostly): 60%; scalar accesses: 0.7 of that.
    int64_t ws = 0;
    if (!norm::workspace_bytes(pr, norm::grid_blocks(pr, c, t.info().multiprocessors, knobs.blocks_per_sm), ws))
      return 1e9;
    // A resident backward that waits for each row's loads measured 0.57-0.60 of a copy (H200).
    double eff = c.resident() && (c.prefetch || !pr.backward) ? 0.85 : 0.6;
    if (c.vec == 1) eff *= 0.7;
    const double launches = pr.backward && pr.column_sums() ? 2 : 1;
    return roofline_seconds(partition_flops(p), partition_bytes(p) + 2.0 * static_cast<double>(ws), t.info(), eff,
                            4e-6 * launches);
  }

 private:
  Status make(const Partition& p, const Target& t, const Knobs& k, ByteReader* r,
              std::unique_ptr<Plan>& plan) const override {
    NormLaunch l;
    if (auto s = prepare(p, t, l.pr); !s.ok()) return s;
    NormKnobs knobs;
    if (auto s = read_knobs(schema_, k, knob_error(r), knobs); !s.ok()) return s;
    l.cfg = config_of(l.pr, knobs);
    l.grid = norm::grid_blocks(l.pr, l.cfg, t.handle->cuda->multiprocessors, knobs.blocks_per_sm);
    // Streamed rows keep plain launches: launched programmatically, that plan ran 2.5x slower (H100,
    // bf16 8192 x 8192 with threads_per_row=256: 3.92 against 1.56 ms, 2026-12-07).
    if (l.pr.backward && t.info().sm_version >= 90 && l.cfg.resident()) l.order = LaunchOrder::PROGRAMMATIC;
    if (!norm::workspace_bytes(l.pr, l.grid, l.workspace))
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, std::string(kName) + ": the workspace size overflows"};
    KernelBuild kb;
    kb.source = norm::kernel_source(l.pr, l.cfg);
    if (auto s = compile_or_reload(t, r, kName, norm::kMainKernel, 0, false, kb); !s.ok()) return s;
    CUfunction scalar = nullptr, finalize = nullptr;
    if (l.cfg.vec > 1)
      if (auto s = kb.module->function(norm::kScalarKernel, scalar); !s.ok()) return s;
    if (l.workspace > 0)
      if (auto s = kb.module->function(norm::kFinalizeKernel, finalize); !s.ok()) return s;
    DG_LOG(DEBUG) << kName << ": threads " << l.cfg.threads << " rows " << l.cfg.rows << " items " << l.cfg.items
                  << " vec " << l.cfg.vec << " grid " << l.grid << " workspace " << l.workspace;
    plan = std::make_unique<NormPlan>(p, std::move(l), std::move(kb), scalar, finalize);
    return {};
  }
};

}  // namespace

const Engine& norm_rowwise_engine() { return engine_instance<NormRowwiseEngine>(); }

}  // namespace dnngraph::cuda
