// cuda_sdpa_backward_flash: support rules, the kernel's configuration and source, and the plan
// (three launches of one NVRTC-compiled kernel). Two cores: 0, mma.sync (sm_80+, deterministic:
// delta, dK/dV, dQ with S and dP computed twice); 1, wgmma + TMA (sm_90a: delta and zeroed dQ
// sums, dK/dV with dQ's sums added by atomics, dQ). Every size is a kernel argument, so one compiled
// kernel per (core, input type, output type, padded head dim) serves every shape.
#include "engines/cuda/sdpa/sdpa_backward_flash.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/checked.hpp"
#include "engines/cuda/common/compiled_engine.hpp"
#include "engines/cuda/common/tensor_core_notes.hpp"
#include "engines/cuda/common/kernel_build.hpp"
#include "engines/cuda/common/kernel_config.hpp"
#include "engines/cuda/sdpa/sdpa_backward_params.hpp"
#include "engines/cuda/sdpa/sdpa_problem.hpp"
#include "graph/sdpa_features.hpp"
#include "planning/engine_instance.hpp"
#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda {
namespace {

using sdpa::Operand;
using cuda::TensorMap;

constexpr const char* kKernel = kSdpaBackwardKernel;
constexpr int kTile = 64, kThreads = 128;                    // core 0
constexpr int kWgKeys = 128, kWgThreads = 256, kWgRowsPerBlock = 8;  // core 1 (sdpa_backward_wgmma.cuh)

struct BwdProblem {
  std::string node;
  int64_t b = 0, h = 0, hk = 0, sq = 0, skv = 0, d = 0;
  Operand q, k, v, o, d_o, stats, seq_q, seq_kv, dq, dk, dv;
  double scale = 1.0;
  std::optional<int64_t> left, right;
  bool bottom_right = false;
  bool deterministic = false;  // the node asks for the same bits on every run
  int d_pad() const { return static_cast<int>((std::max<int64_t>(d, 1) + 63) / 64 * 64); }
  int smem_bytes(int core) const {
    if (core == 0) return 6 * kTile * d_pad() * 2 + 4 * kTile * 4;  // BwdShape::SMEM
    // WgBwdSmem: K and V (128 rows), Q and dO (64 rows, two slots each), dS^T, lse and delta, the
    // two warpgroups' dQ boxes, barriers.
    return 2 * kWgKeys * d_pad() * 2 + 4 * 64 * d_pad() * 2 + kWgKeys * 64 * 2 + 1024 + 2 * 64 * 64 * 4 + 24 + 1024;
  }
  // Bytes of fp32 workspace: delta [b, h, sq]; core 1 adds dQ's sums [b, h, sq, d_pad] 256 bytes on.
  int64_t rows() const { return b * h * sq; }
  int64_t dq_sums_offset() const { return (rows() * 4 + 255) / 256 * 256; }
  int64_t workspace_bytes(int core) const { return core == 0 ? rows() * 4 : dq_sums_offset() + rows() * d_pad() * 4; }
};

Operand operand_of(const ir::Graph& g, int id) {
  Operand o;
  if (id < 0) return o;
  const ir::Tensor& t = g.tensor(id);
  o.id = id;
  o.dtype = t.dtype;
  for (size_t i = 0; i < 4 && i < t.dims.size(); ++i) o.dims[i] = t.dims[i], o.strides[i] = t.strides[i];
  return o;
}

bool fail(std::string& why, const std::string& text) {
  why = text;
  return false;
}

// 16-bit inputs (tensor cores), one output type for the three gradients, equal head dims up to 128,
// the head dim contiguous and the other strides multiples of 8 elements (16-byte cp.async chunks).
bool check_tensors(const BwdProblem& pr, const ir::Graph& g, std::string& why) {
  const std::string at = "node '" + pr.node + "', tensor '";
  const ir::Tensor& q = g.tensor(pr.q.id);
  if (q.dtype != DataType::HALF && q.dtype != DataType::BFLOAT16)
    return fail(why, at + q.name + "': data type " + std::string(to_string(q.dtype)) +
                         " is not supported (HALF or BFLOAT16: the tensor cores take 16-bit operands)");
  for (const Operand* x : {&pr.dk, &pr.dv})
    if (x->dtype != pr.dq.dtype)
      return fail(why, at + g.tensor(x->id).name + "': data type " + std::string(to_string(x->dtype)) + " differs from dQ's " +
                           std::string(to_string(pr.dq.dtype)) + " (the kernel writes one output type)");
  if (pr.v.dims[3] != pr.d)
    return fail(why, at + g.tensor(pr.v.id).name + "': head dim " + std::to_string(pr.v.dims[3]) + " differs from Q's " +
                         std::to_string(pr.d) + " (the kernel needs equal head dims)");
  if (pr.d > 128 || pr.d % 8 != 0)
    return fail(why, at + q.name + "': head dim " + std::to_string(pr.d) +
                         " is not a multiple of 8 up to 128 (dK and dV rows are held in registers)");
  if (pr.sq >= (int64_t{1} << 30) || pr.skv >= (int64_t{1} << 30) || pr.b > 65535 || pr.h > 65535)
    return fail(why, "node '" + pr.node + "': sizes past the kernel's 32-bit rows or 65535-block grid dims");
  // b x h x sq x d_pad x 4 bytes of dQ sums (core 1) must be a size_t the kernels index with 64 bits.
  int64_t sums = 0;
  if (!checked::mul(pr.b, pr.h, sums) || !checked::mul(sums, pr.sq, sums) || !checked::mul(sums, 4 * pr.d_pad(), sums) ||
      sums > (int64_t{1} << 50))
    return fail(why, "node '" + pr.node + "': the fp32 workspace (b x h x sq x head dim) overflows");
  for (const Operand* x : {&pr.q, &pr.k, &pr.v, &pr.o, &pr.d_o, &pr.dq, &pr.dk, &pr.dv}) {
    const ir::Tensor& t = g.tensor(x->id);
    if (t.dims[3] > 1 && t.strides[3] != 1)
      return fail(why, at + t.name + "': the head dim is not contiguous (stride " + std::to_string(t.strides[3]) + ")");
    for (size_t i = 0; i < 3; ++i)
      if (t.dims[i] > 1 && (t.strides[i] <= 0 || t.strides[i] % 8 != 0))
        return fail(why, at + t.name + "': stride " + std::to_string(t.strides[i]) + " of dim " + std::to_string(i) +
                             " is not a positive multiple of 8 elements (rows move in 16-byte chunks)");
  }
  return true;
}

bool describe(const Partition& p, BwdProblem& out, std::string& why) {
  if (p.nodes.size() != 1)
    return fail(why, "takes a partition of one sdpa_backward node, this one has " + std::to_string(p.nodes.size()) +
                         " nodes");
  const ir::Node& n = p.node(0);
  if (!std::holds_alternative<SdpaBackwardAttr>(n.attr))
    return fail(why, "node '" + n.name + "' is " + std::string(op_name(n.attr)) + ", not sdpa_backward");
  const ir::Graph& g = *p.graph;
  if (const std::string missing = sdpa_features_missing(sdpa_features(g, n), {}); !missing.empty())
    return fail(why, "node '" + n.name + "': " + missing + " (not implemented in this engine; the CPU engines and "
                     "ref take them)");
  const auto& attr = std::get<SdpaBackwardAttr>(n.attr);
  auto in = [&](size_t slot) { return operand_of(g, slot < n.inputs.size() ? n.inputs[slot] : -1); };
  out = BwdProblem{};
  out.node = n.name;
  out.q = in(slot::SB_Q), out.k = in(slot::SB_K), out.v = in(slot::SB_V), out.o = in(slot::SB_O);
  out.d_o = in(slot::SB_DO), out.stats = in(slot::SB_STATS), out.seq_q = in(slot::SB_SEQ_Q);
  out.seq_kv = in(slot::SB_SEQ_KV);
  out.dq = operand_of(g, n.outputs[0]), out.dk = operand_of(g, n.outputs[1]), out.dv = operand_of(g, n.outputs[2]);
  out.b = out.q.dims[0], out.h = out.q.dims[1], out.sq = out.q.dims[2], out.d = out.q.dims[3];
  out.hk = out.k.dims[1], out.skv = out.k.dims[2];
  if (!check_tensors(out, g, why)) return false;
  out.scale = attr.get_attn_scale().value_or(1.0 / std::sqrt(static_cast<double>(out.d)));
  out.left = attr.get_diagonal_band_left_bound();
  out.right = attr.get_diagonal_band_right_bound();
  out.bottom_right = attr.get_diagonal_alignment() == DiagonalAlignment::BOTTOM_RIGHT;
  out.deterministic = attr.get_deterministic_algorithm();
  return true;
}

void copy3(const Operand& x, int64_t (&dst)[3]) {
  for (int i = 0; i < 3; ++i) dst[i] = x.strides[static_cast<size_t>(i)];
}

class BackwardPlan final : public KernelPlan {
 public:
  BackwardPlan(const Partition& p, BwdProblem pr, int core, KernelBuild k)
      : KernelPlan(p, std::move(k)), pr_(std::move(pr)), core_(core) {}

  int64_t workspace_size() const override { return pr_.workspace_bytes(core_); }

  Status execute(const ExecArgs& args) const override {
    HandleImpl& h = args.handle;
    if (!h.device.is_cuda() || !h.cuda)
      return {ErrorCode::GRAPH_EXECUTION_FAILED, "cuda_sdpa_backward_flash: not a CUDA handle"};
    const auto ptr = [&](const Operand& x) -> void* { return x.id < 0 ? nullptr : args.ptrs[static_cast<size_t>(x.id)]; };
    for (const Operand* x : {&pr_.q, &pr_.k, &pr_.v, &pr_.o, &pr_.d_o, &pr_.stats, &pr_.dq, &pr_.dk, &pr_.dv}) {
      const std::string name = "cuda_sdpa_backward_flash: tensor '" + part_.tensor(x->id).name + "'";
      const bool gradient = x == &pr_.dq || x == &pr_.dk || x == &pr_.dv;  // null: not read by the graph
      if (!ptr(*x) && gradient) continue;
      if (!ptr(*x)) return {ErrorCode::INVALID_VARIANT_PACK, name + ": the pointer is null"};
      if (reinterpret_cast<uintptr_t>(ptr(*x)) % 16 != 0)
        return {ErrorCode::INVALID_VARIANT_PACK, name + ": the pointer is not 16-byte aligned (rows move in 16-byte chunks)"};
    }
    if ((pr_.seq_q.id >= 0 && !ptr(pr_.seq_q)) || (pr_.seq_kv.id >= 0 && !ptr(pr_.seq_kv)))
      return {ErrorCode::INVALID_VARIANT_PACK, "cuda_sdpa_backward_flash: a sequence-length tensor has no pointer"};
    if (workspace_size() > 0 && !args.workspace)
      return {ErrorCode::INVALID_VARIANT_PACK, "cuda_sdpa_backward_flash: the workspace pointer is null"};
    if (core_ == 1 && reinterpret_cast<uintptr_t>(args.workspace) % 16 != 0)
      return {ErrorCode::INVALID_VARIANT_PACK,
              "cuda_sdpa_backward_flash: the workspace pointer is not 16-byte aligned (core=1 adds dQ by TMA)"};
    sdpa::SdpaBwdParams prm = params(ptr, static_cast<char*>(args.workspace));
    return core_ == 0 ? launch_mma_sync(h, prm) : launch_wgmma(h, prm);
  }

 private:
  static unsigned blocks(int64_t n, int64_t per) { return static_cast<unsigned>((n + per - 1) / per); }

  Status launch_mma_sync(HandleImpl& h, sdpa::SdpaBwdParams& prm) const {
    void* kargs[] = {&prm};
    const unsigned smem = static_cast<unsigned>(pr_.smem_bytes(0));
    const cuda::Grid3 grids[3] = {
        {blocks(pr_.sq, kThreads), static_cast<unsigned>(pr_.h), static_cast<unsigned>(pr_.b)},
        {blocks(pr_.skv, kTile), static_cast<unsigned>(pr_.hk), static_cast<unsigned>(pr_.b)},
        {blocks(pr_.sq, kTile), static_cast<unsigned>(pr_.h), static_cast<unsigned>(pr_.b)}};
    const bool wanted[3] = {true, prm.dk || prm.dv, prm.dq != nullptr};
    for (int phase = 0; phase < 3; ++phase) {
      if (!wanted[phase]) continue;
      prm.phase = phase;
      if (auto s = cuda::launch_3d(h, k_.main, grids[phase], kThreads, smem, kargs, kKernel); !s.ok()) return s;
    }
    return {};
  }

  // Phase 1 runs whenever any gradient is read (it makes dQ's sums too); phase 2 only for dQ.
  Status launch_wgmma(HandleImpl& h, sdpa::SdpaBwdParams& prm) const {
    TensorMap mq, mk, mv, mdo, mdq;
    if (auto s = sdpa::encode_rows_map(pr_.q, 64, prm.q, mq); !s.ok()) return s;
    if (auto s = sdpa::encode_rows_map(pr_.k, kWgKeys, prm.k, mk); !s.ok()) return s;
    if (auto s = sdpa::encode_rows_map(pr_.v, kWgKeys, prm.v, mv); !s.ok()) return s;
    if (auto s = sdpa::encode_rows_map(pr_.d_o, 64, prm.d_o, mdo); !s.ok()) return s;
    if (auto s = encode_tensor_map(dq_sums_map(), prm.dq_accum, mdq); !s.ok()) return s;
    void* kargs[] = {&prm, &mq, &mk, &mv, &mdo, &mdq};
    const unsigned smem = static_cast<unsigned>(pr_.smem_bytes(1));
    const cuda::Grid3 rows{blocks(pr_.sq, kWgRowsPerBlock), static_cast<unsigned>(pr_.h), static_cast<unsigned>(pr_.b)};
    const cuda::Grid3 grids[3] = {
        rows, {blocks(pr_.skv, kWgKeys), static_cast<unsigned>(pr_.hk), static_cast<unsigned>(pr_.b)}, rows};
    const bool wanted[3] = {true, prm.dq || prm.dk || prm.dv, prm.dq != nullptr};
    for (int phase = 0; phase < 3; ++phase) {
      if (!wanted[phase]) continue;
      prm.phase = phase;
      if (auto s = cuda::launch_3d(h, k_.main, grids[phase], kWgThreads, phase == 1 ? smem : 0, kargs, kKernel); !s.ok())
        return s;
    }
    return {};
  }

  // dQ's fp32 sums [b, h, sq, d_pad], packed, in boxes of 32 columns (128 bytes) x 64 rows: the
  // kernel adds each warpgroup's staged share by a TMA reduce.
  TensorMapSpec dq_sums_map() const {
    TensorMapSpec s;
    s.dtype = DataType::FLOAT;
    s.rank = 4;
    const uint64_t d = static_cast<uint64_t>(pr_.d_pad()), sq = static_cast<uint64_t>(pr_.sq);
    const uint64_t h = static_cast<uint64_t>(pr_.h), b = static_cast<uint64_t>(pr_.b);
    s.dims[0] = d, s.dims[1] = sq, s.dims[2] = h, s.dims[3] = b;
    s.strides_bytes[0] = d * 4, s.strides_bytes[1] = sq * d * 4, s.strides_bytes[2] = h * sq * d * 4;
    s.box[0] = 32;
    s.box[1] = 64;
    return s;
  }

  template <class Ptr>
  sdpa::SdpaBwdParams params(const Ptr& ptr, char* workspace) const {
    sdpa::SdpaBwdParams prm{};
    prm.q = ptr(pr_.q), prm.k = ptr(pr_.k), prm.v = ptr(pr_.v), prm.o = ptr(pr_.o), prm.d_o = ptr(pr_.d_o);
    prm.stats = static_cast<const float*>(ptr(pr_.stats));
    prm.dq = ptr(pr_.dq), prm.dk = ptr(pr_.dk), prm.dv = ptr(pr_.dv);
    prm.seq_q = static_cast<const int32_t*>(ptr(pr_.seq_q));
    prm.seq_kv = static_cast<const int32_t*>(ptr(pr_.seq_kv));
    prm.delta = reinterpret_cast<float*>(workspace);
    prm.dq_accum = core_ == 1 ? reinterpret_cast<float*>(workspace + pr_.dq_sums_offset()) : nullptr;
    copy3(pr_.q, prm.q_stride), copy3(pr_.k, prm.k_stride), copy3(pr_.v, prm.v_stride);
    copy3(pr_.o, prm.o_stride), copy3(pr_.d_o, prm.do_stride), copy3(pr_.stats, prm.stats_stride);
    copy3(pr_.dq, prm.dq_stride), copy3(pr_.dk, prm.dk_stride), copy3(pr_.dv, prm.dv_stride);
    prm.seq_q_stride = pr_.seq_q.strides[0];
    prm.seq_kv_stride = pr_.seq_kv.strides[0];
    prm.b = static_cast<int32_t>(pr_.b), prm.h = static_cast<int32_t>(pr_.h), prm.hk = static_cast<int32_t>(pr_.hk);
    prm.sq = static_cast<int32_t>(pr_.sq), prm.skv = static_cast<int32_t>(pr_.skv), prm.d = static_cast<int32_t>(pr_.d);
    prm.scale = static_cast<float>(pr_.scale);
    prm.scale_log2 = static_cast<float>(pr_.scale * 1.44269504088896340736);
    // A bound past every (row, key) pair masks nothing; clamping keeps the kernel's int arithmetic exact.
    const int64_t limit = pr_.sq + pr_.skv + 1;
    prm.has_left = pr_.left.has_value(), prm.has_right = pr_.right.has_value();
    prm.left = pr_.left ? static_cast<int32_t>(std::min(*pr_.left, limit)) : 0;
    prm.right = pr_.right ? static_cast<int32_t>(std::min(*pr_.right, limit)) : 0;
    prm.bottom_right = pr_.bottom_right;
    return prm;
  }

  BwdProblem pr_;
  int core_;
};

// core 0: mma.sync, deterministic (sm_80+); core 1: wgmma + TMA, dQ summed by atomics (sm_90a,
// head dims up to 128; not for nodes that ask for a deterministic algorithm). Absent: wgmma where
// it may run, else mma.sync.
struct BwdKnobs {
  int64_t core = -1;
};
const KnobSchema<BwdKnobs>& bwd_schema() {
  static const KnobSchema<BwdKnobs> kSchema{"cuda_sdpa_backward_flash", {{"core", &BwdKnobs::core, 0, 1}}};
  return kSchema;
}

// Why `core` cannot run this problem on this device, or "" when it can.
std::string core_refusal(int64_t core, const BwdProblem& pr, const Target& t) {
  if (core == 1 && t.info().sm_version != 90)
    return "knob core=1 (wgmma + TMA) needs sm_90a; the device is sm_" + std::to_string(t.info().sm_version);
  if (core == 1 && pr.deterministic)
    return "node '" + pr.node + "' asks for a deterministic algorithm; knob core=1 adds dQ's partial sums in "
           "arrival order";
  return "";
}

class BackwardEngine final : public CompiledEngine<BwdKnobs> {
 public:
  BackwardEngine() : CompiledEngine(bwd_schema()) {}
  std::string_view name() const override { return "cuda_sdpa_backward_flash"; }

  Support check(const Partition& p, const Target& t) const override {
    BwdProblem pr;
    std::string why;
    if (!describe(p, pr, why) || !sdpa::check_device(t, why)) return Support::no(why);
    return Support::yes();
  }

  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const override {
    BwdProblem pr;  // left as constructed (no deterministic request) when the partition is not one
    std::string why;
    describe(p, pr, why);
    std::vector<BwdKnobs> all;
    for (int64_t core : {1, 0})
      if (core_refusal(core, pr, t).empty()) all.push_back({.core = core});
    return ranked(p, t, all);
  }

  // Every product on tensor cores; core 1 adds dQ's partial sums in whatever order they arrive.
  std::vector<NumericalNote> numerical_notes(const Partition& p, const Target&, const Knobs& k) const override {
    std::vector<NumericalNote> notes = tensor_core_notes(p);
    BwdKnobs knobs;
    if (parse(k, knobs) && knobs.core == 1) notes.push_back(NumericalNote::NONDETERMINISTIC);
    return notes;
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    BwdProblem pr;
    BwdKnobs knobs;
    std::string why;
    if (!parse(k, knobs) || !describe(p, pr, why) || !core_refusal(knobs.core, pr, t).empty()) return 1e9;
    sdpa::Problem fwd;
    fwd.sq = pr.sq, fwd.skv = pr.skv, fwd.left = pr.left, fwd.right = pr.right, fwd.bottom_right = pr.bottom_right;
    // Core 0: seven GEMMs of 2 x d FLOPs a visible pair (S and dP in both phases), at an efficiency
    // guessed below the forward's mma.sync core. Core 1: five GEMMs on wgmma (docs/perf.md).
    const double pairs = static_cast<double>(pr.b * pr.h * pr.d_pad()) * sdpa::visible_pairs(fwd);
    if (knobs.core == 1) return roofline_seconds(10.0 * pairs, partition_bytes(p), t.info(), 0.35, 12e-6);
    return roofline_seconds(14.0 * pairs, partition_bytes(p), t.info(), 0.25, 15e-6);
  }

 private:
  Status make(const Partition& p, const Target& t, const Knobs& k, ByteReader* r,
              std::unique_ptr<Plan>& plan) const override {
    const ErrorCode code = r ? ErrorCode::SERIALIZATION_FAILED : ErrorCode::GRAPH_NOT_SUPPORTED;
    BwdProblem pr;
    std::string why;
    if (!describe(p, pr, why) || !sdpa::check_device(t, why)) return {code, "cuda_sdpa_backward_flash: " + why};
    BwdKnobs knobs;
    if (auto s = read_knobs(schema_, k, code, knobs); !s.ok()) return s;
    const int core = knobs.core >= 0 ? static_cast<int>(knobs.core) : core_refusal(1, pr, t).empty() ? 1 : 0;
    if (const std::string refusal = core_refusal(core, pr, t); !refusal.empty())
      return {code, "cuda_sdpa_backward_flash: " + refusal};
    KernelBuild kb;
    kb.source = sdpa_backward_kernel_source(pr.q.dtype, pr.dq.dtype, pr.d, core);
    if (auto s = compile_or_reload(t, r, name(), kKernel, pr.smem_bytes(core), false, kb); !s.ok()) return s;
    plan = std::make_unique<BackwardPlan>(p, std::move(pr), core, std::move(kb));
    return {};
  }
};

}  // namespace

std::string sdpa_backward_kernel_source(DataType in, DataType out, int64_t d, int core) {
  const int64_t d_pad = (std::max<int64_t>(d, 1) + 63) / 64 * 64;
  std::ostringstream os;
  os << "// Generated by dnngraph's cuda_sdpa_backward_flash engine: " << (core == 1 ? "wgmma" : "mma.sync") << " d"
     << d_pad << " " << to_string(in) << "->" << to_string(out) << ".\n";
  KernelConfigSource cs;
  cs.dtype("kInput", in).dtype("kOutput", out).value("kHeadDim", d_pad);
  if (core == 1) {
    os << "#include \"sdpa_backward_wgmma.cuh\"\n\n"
       << cs.str() << "extern \"C\" __global__ void __launch_bounds__(" << kWgThreads << ", 1) " << kKernel
       << "(const dg::SdpaBwdParams p, const __grid_constant__ dg::TmaDesc mq, const __grid_constant__ dg::TmaDesc mk, "
          "const __grid_constant__ dg::TmaDesc mv, const __grid_constant__ dg::TmaDesc mdo, "
          "const __grid_constant__ dg::TmaDesc mdq) {\n"
       << "  dg::sdpa_backward_wgmma<" << kKernelConfig << ">(p, &mq, &mk, &mv, &mdo, &mdq);\n}\n";
    return os.str();
  }
  os << "#include \"sdpa_backward_mma_sync.cuh\"\n\n"
     << cs.str() << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ") " << kKernel
     << "(const dg::SdpaBwdParams p) {\n  dg::sdpa_backward_mma_sync<" << kKernelConfig << ">(p);\n}\n";
  return os.str();
}

const Engine& sdpa_backward_flash_engine() { return engine_instance<BackwardEngine>(); }

}  // namespace dnngraph::cuda
