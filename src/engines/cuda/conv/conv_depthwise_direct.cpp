// cuda_conv_depthwise_direct: conv_fprop with groups == C == K (one filter per channel) on NHWC
// activations, computed directly (kernels/conv_depthwise.cuh), with the fused epilogue. 2D/1D
// filters of at most 9 taps run the strip kernel (knob strip = output pixels per thread item along
// W, filters in registers); other filters the per-pixel kernel (strip = 0).
#include "engines/cuda/conv/conv_depthwise_direct.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "core/log.hpp"
#include "engines/cuda/common/compiled_engine.hpp"
#include "engines/cuda/common/epilogue_layout.hpp"
#include "engines/cuda/common/kernel_build.hpp"
#include "engines/cuda/common/kernel_config.hpp"
#include "engines/cuda/conv/conv_geometry.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/driver_ext.hpp"
#include "planning/engine_instance.hpp"

namespace dnngraph::cuda {
namespace {

constexpr const char* kName = "cuda_conv_depthwise_direct";
constexpr const char* kKernel = "dg_conv_depthwise";
constexpr int kThreads = 256;       // per-pixel kernel
constexpr int kStripThreads = 128;  // strip kernel
constexpr int kMaxStripTaps = 9;    // DG_DW_MAX_TAPS

// Mirror of dg::DwParams.
struct DwParams {
  int64_t M, x_stride[4], w_stride_c, w_stride_tap[3];
  const void *x, *w;
  int32_t in[3], out[3], filt[3], pad[3], stride[3], dil[3];
  int32_t C, epi_vec;
};
static_assert(sizeof(DwParams) == 8 * 11 + 4 * 20, "must match dg::DwParams");

struct Pieces {
  DataType dtype = DataType::BFLOAT16;
  int x = -1, w = -1;
  bool vec = false;   // 16-byte activation loads
  bool wvec = false;  // filters packed [C][R][S] with C % 8 == 0: vector filter loads
  bool strip_ok = false;
  DwParams params{};
  EpiloguePlan epi;
};

using conv::where;

bool describe(const Partition& p, Pieces& out, std::string& why) {
  const ir::Node* anchor = anchor_of<ConvFpropAttr>(p, "conv_fprop", why);
  if (!anchor) return false;
  const ir::Node& n = *anchor;
  const auto& attr = std::get<ConvFpropAttr>(n.attr);
  const ir::Tensor& X = p.tensor(n.inputs[0]);
  const ir::Tensor& W = p.tensor(n.inputs[1]);
  const ir::Tensor& Y = p.tensor(n.outputs[0]);
  const int64_t C = X.dims[1];
  if (W.dims[1] != 1 || W.dims[0] != C || Y.dims[1] != C) {
    why = where(n, W) + "not a depthwise convolution (needs groups == C == K, filters [C, 1, ...]); filters " +
          std::to_string(W.dims[0]) + "x" + std::to_string(W.dims[1]) + " for C=" + std::to_string(C);
    return false;
  }
  if (X.dtype != W.dtype ||
      (X.dtype != DataType::BFLOAT16 && X.dtype != DataType::HALF && X.dtype != DataType::FLOAT)) {
    why = where(n, X) + "inputs of type " + std::string(to_string(X.dtype)) + " x " + std::string(to_string(W.dtype)) +
          " are not supported (FLOAT, HALF or BFLOAT16, both the same)";
    return false;
  }
  if (X.strides[1] != 1) {
    why = where(n, X) + "channels are not contiguous (NHWC layout needed)";
    return false;
  }
  out.vec = C % 8 == 0;
  for (size_t i = 0; i < X.dims.size(); ++i)
    if (i != 1 && X.dims[i] > 1 && X.strides[i] % 8 != 0) out.vec = false;
  if (!conv::check_spatial_ints(n, attr, X, W, Y, why)) return false;
  DwParams& P = out.params;
  conv::fill_spatial(attr, X, W, Y, P);
  const size_t nsp = X.dims.size() - 2, off = 3 - nsp;
  for (size_t i = 0; i < 3; ++i) P.w_stride_tap[i] = i < off ? 0 : W.strides[2 + i - off];
  P.w_stride_c = W.strides[0];
  out.wvec = C % 8 == 0 && P.w_stride_c == int64_t{P.filt[1]} * P.filt[2] && P.w_stride_tap[1] == P.filt[2] &&
             (P.filt[2] == 1 || P.w_stride_tap[2] == 1);
  const int64_t strips_max = P.M / std::max(1, P.out[2]) * P.out[2];  // rows x Q: strips at strip=1
  out.strip_ok = P.filt[0] == 1 && P.filt[1] * P.filt[2] <= kMaxStripTaps && P.stride[2] <= 4 && P.dil[2] <= 4 &&
                 strips_max * ((C + 7) / 8) < (int64_t{1} << 30);
  out.dtype = X.dtype;
  out.x = X.id;
  out.w = W.id;
  return true;
}

EpilogueAxes output_axes(const Partition& p) {
  const ir::Node& anchor = p.graph->nodes[static_cast<size_t>(anchor_node(p))];
  return conv::pixel_channel_axes(p.tensor(anchor.outputs[0]).dims.size());
}

Status prepare(const Partition& p, const Target& t, Pieces& out) {
  if (!t.device().is_cuda() || !t.handle->cuda)
    return {ErrorCode::GRAPH_NOT_SUPPORTED, "runs on CUDA handles; this one is " + t.device().to_string()};
  std::string why;
  if (!describe(p, out, why)) return {ErrorCode::GRAPH_NOT_SUPPORTED, why};
  if (!plan_epilogue(p, output_axes(p), t.dynamic_shapes, out.epi, why))
    return {ErrorCode::GRAPH_NOT_SUPPORTED, "the epilogue does not fit: " + why};
  return {};
}

// kernels/conv_depthwise.cuh's configurations: the strip kernel's (strip > 0: outputs per item
// along W) and the per-pixel kernel's (strip 0: the filter sizes and strides are not used).
struct DepthwiseKernel {
  DataType dtype;
  bool vec_loads, vec_filters;
  int filter_h, filter_w, stride_w, dilation_w, strip;
};

std::string config_source(const DepthwiseKernel& k) {
  KernelConfigSource cs;
  cs.dtype("kDataType", k.dtype).flag("kVecLoads", k.vec_loads);
  if (k.strip > 0)
    cs.flag("kVecFilters", k.vec_filters)
        .value("kFilterH", k.filter_h)
        .value("kFilterW", k.filter_w)
        .value("kStrideW", k.stride_w)
        .value("kDilationW", k.dilation_w)
        .value("kStrip", k.strip);
  return cs.type("Epilogue", "dg_gen::Epilogue").str();
}

// strip > 0: the strip kernel with that many outputs per item (needs pc.strip_ok); 0: per pixel.
std::string source(const Pieces& pc, int strip, const ir::Graph& g) {
  std::ostringstream os;
  const DwParams& P = pc.params;
  os << "// Generated by dnngraph's cuda_conv_depthwise_direct engine.\n#include \"dg_math.cuh\"\n"
     << "#include \"conv_depthwise.cuh\"\n\n"
     << epilogue_source(pc.epi, g) << "\n"
     << config_source(DepthwiseKernel{pc.dtype, pc.vec, pc.wvec, P.filt[1], P.filt[2], P.stride[2], P.dil[2], strip})
     << "extern \"C\" __global__ void __launch_bounds__(" << (strip ? kStripThreads : kThreads) << ") " << kKernel
     << "(const dg::DwParams P, const dg::PointwiseParams p) {\n  dg::"
     << (strip ? "conv_depthwise_strip<" : "conv_depthwise<") << kKernelConfig << ">(P, p);\n}\n";
  os << finalize_source(pc.epi.L);
  return os.str();
}

// The engine's knob: output pixels per strip item along W, 0 for the per-pixel kernel.
struct DepthwiseKnobs {
  int64_t strip = -1;  // -1 (absent): 4 where the strip kernel applies, else 0
};

const KnobSchema<DepthwiseKnobs> kSchema{kName, {{"strip", &DepthwiseKnobs::strip, 0, 8}}};

int strip_of(const DepthwiseKnobs& k, const Pieces& pc) {
  return k.strip >= 0 ? static_cast<int>(k.strip) : pc.strip_ok ? 4 : 0;
}

class DepthwisePlan final : public KernelPlan {
 public:
  DepthwisePlan(const Partition& p, Pieces pc, int strip, KernelBuild k, int sms)
      : KernelPlan(p, std::move(k)), pc_(std::move(pc)), strip_(strip), sms_(sms) {}

  int64_t workspace_size() const override { return pc_.epi.L.workspace_bytes; }

  Status execute(const ExecArgs& args) const override {
    HandleImpl& h = args.handle;
    if (!h.device.is_cuda() || !h.cuda) return {ErrorCode::GRAPH_EXECUTION_FAILED, std::string(kName) + ": not a CUDA handle"};
    for (int id : {pc_.x, pc_.w})
      if (!args.ptrs[static_cast<size_t>(id)])
        return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + part_.tensor(id).name + "': the pointer is null"};
    if (pc_.vec && reinterpret_cast<uintptr_t>(args.ptrs[static_cast<size_t>(pc_.x)]) % 16 != 0)
      return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + part_.tensor(pc_.x).name +
                                                   "': the pointer is not 16-byte aligned, which this plan's vector "
                                                   "loads need"};
    if (strip_ && pc_.wvec && reinterpret_cast<uintptr_t>(args.ptrs[static_cast<size_t>(pc_.w)]) % 16 != 0)
      return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + part_.tensor(pc_.w).name +
                                                   "': the pointer is not 16-byte aligned, which this plan's vector "
                                                   "filter loads need"};
    codegen::PointwiseParams pp;
    int vec = 1;
    if (auto s = epilogue_params(part_, pc_.epi.L, args, pp, vec); !s.ok()) return s;
    DwParams P = pc_.params;
    P.x = args.ptrs[static_cast<size_t>(pc_.x)];
    P.w = args.ptrs[static_cast<size_t>(pc_.w)];
    P.epi_vec = vec;
    if (auto s = reset_reductions(h, pc_.epi.L, pp); !s.ok()) return s;
    // Keep each thread on one channel group: the grid stride is a multiple of the groups. The strip
    // kernel gets one resident wave (4 blocks of 128 per SM) so each thread's filter loads serve
    // several items.
    const int threads = strip_ ? kStripThreads : kThreads;
    const int64_t groups = (P.C + 7) / 8;
    const int64_t items = strip_ ? P.M / P.out[2] * ((P.out[2] + strip_ - 1) / strip_) : P.M;
    const int64_t per = groups / std::gcd<int64_t>(groups, threads);
    int64_t grid = std::min<int64_t>((items * groups + threads - 1) / threads, int64_t{sms_} * (strip_ ? 4 : 16));
    grid = std::max<int64_t>(1, (grid + per - 1) / per * per);
    void* kargs[] = {&P, &pp};
    if (auto s = cuda::launch_3d(h, k_.main, {static_cast<unsigned>(grid), 1, 1}, threads, 0, kargs, kKernel); !s.ok())
      return s;
    return run_finalize(h, pc_.epi.L, k_.finalize, pp);
  }

 private:
  Pieces pc_;
  int strip_;
  int sms_;
};

class DepthwiseDirectEngine final : public PreparedEngine<DepthwiseKnobs, Pieces, prepare> {
 public:
  DepthwiseDirectEngine() : PreparedEngine(kName, kSchema) {}

  // Strips of 4, 2 and 8 outputs where the strip kernel applies (the least padding along W first),
  // else the per-pixel kernel.
  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const override {
    Pieces pc;
    std::string why;
    if (!describe(p, pc, why) || !pc.strip_ok) return {schema_.print({0})};
    return ranked(p, t, {{4}, {2}, {8}});
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    // Memory bound: each input read about once (the taps overlap in cache), outputs written once.
    // Strips past the output's width compute padding; the per-pixel kernel reads every tap.
    DepthwiseKnobs knobs;
    if (!parse(k, knobs)) return 1e9;
    Pieces pc;
    std::string why;
    double waste = 1.0, eff = 0.6;
    if (describe(p, pc, why)) {
      const int strip = strip_of(knobs, pc);
      const int q = pc.params.out[2];
      if (strip > 0) waste = static_cast<double>((q + strip - 1) / strip * strip) / q;
      eff = strip >= 4 ? 0.6 : strip > 0 ? 0.5 : 0.2;
    }
    return roofline_seconds(partition_flops(p) * waste, partition_bytes(p) * waste, t.info(), eff, 4e-6);
  }

 private:
  Status make(const Partition& p, const Target& t, const Knobs& k, ByteReader* r,
              std::unique_ptr<Plan>& plan) const override {
    Pieces pc;
    if (auto s = prepare(p, t, pc); !s.ok()) return s;
    DepthwiseKnobs knobs;
    if (auto s = read_knobs(schema_, k, ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, knobs); !s.ok()) return s;
    const int strip = strip_of(knobs, pc);
    if (strip > 0 && !pc.strip_ok)
      return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
              std::string(kName) + ": knobs " + knobs_to_string(k) +
                  ": strip 1..8 needs a 2D/1D filter of at most 9 taps with W stride and dilation <= 4; 0 runs "
                  "the per-pixel kernel"};
    KernelBuild kb;
    kb.source = source(pc, strip, *p.graph);
    const bool fin = pc.epi.L.needs_finalize();
    if (auto s = compile_or_reload(t, r, kName, kKernel, 0, fin, kb); !s.ok()) return s;
    DG_LOG(DEBUG) << kName << ": strip=" << strip << " " << pc.epi.L.describe() << (pc.vec ? " vec" : "");
    plan = std::make_unique<DepthwisePlan>(p, std::move(pc), strip, std::move(kb), t.handle->cuda->multiprocessors);
    return {};
  }
};

}  // namespace

const Engine& conv_depthwise_direct_engine() { return engine_instance<DepthwiseDirectEngine>(); }

namespace conv {
// For the NVRTC compile test (no GPU): the depthwise kernel source of a partition.
bool depthwise_source_for_test(const Partition& p, int strip, std::string& src, std::string& why) {
  Pieces pc;
  if (!describe(p, pc, why)) return false;
  if (!plan_epilogue(p, output_axes(p), true, pc.epi, why)) return false;
  if (strip > 0 && !pc.strip_ok) {
    why = "the strip kernel does not apply to this filter";
    return false;
  }
  src = source(pc, strip, *p.graph);
  return true;
}
}  // namespace conv

}  // namespace dnngraph::cuda
