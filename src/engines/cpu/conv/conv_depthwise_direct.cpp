// cpu_conv_depthwise_direct: conv_fprop with groups == C == K (channel multiplier 1), 1D/2D/3D,
// any stride, dilation and padding. Channels-last inputs are walked pixel by pixel with the inner
// loop over channels (contiguous, vectorized); other layouts plane by plane with the inner loop
// over an output row. Each finished output row goes through the fused epilogue while in cache.
#include "engines/cpu/conv/conv_depthwise_direct.hpp"

#include <algorithm>

#include "engines/cpu/conv/conv_geometry.hpp"
#include "engines/cpu/gemm/pack.hpp"

namespace dnngraph::cpu {
namespace {

class DepthwisePlan final : public Plan {
 public:
  DepthwisePlan(const Partition& p, const Epilogue& epi) : part_(p), epi_(epi) {
    g_.init(*p.graph, p.graph->nodes[static_cast<size_t>(p.anchor)]);
  }

  Status execute(const ExecArgs& args) const override {
    ThreadPool& pool = args.handle.thread_pool();
    EpilogueRun run(epi_, args.ptrs, pool.size());
    const char* src = static_cast<const char*>(args.ptrs[static_cast<size_t>(g_.src)]);
    const char* wei = static_cast<const char*>(args.ptrs[static_cast<size_t>(g_.wei)]);
    // Weights as [tap][channel] fp32.
    const int64_t taps = g_.taps(), C = g_.src_c;
    std::vector<float> wt(static_cast<size_t>(taps * C));
    for (int64_t t = 0; t < taps; ++t)
      gemm::convert_run(wei + g_.wei_offset(0, 0, 0, t) * size_of(g_.wei_t), g_.wei_t, g_.wei_st[0], C,
                        wt.data() + t * C);
    const bool channels_last = g_.src_st[1] == 1;
    const int64_t rows = g_.n * g_.dst_sp[0] * g_.dst_sp[1];  // output rows (n, o0, o1)
    gemm::ThreadSlots slots(pool.size());
    pool.parallel_for(channels_last ? rows : rows * C, [&](int64_t b, int64_t e) {
      gemm::SlotGuard guard(slots);
      std::vector<float> acc, in;
      for (int64_t i = b; i < e; ++i) {
        if (channels_last) pixel_row(i, src, wt.data(), run, guard.slot(), acc, in);
        else plane_row(i / C, i % C, src, wt.data(), run, guard.slot(), acc, in);
      }
    });
    return run.finish();
  }

 private:
  // Source element offset of (n, channel 0) at spatial (p0, p1, p2); false if in padding.
  bool src_at(int64_t n, const int64_t* o, const int64_t* r, int64_t& off) const {
    off = n * g_.src_st[0];
    for (size_t d = 0; d < 3; ++d) {
      const int64_t p = o[d] * g_.stride[d] - g_.pad[d] + r[d] * g_.dil[d];
      if (p < 0 || p >= g_.src_sp[d]) return false;
      off += p * g_.src_st[2 + d];
    }
    return true;
  }

  // Channels-last: acc[ow][c] over taps for one output row, then one epilogue strip per pixel.
  void pixel_row(int64_t row, const char* src, const float* wt, EpilogueRun& run, int slot, std::vector<float>& acc,
                 std::vector<float>& in) const {
    const int64_t C = g_.src_c, OW = g_.dst_sp[2], es = size_of(g_.src_t);
    const int64_t n = row / (g_.dst_sp[0] * g_.dst_sp[1]);
    int64_t o[3] = {(row / g_.dst_sp[1]) % g_.dst_sp[0], row % g_.dst_sp[1], 0};
    acc.assign(static_cast<size_t>(OW * C), 0.0f);
    in.resize(static_cast<size_t>(C));
    int64_t r[3];
    for (r[0] = 0; r[0] < g_.ker[0]; ++r[0])
      for (r[1] = 0; r[1] < g_.ker[1]; ++r[1])
        for (r[2] = 0; r[2] < g_.ker[2]; ++r[2]) {
          const float* w = wt + ((r[0] * g_.ker[1] + r[1]) * g_.ker[2] + r[2]) * C;
          for (o[2] = 0; o[2] < OW; ++o[2]) {
            int64_t off;
            if (!src_at(n, o, r, off)) continue;
            const float* x;
            if (g_.src_t == DataType::FLOAT) {
              x = reinterpret_cast<const float*>(src) + off;
            } else {
              gemm::convert_run(src + off * es, g_.src_t, 1, C, in.data());
              x = in.data();
            }
            float* a = acc.data() + o[2] * C;
            for (int64_t c = 0; c < C; ++c) a[c] += x[c] * w[c];
          }
        }
    int64_t coord[5];
    for (o[2] = 0; o[2] < OW; ++o[2]) {
      g_.dst_coord(n, 0, o, coord);
      run.strip(slot, coord, 1, C, 1, acc.data() + o[2] * C);
    }
  }

  // Any layout: one channel's output row, acc[ow] over taps, then one strip along the row.
  void plane_row(int64_t row, int64_t c, const char* src, const float* wt, EpilogueRun& run, int slot,
                 std::vector<float>& acc, std::vector<float>& in) const {
    const int64_t C = g_.src_c, OW = g_.dst_sp[2], W = g_.src_sp[2], es = size_of(g_.src_t);
    const int64_t n = row / (g_.dst_sp[0] * g_.dst_sp[1]);
    int64_t o[3] = {(row / g_.dst_sp[1]) % g_.dst_sp[0], row % g_.dst_sp[1], 0};
    acc.assign(static_cast<size_t>(OW), 0.0f);
    in.resize(static_cast<size_t>(W));
    int64_t r[3];
    for (r[0] = 0; r[0] < g_.ker[0]; ++r[0])
      for (r[1] = 0; r[1] < g_.ker[1]; ++r[1]) {
        // The whole input row for (r0, r1), converted once; the w taps index into it.
        int64_t off = n * g_.src_st[0] + c * g_.src_st[1];
        bool inside = true;
        for (size_t d = 0; d < 2; ++d) {
          const int64_t p = o[d] * g_.stride[d] - g_.pad[d] + r[d] * g_.dil[d];
          inside &= p >= 0 && p < g_.src_sp[d];
          off += p * g_.src_st[2 + d];
        }
        if (!inside) continue;
        gemm::convert_run(src + off * es, g_.src_t, g_.src_st[4], W, in.data());
        for (r[2] = 0; r[2] < g_.ker[2]; ++r[2]) {
          const float w = wt[((r[0] * g_.ker[1] + r[1]) * g_.ker[2] + r[2]) * C + c];
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t iw = ow * g_.stride[2] - g_.pad[2] + r[2] * g_.dil[2];
            if (iw >= 0 && iw < W) acc[static_cast<size_t>(ow)] += in[static_cast<size_t>(iw)] * w;
          }
        }
      }
    int64_t coord[5];
    o[2] = 0;
    g_.dst_coord(n, c, o, coord);
    run.strip(slot, coord, 1 + g_.nsp, OW, 1, acc.data());
  }

  Partition part_;
  Epilogue epi_;
  ConvGeometry g_;
};

class DepthwiseEngine final : public Engine {
 public:
  std::string_view name() const override { return "cpu_conv_depthwise_direct"; }

  Support check(const Partition& p, const Target& t) const override {
    Epilogue epi;
    std::string why;
    return check_depthwise(p, t, epi, why) ? Support::yes() : Support::no(why);
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs&) const override {
    // Bandwidth-bound; the FMAs run at a fraction of peak (one multiply per loaded input).
    return roofline_seconds(partition_flops(p), 1.5 * partition_bytes(p), t.info(), 0.25, 5e-6);
  }

  Status build(const Partition& p, const Target& t, const Knobs&, std::unique_ptr<Plan>& plan) const override {
    Epilogue epi;
    std::string why;
    if (!check_depthwise(p, t, epi, why)) return {ErrorCode::GRAPH_NOT_SUPPORTED, "cpu_conv_depthwise_direct: " + why};
    plan = std::make_unique<DepthwisePlan>(p, epi);
    return {};
  }

 private:
  static bool check_depthwise(const Partition& p, const Target& t, Epilogue& epi, std::string& why) {
    const ir::Node* n = check_anchor(p, t, "conv_fprop", epi, why);
    if (!n) return false;
    ConvGeometry g;
    g.init(*p.graph, *n);
    if (!(g.groups == g.src_c && g.src_c == g.dst_c)) {
      why = "node '" + n->name + "': not depthwise (needs groups == C == K; groups=" + std::to_string(g.groups) +
            ", C=" + std::to_string(g.src_c) + ", K=" + std::to_string(g.dst_c) + ")";
      return false;
    }
    return true;
  }
};

}  // namespace

const Engine& conv_depthwise_direct_engine() {
  static const DepthwiseEngine kEngine;
  return kEngine;
}

}  // namespace dnngraph::cpu
