// cuda_sdpa_flash: the engine (support, knobs, cost) and its plan (kernel arguments, TMA maps,
// launch). The kernels: src/engines/cuda/kernels/sdpa_*.cuh; one per (core, types, padded head dim),
// every size a kernel argument, so one compiled kernel serves every shape.
#include "engines/cuda/sdpa/sdpa_flash.hpp"

#include <algorithm>
#include <cmath>

#include "core/log.hpp"
#include "engines/cuda/common/compiled_engine.hpp"
#include "engines/cuda/common/tensor_core_notes.hpp"
#include "engines/cuda/common/kernel_build.hpp"
#include "engines/cuda/sdpa/sdpa_params.hpp"
#include "engines/cuda/sdpa/sdpa_problem.hpp"
#include "runtime/cuda/driver_ext.hpp"
#include "planning/engine_instance.hpp"

namespace dnngraph::cuda {
namespace {

using cuda::TensorMap;
using sdpa::Config;
using sdpa::encode_rows_map;
using sdpa::Core;
using sdpa::Operand;
using sdpa::Problem;
using sdpa::SdpaKnobs;

bool misaligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 != 0; }

void copy3(const Operand& x, int64_t (&dst)[3]) {
  for (int i = 0; i < 3; ++i) dst[i] = x.strides[static_cast<size_t>(i)];
}

int32_t clamp_bound(int64_t v, int64_t limit) { return static_cast<int32_t>(std::min(v, limit)); }

class SdpaPlan final : public KernelPlan {
 public:
  SdpaPlan(const Partition& p, Problem pr, Config c, KernelBuild k)
      : KernelPlan(p, std::move(k)), pr_(std::move(pr)), c_(c) {}

  Status execute(const ExecArgs& args) const override {
    HandleImpl& h = args.handle;
    if (!h.device.is_cuda() || !h.cuda) return {ErrorCode::GRAPH_EXECUTION_FAILED, "cuda_sdpa_flash: not a CUDA handle"};
    const auto ptr = [&](const Operand& x) -> void* { return x.id < 0 ? nullptr : args.ptrs[static_cast<size_t>(x.id)]; };
    for (const Operand* x : {&pr_.q, &pr_.k, &pr_.v, &pr_.o}) {
      const std::string name = "cuda_sdpa_flash: tensor '" + part_.tensor(x->id).name + "'";
      if (!ptr(*x)) return {ErrorCode::INVALID_VARIANT_PACK, name + ": the pointer is null"};
      if (misaligned(ptr(*x)))
        return {ErrorCode::INVALID_VARIANT_PACK, name + ": the pointer is not 16-byte aligned (rows move in 16-byte chunks)"};
    }
    sdpa::SdpaParams prm = params(ptr);
    if ((pr_.seq_q.id >= 0) != (prm.seq_q != nullptr) || (pr_.seq_kv.id >= 0) != (prm.seq_kv != nullptr))
      return {ErrorCode::INVALID_VARIANT_PACK, "cuda_sdpa_flash: a sequence-length tensor of the padding mask has no pointer"};
    // Head by head along x (sdpa_block): sdpa_problem bounds m_blocks x h x b below 2^31. A
    // persistent kernel takes at most a block per SM slot, each looping over pairs of query blocks.
    int64_t blocks = int64_t{prm.m_blocks} * pr_.h * pr_.b;
    if (c_.persistent)  // a pair of query blocks a round (sdpa_wgmma.cuh's nth_block)
      blocks = std::min<int64_t>((blocks + 1) / 2, int64_t{std::max(1, h.info.multiprocessors)} * c_.blocks_per_sm);
    const cuda::Grid3 grid{static_cast<unsigned>(blocks), 1, 1};
    if (c_.core == Core::MMA_SYNC) {
      void* kargs[] = {&prm};
      return cuda::launch_3d(h, k_.main, grid, static_cast<unsigned>(c_.threads), static_cast<unsigned>(c_.smem_bytes),
                             kargs, sdpa::kKernelName);
    }
    TensorMap mq, mk, mv;
    if (auto s = encode_rows_map(pr_.q, static_cast<uint32_t>(c_.bm), prm.q, mq); !s.ok()) return s;
    if (auto s = encode_rows_map(pr_.k, static_cast<uint32_t>(c_.bn), prm.k, mk); !s.ok()) return s;
    if (auto s = encode_rows_map(pr_.v, static_cast<uint32_t>(c_.bn), prm.v, mv); !s.ok()) return s;
    void* kargs[] = {&prm, &mq, &mk, &mv};
    return cuda::launch_3d(h, k_.main, grid, static_cast<unsigned>(c_.threads), static_cast<unsigned>(c_.smem_bytes),
                           kargs, sdpa::kKernelName);
  }

 private:
  template <class Ptr>
  sdpa::SdpaParams params(const Ptr& ptr) const {
    sdpa::SdpaParams prm{};
    prm.q = ptr(pr_.q);
    prm.k = ptr(pr_.k);
    prm.v = ptr(pr_.v);
    prm.o = ptr(pr_.o);
    prm.stats = static_cast<float*>(ptr(pr_.stats));
    prm.seq_q = static_cast<const int32_t*>(ptr(pr_.seq_q));
    prm.seq_kv = static_cast<const int32_t*>(ptr(pr_.seq_kv));
    copy3(pr_.q, prm.q_stride);
    copy3(pr_.k, prm.k_stride);
    copy3(pr_.v, prm.v_stride);
    copy3(pr_.o, prm.o_stride);
    copy3(pr_.stats, prm.stats_stride);
    prm.seq_q_stride = pr_.seq_q.strides[0];
    prm.seq_kv_stride = pr_.seq_kv.strides[0];
    prm.b = static_cast<int32_t>(pr_.b);
    prm.h = static_cast<int32_t>(pr_.h);
    prm.hk = static_cast<int32_t>(pr_.hk);
    prm.sq = static_cast<int32_t>(pr_.sq);
    prm.skv = static_cast<int32_t>(pr_.skv);
    prm.d = static_cast<int32_t>(pr_.d);
    prm.scale_log2 = static_cast<float>(pr_.scale * 1.44269504088896340736);
    // A bound past every (row, key) pair masks nothing; clamping keeps the kernels' int arithmetic exact.
    const int64_t limit = pr_.sq + pr_.skv + 1;
    prm.has_left = pr_.left.has_value();
    prm.has_right = pr_.right.has_value();
    prm.left = pr_.left ? clamp_bound(*pr_.left, limit) : 0;
    prm.right = pr_.right ? clamp_bound(*pr_.right, limit) : 0;
    prm.bottom_right = pr_.bottom_right;
    prm.m_blocks = static_cast<int32_t>((pr_.sq + c_.bm - 1) / c_.bm);
    return prm;
  }

  Problem pr_;
  Config c_;
};

// The exp2 of the softmax costs the tensor cores idle time, which overlapping S with P V hides in
// part. Efficiencies from the default plan's back-to-back timings on an H100 (docs/perf.md,
// 2026-12-06; b4 h16 causal, s1024 d64 / s4096 d128): one block per query block with the overlap
// 0.0437 / 0.528 ms, without it 0.0451 / 0.600; persistent 0.0342 / 0.504, with ping-pong turns
// 0.0353 / 0.520 (run S10; in S7, before the warpgroup releases, turns led at d64); two blocks an
// SM, persistent, 0.0352 at d64, not persistent 0.0465; turns without persistence 0.0456 / 0.534.
double wgmma_efficiency(const Config& c) {
  const bool wide = c.d_pad >= 128;
  if (!c.overlap) return wide ? 0.58 : 0.417;
  if (!c.persistent) return (c.blocks_per_sm == 2 ? 0.40 : wide ? 0.66 : 0.43) * (c.pingpong ? 0.97 : 1.0);
  // Two blocks an SM measured 0.528 with the overlap, whose wgmma ptxas had serialized (C7512); they
  // now go without it (sdpa_problem.cpp). A guess just below the one-block plan until measured.
  if (c.blocks_per_sm == 2) return 0.53;
  // A three-stage ring, just behind the same plan with two: on two H100s (2026-12-06, default-plan
  // harness) it ran within 2% of it at d128 causal and d64, ahead in one call and behind in the other.
  return (c.pingpong ? (wide ? 0.685 : 0.537) : (wide ? 0.70 : 0.551)) * (c.stages == 3 ? 0.99 : 1.0);
}

class SdpaFlashEngine final : public CompiledEngine<SdpaKnobs> {
 public:
  SdpaFlashEngine() : CompiledEngine(sdpa::knob_schema()) {}

  std::string_view name() const override { return "cuda_sdpa_flash"; }

  Support check(const Partition& p, const Target& t) const override {
    Problem pr;
    Config c;
    std::string why;
    if (!sdpa::describe(p, pr, why) || !sdpa::check_device(t, why) ||
        !sdpa::make_config(pr, sdpa::SdpaKnobs{}, t.info().sm_version, c, why))
      return Support::no(why);
    return Support::yes();
  }

  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const override {
    // On sm_90 the plans that led somewhere (docs/perf.md, 2026-12-06): persistent blocks with two-
    // and three-stage K/V rings (cuDNN's d128 kernel keeps three), without and with ping-pong
    // turns, and two blocks an SM at head dim 64 (without the overlap); then one block per query block, without S / P V
    // overlap, and mma.sync; ranked by wgmma_efficiency. Not offered, measured slower on every
    // case: ping-pong and two blocks an SM without persistence (knobs still accepted).
    std::vector<SdpaKnobs> all{{.core = 0}};
    if (t.info().sm_version == 90)
      all = {{.core = 1, .overlap = 1, .persistent = 1},
             {.core = 1, .overlap = 1, .persistent = 1, .stages = 3},
             {.core = 1, .overlap = 1, .pingpong = 1, .persistent = 1},
             {.core = 1, .overlap = 1, .pingpong = 1, .persistent = 1, .stages = 3},
             {.core = 1, .overlap = 0, .blocks_per_sm = 2, .persistent = 1},
             {.core = 1, .overlap = 1},
             {.core = 1, .overlap = 0},
             {.core = 0}};
    Problem pr;
    std::string why;
    if (!sdpa::describe(p, pr, why)) return print_knobs(schema_, all);
    std::vector<SdpaKnobs> fit;
    for (const SdpaKnobs& k : all) {
      Config c;
      if (sdpa::make_config(pr, k, t.info().sm_version, c, why)) fit.push_back(k);
    }
    if (fit.empty()) return print_knobs(schema_, all);
    return ranked(p, t, fit);  // best guess first
  }

  // Q K^T and P V on tensor cores (wgmma on sm_90a, mma.sync elsewhere).
  std::vector<NumericalNote> numerical_notes(const Partition& p, const Target&, const Knobs&) const override {
    return tensor_core_notes(p);
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    Problem pr;
    Config c;
    SdpaKnobs knobs;
    std::string why;
    if (!parse(k, knobs) || !sdpa::describe(p, pr, why) ||
        !sdpa::make_config(pr, knobs, t.info().sm_version, c, why))
      return 1e9;
    // Two GEMMs over the visible pairs, at the wgmma core's measured efficiency.
    const double flops = 4.0 * static_cast<double>(pr.b * pr.h * pr.d) * sdpa::visible_pairs(pr);
    const double eff = c.core == Core::WGMMA ? wgmma_efficiency(c) : 0.3;
    return roofline_seconds(flops, partition_bytes(p), t.info(), eff, 5e-6);
  }

 private:
  // Compiles (r null) or reloads the stored kernel (r set), then makes the plan.
  Status make(const Partition& p, const Target& t, const Knobs& k, ByteReader* r,
              std::unique_ptr<Plan>& plan) const override {
    const ErrorCode fail = r ? ErrorCode::SERIALIZATION_FAILED : ErrorCode::GRAPH_NOT_SUPPORTED;
    Problem pr;
    Config c;
    std::string why;
    if (!sdpa::describe(p, pr, why) || !sdpa::check_device(t, why)) return {fail, "cuda_sdpa_flash: " + why};
    SdpaKnobs knobs;
    if (auto s = read_knobs(schema_, k, fail, knobs); !s.ok()) return s;
    if (!sdpa::make_config(pr, knobs, t.info().sm_version, c, why)) return {fail, "cuda_sdpa_flash: " + why};
    KernelBuild kb;
    kb.source = sdpa::kernel_source(c);
    if (auto s = compile_or_reload(t, r, name(), sdpa::kKernelName, c.smem_bytes, false, kb); !s.ok()) return s;
    DG_LOG(DEBUG) << "cuda_sdpa_flash: " << c.describe() << ", " << c.smem_bytes << " bytes of shared memory";
    plan = std::make_unique<SdpaPlan>(p, std::move(pr), c, std::move(kb));
    return {};
  }
};

}  // namespace

const Engine& sdpa_flash_engine() { return engine_instance<SdpaFlashEngine>(); }

}  // namespace dnngraph::cuda
